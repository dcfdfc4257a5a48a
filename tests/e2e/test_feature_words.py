"""The features' own words through the real process: a shop's TEXTS_FILE rewords a
handoff word, an action word and an order-update word, and the customer reads the shop's
wording; the staff (the request card, its buttons, the notes after a press, the
operators' brief) read the shop's DEFAULT_LANGUAGE whatever the customer's language."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from bot.telegram.action_words import ACTION_STAFF_WORDS, ACTION_WORDS
from bot.telegram.handoff_view import HANDOFF_WORDS, OPERATOR_WORDS
from bot.telegram.texts import LANGUAGES, Language
from tests.e2e.chat_helpers import WAIT_S, StartBot, seen_text
from tests.e2e.test_actions import CUSTOMER, MINE, MINE_TOO, card_buttons, setup
from tests.fakes.openai_server import FakeOpenAIServer
from tests.fakes.telegram_server import (
    FakeTelegramServer,
    SentMessage,
    callback_update,
    message_update,
)

OPERATORS = -1001700
OPERATOR_USER = 9101

TEXTS = """
[ru]
handoff_started = "Зову человека из «Кофейного двора» — он ответит здесь."
action_declined = "Поняли: заказ оставляем как есть."
order_updates_subscribed = "Следим за заказом {order} и напишем, когда он сдвинется."
"""


async def next_to(
    telegram: FakeTelegramServer, chat: int, update: dict[str, Any], count: int = 1
) -> list[SentMessage]:
    """Send `update`; the next `count` messages to `chat`."""
    before = len(telegram.messages_to(chat))
    telegram.enqueue_update(update)
    messages = await telegram.wait_for_messages(chat, before + count, within=WAIT_S)
    return messages[before : before + count]


def buttons(message: SentMessage) -> list[dict[str, Any]]:
    rows = (message.reply_markup or {}).get("inline_keyboard") or []
    return [b for row in rows for b in row]


def press(chat: int, message: SentMessage, data: str, language: str, user: int) -> dict[str, Any]:
    return callback_update(
        chat, data=data, message_id=message.message_id, user_id=user, language_code=language
    )


async def test_a_texts_file_rewords_the_features_words_customers_read(
    start_bot: StartBot,
    bot_base_env: dict[str, str],
    tmp_path: Path,
    fake_telegram: FakeTelegramServer,
    fake_openai: FakeOpenAIServer,
) -> None:
    (tmp_path / "texts.toml").write_text(TEXTS, encoding="utf-8")
    fake_telegram.add_forum(OPERATORS)
    await setup(
        start_bot,
        bot_base_env,
        tmp_path,
        fake_openai,
        TEXTS_FILE="texts.toml",
        ORDER_UPDATES_ENABLED="true",
        OPERATOR_CHAT_ID=str(OPERATORS),
    )

    # an action: ✖ on the card, the shop's words for "nothing changed"
    [card] = await next_to(
        fake_telegram, CUSTOMER, message_update(CUSTOMER, text=f"Отмените заказ {MINE}")
    )
    decline = card_buttons(card)[1]["callback_data"]
    [declined] = await next_to(
        fake_telegram, CUSTOMER, press(CUSTOMER, card, decline, "ru", CUSTOMER)
    )
    assert seen_text(declined.text) == "Поняли: заказ оставляем как есть."

    # order updates: the "notify me" press, the shop's words with the order's number
    [answer] = await next_to(
        fake_telegram, CUSTOMER, message_update(CUSTOMER, text=f"Где заказ {MINE_TOO}?")
    )
    [notify] = [b for b in buttons(answer) if b["callback_data"].startswith("ou:")]
    [subscribed] = await next_to(
        fake_telegram, CUSTOMER, press(CUSTOMER, answer, notify["callback_data"], "ru", CUSTOMER)
    )
    assert (
        seen_text(subscribed.text) == f"Следим за заказом {MINE_TOO} и напишем, когда он сдвинется."
    )

    # the handoff: /operator, the shop's words; a word left out keeps the built-in one
    [notice] = await next_to(fake_telegram, CUSTOMER, message_update(CUSTOMER, text="/operator"))
    assert seen_text(notice.text) == "Зову человека из «Кофейного двора» — он ответит здесь."
    assert seen_text(notice.text) != HANDOFF_WORDS["ru"].handoff_started


def other(language: Language) -> Language:
    return next(lang for lang in LANGUAGES if lang != language)


@pytest.mark.parametrize("shop_language", ["ru", "en"])
async def test_the_staff_read_the_shops_language_and_the_customer_their_own(
    shop_language: Language,
    start_bot: StartBot,
    bot_base_env: dict[str, str],
    tmp_path: Path,
    fake_telegram: FakeTelegramServer,
    fake_openai: FakeOpenAIServer,
) -> None:
    """A Russian shop's staff get the request card, its buttons, the note after their
    press and the operators' brief in Russian while the customer reads English (and the
    other way round)."""
    customer = other(shop_language)
    staff = ACTION_STAFF_WORDS[shop_language]
    fake_telegram.add_forum(OPERATORS)
    await setup(
        start_bot,
        bot_base_env,
        tmp_path,
        fake_openai,
        DEFAULT_LANGUAGE=shop_language,
        OPERATOR_CHAT_ID=str(OPERATORS),  # requests go to the operators' group
    )

    [card] = await next_to(
        fake_telegram,
        CUSTOMER,
        message_update(CUSTOMER, text=f"Отмените заказ {MINE}", language_code=customer),
    )
    confirm = card_buttons(card)[0]["callback_data"]
    [requested] = await next_to(
        fake_telegram, CUSTOMER, press(CUSTOMER, card, confirm, customer, CUSTOMER)
    )
    assert seen_text(requested.text) == ACTION_WORDS[customer].action_requested

    [request] = await fake_telegram.wait_for_messages(OPERATORS, 1, within=WAIT_S)
    assert request.plain_text.startswith(staff.staff_request_card.split("{", 1)[0])
    assert f"{MINE}" in request.plain_text
    done, refuse = (b for b in buttons(request) if b["callback_data"].startswith("req:"))
    assert (done["text"], refuse["text"]) == (staff.staff_done_button, staff.staff_refuse_button)

    [recorded] = await next_to(
        fake_telegram,
        OPERATORS,
        press(OPERATORS, request, done["callback_data"], customer, OPERATOR_USER),
    )
    assert recorded.plain_text == staff.for_order("staff_recorded_done", MINE)
    [_, _, told] = await fake_telegram.wait_for_messages(CUSTOMER, 3, within=WAIT_S)
    cancelled = {"ru": f"Заказ {MINE} отменён.", "en": f"Order {MINE} is cancelled."}
    assert seen_text(told.text) == cancelled[customer]

    # the handoff: the customer's notice in their language, the brief in the shop's
    [notice] = await next_to(
        fake_telegram, CUSTOMER, message_update(CUSTOMER, text="/operator", language_code=customer)
    )
    assert seen_text(notice.text) == HANDOFF_WORDS[customer].handoff_started
    [(_, topic)] = [key for key in fake_telegram.topics if key[0] == OPERATORS]
    await fake_telegram.wait_until(lambda: bool(fake_telegram.messages_in_topic(OPERATORS, topic)))
    [brief] = fake_telegram.messages_in_topic(OPERATORS, topic)
    assert brief.plain_text.startswith(f"🙋 {OPERATOR_WORDS[shop_language].operator_title}")
