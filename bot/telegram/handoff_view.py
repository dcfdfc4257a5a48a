"""The handoff's words, and what operators read in their topic: the topic's name, the
brief and short notices.

The handoff declares its words here (`HANDOFF_WORDS` for customers, `OPERATOR_WORDS` for
operators; a shop's TEXTS_FILE rewords both by their keys). Operators are the shop's
staff, so their words are in the shop's language (DEFAULT_LANGUAGE), not the customer's,
as every staff word is. Everything a customer wrote is shown as plain
text (HTML-escaped), never interpreted as formatting. The topic name identifies the
customer by name and @username only — never a phone number.
"""

from __future__ import annotations

import html
from collections.abc import Mapping
from dataclasses import dataclass

from aiogram.types import User

from bot.telegram.formatting import Rendered
from bot.telegram.texts import Language
from services.handoff import HandoffBrief
from services.text_visibility import without_unsafe_controls

TOPIC_NAME_LIMIT = 128  # Telegram's limit for a forum topic name
BRIEF_LIMIT = 3900  # one Telegram message, with a margin
_QUOTE_LIMIT = 600  # characters of one earlier message in the brief


@dataclass(frozen=True, slots=True)
class HandoffWords:
    """What customers read of the handoff (in their language)."""

    operator_button: str
    handoff_started: str
    handoff_off_hours: str  # {hours} required, filled in per message
    handoff_already: str
    handoff_private_only: str
    handoff_closed: str
    handoff_not_relayed: str
    menu_operator: str

    def off_hours_for(self, hours: str) -> str:
        return self.handoff_off_hours.format(hours=hours)


HANDOFF_WORDS: Mapping[Language, HandoffWords] = {
    "ru": HandoffWords(
        operator_button="Позвать сотрудника",
        handoff_started=(
            "Передаю разговор сотруднику магазина — он ответит здесь, в этом чате. "
            "Пока разговор идёт с сотрудником, я не отвечаю."
        ),
        handoff_off_hours=(
            "Сотрудники магазина отвечают {hours}. Разговор им передан — вам ответят здесь, "
            "в этом чате, в рабочее время. Пока разговор идёт с сотрудником, я не отвечаю."
        ),
        handoff_already="Вы уже на связи с сотрудником магазина — просто напишите здесь.",
        handoff_private_only=(
            "Позвать сотрудника можно только в личном чате со мной — напишите мне напрямую."
        ),
        handoff_closed=(
            "Сотрудник магазина завершил разговор. Дальше снова отвечаю я, ИИ-ассистент. "
            "Позвать сотрудника ещё раз — /operator."
        ),
        handoff_not_relayed=(
            "Сотрудник видит текст, фото, документы и голосовые — это сообщение ему не передано. "
            "Напишите, пожалуйста, текстом."
        ),
        menu_operator="Позвать сотрудника магазина",
    ),
    "en": HandoffWords(
        operator_button="Talk to a person",
        handoff_started=(
            "I am passing the conversation to a person from the shop: they will answer here, "
            "in this chat. While you talk with them, I stay silent."
        ),
        handoff_off_hours=(
            "The shop's staff answer {hours}. The conversation has been passed to them: they "
            "will answer here, in this chat, during working hours. While you talk with them, "
            "I stay silent."
        ),
        handoff_already="You are already connected to a person from the shop: just write here.",
        handoff_private_only=(
            "You can ask for a person only in a private chat with me: please write to me directly."
        ),
        handoff_closed=(
            "The shop's staff member has ended the conversation. From now on I, the AI "
            "assistant, answer again. To call a person again, send /operator."
        ),
        handoff_not_relayed=(
            "The staff member sees text, photos, documents and voice messages: this message "
            "was not passed on. Please write it as text."
        ),
        menu_operator="Talk to a person",
    ),
}


@dataclass(frozen=True, slots=True)
class OperatorWords:
    """What operators read in their topic (in the shop's language)."""

    operator_title: str
    operator_source_command: str
    operator_source_button: str
    operator_source_model: str
    operator_reason: str
    operator_summary: str
    operator_last_messages: str
    operator_customer: str
    operator_bot: str
    operator_nothing_yet: str
    operator_how_to: str
    operator_closed: str
    operator_not_open: str
    operator_not_relayed: str
    operator_recreated: str

    def source(self, source: str) -> str:
        """Who asked for the person: the command, the button or the model."""
        by_source = {
            "command": self.operator_source_command,
            "button": self.operator_source_button,
            "model": self.operator_source_model,
        }
        return by_source.get(source, source)


