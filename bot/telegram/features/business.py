"""Business mode as one feature: the bot answers in the chats of the owner's own Telegram
account (Telegram Business, "Chat Automation" in the app's settings). BUSINESS_ENABLED.

Its settings group (`BusinessSettings`), its words (ru/en: the owner's notices, the
draft card, the customer's phone hint), its router (bot/telegram/routers/business.py), the
signal that stops a running turn when the owner writes, and its /stats block (questions
by channel) are declared here; the decisions are services/business.py's. Nothing of it
in a turn's tools or prompt: a customer in the owner's chat gets the same tools, memory,
limits and identity rules as in the bot's own chat.
"""

from __future__ import annotations

from typing import Annotated, Any

from pydantic import Field, field_validator
from pydantic_settings import NoDecode

from bot.runtime.config import FeatureSettings
from bot.runtime.languages import Language
from bot.telegram.context import HandlerDeps
from bot.telegram.features import Feature, FeatureRouters
from bot.telegram.features.catalog import Needs, TelegramFeatureSpec, TelegramNeeds, on
from bot.telegram.routers.business import (
    BusinessWords,
    build_business_router,
    build_owner_router,
    stats_section,
    stored_signal,
)
from services.business import BusinessService
from storage.business import BusinessRepository


class BusinessSettings(FeatureSettings):
    """BUSINESS_ENABLED; BUSINESS_OWNER_IDS (the accounts whose chats are answered;
    empty: ADMIN_IDS); BUSINESS_PAUSE_HOURS (silence after the owner writes by hand);
    BUSINESS_APPROVAL (new connections start in approval mode)."""

    business_enabled: bool = False
    business_owner_ids: Annotated[frozenset[int], NoDecode] = frozenset()
    business_pause_hours: float = Field(default=3.0, gt=0, le=720)
    business_approval: bool = False

    @field_validator("business_owner_ids", mode="before")
    @classmethod
    def _parse_ids(cls, value: Any) -> Any:
        if isinstance(value, str):
            try:
                return frozenset(int(item) for item in value.split(",") if item.strip())
            except ValueError:
                raise ValueError(
                    "expected comma-separated Telegram user ids, e.g. 123,456"
                ) from None
        return value


