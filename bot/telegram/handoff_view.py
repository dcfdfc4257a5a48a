"""What operators read in their topic: the topic's name, the brief and short notices.

Operators are the shop's staff, so their words are in the shop's language
(DEFAULT_LANGUAGE), not the customer's. Everything a customer wrote is shown as plain
text (HTML-escaped), never interpreted as formatting. The topic name identifies the
customer by name and @username only — never a phone number.
"""

from __future__ import annotations

import html
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
class OperatorWords:
    title: str
    sources: dict[str, str]
    reason: str
    summary: str
    last_messages: str
    customer: str
    bot: str
    nothing_yet: str
    how_to: str
    closed: str
    not_open: str
    not_relayed: str
    recreated: str


_WORDS: dict[Language, OperatorWords] = {
    "ru": OperatorWords(
        title="Клиент просит сотрудника",
        sources={"command": "команда /operator", "button": "кнопка", "model": "решение ИИ"},
        reason="Причина",
        summary="Кратко о разговоре",
        last_messages="Последние сообщения",
        customer="Клиент",
        bot="Бот",
        nothing_yet="(разговора с ботом ещё не было)",
        how_to=(
            "Ответы в этой теме получит клиент (текст, фото, документы). "
            "/close или закрытие темы — завершить, дальше снова отвечает ИИ."
        ),
        closed="Разговор завершён, клиенту сообщено; дальше отвечает ИИ. Тема сохранена.",
        not_open=(
            "Сейчас разговор с клиентом не открыт — это сообщение клиенту не передано. "
            "Он откроется, когда клиент снова позовёт сотрудника."
        ),
        not_relayed=(
            "Клиенту передаются только текст, фото и документы — это сообщение не передано."
        ),
        recreated="Тема была удалена и создана заново.",
    ),
    "en": OperatorWords(
        title="A customer asks for a person",
        sources={"command": "the /operator command", "button": "the button", "model": "the AI"},
        reason="Reason",
        summary="Summary",
        last_messages="Last messages",
        customer="Customer",
        bot="Bot",
        nothing_yet="(no conversation with the bot yet)",
        how_to=(
            "Replies in this topic go to the customer (text, photos, documents). "
            "/close or closing the topic ends it; then the AI answers again."
        ),
        closed="Handoff closed; the customer was told and the AI answers again. Topic kept.",
        not_open=(
            "No handoff is open with this customer: this message was not passed on. "
            "It opens when the customer asks for a person again."
        ),
        not_relayed=(
            "Only text, photos and documents go to the customer: this one was not passed on."
        ),
        recreated="The topic had been deleted and was created again.",
    ),
}


def operator_words(language: Language) -> OperatorWords:
    return _WORDS[language]


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


def render_brief(brief: HandoffBrief, language: Language) -> Rendered:
    """The first post of a handoff: why, the summary, the last exchanges (plain text)."""
    w = _WORDS[language]
    lines = [f"🙋 {w.title} ({w.sources.get(brief.source, brief.source)})"]
    if brief.reason:
        lines.append(f"{w.reason}: {_quote(brief.reason)}")
    if brief.summary:
        lines += ["", f"{w.summary}: {_quote(brief.summary)}"]
    lines += ["", f"{w.last_messages}:"]
    if not brief.exchanges:
        lines.append(w.nothing_yet)
    for exchange in brief.exchanges:
        lines.append(f"— {w.customer}: {_quote(exchange.customer)}")
        lines.append(f"— {w.bot}: {_quote(exchange.answer)}")
    lines += ["", w.how_to]
    return plain("\n".join(lines)[:BRIEF_LIMIT])


def plain(text: str) -> Rendered:
    """Text shown exactly as written (no formatting interpreted)."""
    return Rendered(html.escape(text, quote=False), text)