OPERATOR_WORDS: Mapping[Language, OperatorWords] = {
    "ru": OperatorWords(
        operator_title="Клиент просит сотрудника",
        operator_source_command="команда /operator",
        operator_source_button="кнопка",
        operator_source_model="решение ИИ",
        operator_reason="Причина",
        operator_summary="Кратко о разговоре",
        operator_last_messages="Последние сообщения",
        operator_customer="Клиент",
        operator_bot="Бот",
        operator_nothing_yet="(разговора с ботом ещё не было)",
        operator_how_to=(
            "Ответы в этой теме получит клиент (текст, фото, документы). "
            "/close или закрытие темы — завершить, дальше снова отвечает ИИ."
        ),
        operator_closed=(
            "Разговор завершён, клиенту сообщено; дальше отвечает ИИ. Тема сохранена."
        ),
        operator_not_open=(
            "Сейчас разговор с клиентом не открыт — это сообщение клиенту не передано. "
            "Он откроется, когда клиент снова позовёт сотрудника."
        ),
        operator_not_relayed=(
            "Клиенту передаются только текст, фото и документы — это сообщение не передано."
        ),
        operator_recreated="Тема была удалена и создана заново.",
    ),
    "en": OperatorWords(
        operator_title="A customer asks for a person",
        operator_source_command="the /operator command",
        operator_source_button="the button",
        operator_source_model="the AI",
        operator_reason="Reason",
        operator_summary="Summary",
        operator_last_messages="Last messages",
        operator_customer="Customer",
        operator_bot="Bot",
        operator_nothing_yet="(no conversation with the bot yet)",
        operator_how_to=(
            "Replies in this topic go to the customer (text, photos, documents). "
            "/close or closing the topic ends it; then the AI answers again."
        ),
        operator_closed=(
            "Handoff closed; the customer was told and the AI answers again. Topic kept."
        ),
        operator_not_open=(
            "No handoff is open with this customer: this message was not passed on. "
            "It opens when the customer asks for a person again."
        ),
        operator_not_relayed=(
            "Only text, photos and documents go to the customer: this one was not passed on."
        ),
        operator_recreated="The topic had been deleted and was created again.",
    ),
}


def topic_name(user: User | None, chat_id: int) -> str:
    """ "Anna Petrova @anna" — how operators recognise the customer (no phone)."""
    if user is None:
        return f"#{chat_id}"
    parts = [without_unsafe_controls(p) for p in (user.first_name, user.last_name or "")]
    name = " ".join(p.strip() for p in parts if p and p.strip()) or f"#{chat_id}"
    if user.username:
        name = f"{name} @{user.username}"
    return name[:TOPIC_NAME_LIMIT]


def _quote(text: str) -> str:
    text = " ".join(text.split())
    return text if len(text) <= _QUOTE_LIMIT else text[: _QUOTE_LIMIT - 1] + "…"


def render_brief(brief: HandoffBrief, w: OperatorWords) -> Rendered:
    """The first post of a handoff: why, the summary, the last exchanges (plain text)."""
    lines = [f"🙋 {w.operator_title} ({w.source(brief.source)})"]
    if brief.reason:
        lines.append(f"{w.operator_reason}: {_quote(brief.reason)}")
    if brief.summary:
        lines += ["", f"{w.operator_summary}: {_quote(brief.summary)}"]
    lines += ["", f"{w.operator_last_messages}:"]
    if not brief.exchanges:
        lines.append(w.operator_nothing_yet)
    for exchange in brief.exchanges:
        lines.append(f"— {w.operator_customer}: {_quote(exchange.customer)}")
        lines.append(f"— {w.operator_bot}: {_quote(exchange.answer)}")
    lines += ["", w.operator_how_to]
    return plain("\n".join(lines)[:BRIEF_LIMIT])


def plain(text: str) -> Rendered:
    """Text shown exactly as written (no formatting interpreted)."""
    return Rendered(html.escape(text, quote=False), text)