WORDS: dict[Language, dict[str, str]] = {
    "ru": {
        "connected": (
            "Подключено: я отвечаю клиентам в ваших чатах. Напишите клиенту сами — и я "
            "замолчу в этом чате на {hours} ч. /ai on — вернуть мне ответы, "
            "/ai approval on — сначала присылать ответы вам."
        ),
        "disconnected": "Отключено: я больше не отвечаю в ваших чатах.",
        "reply_revoked": (
            "Telegram больше не разрешает мне отвечать в ваших чатах, и я молчу. Включите "
            "право «Отвечать на сообщения»: Настройки → Telegram для бизнеса → Чат-боты."
        ),
        "reply_granted": "Снова могу отвечать в ваших чатах.",
        "paused": (
            "Вы ответили в чате с {name} — я молчу там {hours} ч. Вернуть ответы: "
            "кнопка ниже или /ai on."
        ),
        "owner_asked": (
            "{name} просит живого человека ({reason}). Я молчу в этом чате {hours} ч — "
            "ответьте там сами. Вернуть ответы: кнопка ниже или /ai on."
        ),
        "owner_will_answer": "Владелец ответит вам здесь, в этом чате.",
        "give_back": "🤖 Вернуть ответы бота",
        "given_back": "Готово: снова отвечаю (чатов: {count}).",
        "ai_usage": (
            "/ai on — снова отвечать во всех ваших чатах; /ai approval on — присылать "
            "ответы вам на одобрение; /ai approval off — отвечать сразу."
        ),
        "approval_on": "Теперь присылаю ответы вам: «Отправить», «Изменить» или «Удалить».",
        "approval_off": "Теперь отвечаю клиентам сразу.",
        "no_connection": "Бот не подключён к вашему аккаунту: Настройки → Telegram для бизнеса.",
        "draft": "Черновик ответа для {name}:\n\n{text}",
        "draft_action": (
            "⚠️ С ответом уйдёт карточка действия (выше) с ✅/✖ для клиента: в магазине "
            "ничего не изменится, пока клиент не нажмёт ✅. «Отправить» и «Изменить» "
            "отправят и её, «Удалить» её отменит."
        ),
        "send": "Отправить",
        "edit": "Изменить",
        "discard": "Удалить",
        "draft_dropped": "{name} удалил(а) своё сообщение — черновик ответа на него удалён.",
        "sent": "Отправлено.",
        "discarded": "Удалено.",
        "edit_prompt": "Пришлите исправленный текст следующим сообщением — я отправлю его.",
        "too_old": "Поздно: прошло больше 24 часов, Telegram не даёт ответить.",
        "decided": "Уже решено.",
        "customer_phone_hint": (
            "_Чтобы я видел ваши заказы, подтвердите номер в чате с ботом @{bot}: /phone._"
        ),
        "stats_title": "ВОПРОСЫ ПО КАНАЛАМ",
        "stats_bot": "в чате с ботом",
        "stats_owner": "в ваших чатах",
    },
    "en": {
        "connected": (
            "Connected: I answer customers in your chats. Write to a customer yourself and "
            "I stay silent in that chat for {hours} h. /ai on gives the answers back to me, "
            "/ai approval on sends my answers to you first."
        ),
        "disconnected": "Disconnected: I no longer answer in your chats.",
        "reply_revoked": (
            "Telegram no longer lets me reply in your chats, so I stay silent. Turn on "
            "'Reply to messages': Settings → Telegram Business → Chatbots."
        ),
        "reply_granted": "I can reply in your chats again.",
        "paused": (
            "You answered in the chat with {name}, so I stay silent there for {hours} h. "
            "To give it back: the button below or /ai on."
        ),
        "owner_asked": (
            "{name} asks for a person ({reason}). I stay silent in that chat for {hours} h: "
            "please answer there. To give it back: the button below or /ai on."
        ),
        "owner_will_answer": "The owner will answer you here, in this chat.",
        "give_back": "🤖 Give it back to the bot",
        "given_back": "Done: I answer again (chats: {count}).",
        "ai_usage": (
            "/ai on — answer again in all your chats; /ai approval on — send my answers to "
            "you for approval; /ai approval off — answer at once."
        ),
        "approval_on": "From now on I send my answers to you: Send, Edit or Discard.",
        "approval_off": "From now on I answer customers at once.",
        "no_connection": "The bot is not connected to your account: Settings → Telegram Business.",
        "draft": "Draft answer for {name}:\n\n{text}",
        "draft_action": (
            "⚠️ The action card (above) goes with it, with ✅/✖ for the customer: nothing "
            "changes in the shop until they press ✅. Send and Edit post it too; Discard "
            "withdraws it."
        ),
        "send": "Send",
        "edit": "Edit",
        "discard": "Discard",
        "draft_dropped": "{name} deleted their message, so the draft answering it is dropped.",
        "sent": "Sent.",
        "discarded": "Discarded.",
        "edit_prompt": "Send the corrected text as your next message and I will post it.",
        "too_old": "Too late: more than 24 hours have passed, Telegram does not allow a reply.",
        "decided": "Already decided.",
        "customer_phone_hint": (
            "_To let me see your orders, verify your number in the chat with @{bot}: /phone._"
        ),
        "stats_title": "QUESTIONS BY CHANNEL",
        "stats_bot": "in the bot's chat",
        "stats_owner": "in your own chats",
    },
}


def business_on_telegram(
    needs: Needs, telegram: TelegramNeeds, _own: None, conf: BusinessSettings
) -> Feature:
    owners = conf.business_owner_ids or needs.settings.admin_ids
    service = BusinessService(
        BusinessRepository(needs.db),
        owners=owners,
        pause_s=conf.business_pause_hours * 3600,
        approval=conf.business_approval,
    )
    words = BusinessWords(WORDS, pause_hours=conf.business_pause_hours)

    def routers(deps: HandlerDeps) -> FeatureRouters:
        return FeatureRouters(
            first=(
                build_business_router(deps, service, words),
                build_owner_router(deps, service, words),
            )
        )

    return Feature(
        name="business",
        routers=routers,
        on_stored=stored_signal(service),
        stats_sections=(stats_section(service, words),),
    )


BUSINESS: TelegramFeatureSpec[None, BusinessSettings] = TelegramFeatureSpec(
    name="business",
    chat=lambda _needs, conf: on(conf.business_enabled),
    telegram=business_on_telegram,
    settings=BusinessSettings,
    words=WORDS,
    turned_on={"business_enabled": True},
)
