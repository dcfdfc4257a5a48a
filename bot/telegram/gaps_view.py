"""The words and buttons of /gaps and of a conversation an admin reads (/chat).

The gaps report is one message: each group of questions the bot could not answer, its
count and two masked wordings, with a button to read the conversation of its latest
question (and "Answer this" when the knowledge base can take an answer). A conversation
is one message per page: who said what and when (in STATS_TIMEZONE), the tool calls of
each turn as a short line, and "◀ older" while there is more. Every button's data is a
`CallbackData` read strictly; the router checks the presser is an admin.
"""

from __future__ import annotations

import html
import re
from datetime import datetime, tzinfo
from typing import Self, TypeVar

from aiogram.filters.callback_data import CallbackData
from aiogram.types import InlineKeyboardButton, InlineKeyboardMarkup

from bot.telegram.texts import Language
from services.gaps import ConversationPage, GapsReport
from services.handoff import OPERATOR_PREFIX
from storage.outcomes import ConversationLine

_TURN_ID = re.compile(r"[0-9a-f]{32}")
MAX_LINE = 400  # characters of one message shown in a page
MESSAGE_LIMIT = 3800

GAPS_WORDS: dict[Language, dict[str, str]] = {
    "en": {
        "menu_gaps": "Questions the bot could not answer",
        "menu_chat": "Read a customer's conversation",
        "gaps_title": "Questions the bot could not answer, {period}: {total}",
        "gaps_none": "No unanswered questions {period}. 🎉",
        "gaps_group": "{n}. Asked {count} times by {chats} customers",
        "gaps_more": "…and {n} more groups asked once or twice.",
        "gaps_usage": "Usage: /gaps [24h|7d|30d|all] (default 7d)",
        "gaps_hint": "Answer a group and the bot knows it from the next question.",
        "gaps_read": "💬 Read #{n}",
        "gaps_answer": "✍️ Answer #{n}",
        "gaps_digest": "Weekly: what the bot could not answer",
        "gaps_stats": "/gaps — {n} questions not answered",
        "chat_usage": "Usage: /chat <customer's chat id> (from /gaps or the operators' topic)",
        "chat_unknown": "The bot has no conversation with chat {chat}.",
        "chat_title": "Conversation with chat {chat}",
        "chat_empty": "(no messages)",
        "chat_older": "◀ Older",
        "chat_newest": "Newest ▶",
        "who_user": "👤",
        "who_bot": "🤖",
        "who_operator": "🧑‍💼",
        "who_tool": "🔧",
        "period_24h": "in the last 24 hours",
        "period_7d": "in the last 7 days",
        "period_30d": "in the last 30 days",
        "period_all": "of all time",
        "answer_prompt": (
            "✍️ Write the answer to «{question}» in your next message here. It becomes the "
            "shop's answer at once; /cancel to stop."
        ),
        "answer_added": (
            "✅ Added to the shop's answers: «{question}». The bot uses it from the next question."
        ),
        "answer_cancelled": "Nothing was added.",
        "answer_gone": "That question is no longer stored.",
        "draft_title": "📝 A draft for the shop's answers, from what an operator told a customer:",
        "draft_question": "Question: {question}",
        "draft_answer": "Answer: {answer}",
        "draft_add": "✅ Add",
        "draft_edit": "✏️ Edit",
        "draft_skip": "✖ Skip",
        "draft_added": "✅ Added to the shop's answers: «{question}».",
        "draft_skipped": "✖ Skipped; nothing was added.",
        "draft_decided": "This draft was decided already.",
        "draft_edit_prompt": (
            "✏️ Write the answer to «{question}» as it should be, in your next message; "
            "/cancel to stop."
        ),
    },
    "ru": {
        "menu_gaps": "Вопросы, на которые бот не ответил",
        "menu_chat": "Прочитать разговор с покупателем",
        "gaps_title": "Вопросы без ответа {period}: {total}",
        "gaps_none": "Вопросов без ответа {period} нет. 🎉",
        "gaps_group": "{n}. Спросили {count} раз, покупателей: {chats}",
        "gaps_more": "…и ещё групп: {n} (по одному-два вопроса).",
        "gaps_usage": "Использование: /gaps [24h|7d|30d|all] (по умолчанию 7d)",
        "gaps_hint": "Ответьте на группу — бот будет знать ответ со следующего вопроса.",
        "gaps_read": "💬 Переписка №{n}",
        "gaps_answer": "✍️ Ответить №{n}",
        "gaps_digest": "За неделю: на что бот не смог ответить",
        "gaps_stats": "/gaps — вопросов без ответа: {n}",
        "chat_usage": "Использование: /chat <id чата покупателя> (из /gaps или темы операторов)",
        "chat_unknown": "У бота нет переписки с чатом {chat}.",
        "chat_title": "Переписка с чатом {chat}",
        "chat_empty": "(сообщений нет)",
        "chat_older": "◀ Раньше",
        "chat_newest": "Новые ▶",
        "who_user": "👤",
        "who_bot": "🤖",
        "who_operator": "🧑‍💼",
        "who_tool": "🔧",
        "period_24h": "за 24 часа",
        "period_7d": "за 7 дней",
        "period_30d": "за 30 дней",
        "period_all": "за всё время",
        "answer_prompt": (
            "✍️ Напишите ответ на «{question}» следующим сообщением. Он сразу станет ответом "
            "магазина; /cancel — отменить."
        ),
        "answer_added": (
            "✅ Добавлено в ответы магазина: «{question}». Бот отвечает так со следующего вопроса."
        ),
        "answer_cancelled": "Ничего не добавлено.",
        "answer_gone": "Этого вопроса больше нет в базе.",
        "draft_title": "📝 Черновик ответа магазина — из того, что оператор сказал покупателю:",
        "draft_question": "Вопрос: {question}",
        "draft_answer": "Ответ: {answer}",
        "draft_add": "✅ Добавить",
        "draft_edit": "✏️ Изменить",
        "draft_skip": "✖ Пропустить",
        "draft_added": "✅ Добавлено в ответы магазина: «{question}».",
        "draft_skipped": "✖ Пропущено, ничего не добавлено.",
        "draft_decided": "По этому черновику уже решили.",
        "draft_edit_prompt": (
            "✏️ Напишите ответ на «{question}» так, как нужно, следующим сообщением; "
            "/cancel — отменить."
        ),
    },
}


def words(language: Language) -> dict[str, str]:
    return GAPS_WORDS[language]


Button = TypeVar("Button", bound=CallbackData)


def _strict(cls: type[Button], data: str | None) -> Button | None:
    """The button's data exactly as we write it (Telegram returns whatever a client
    sends); None for anything else."""
    try:
        button = cls.unpack(data or "")
    except (TypeError, ValueError):  # pydantic's ValidationError is a ValueError
        return None
    return button if button.pack() == data else None


class GapButton(CallbackData, prefix="gap"):
    """A gap group's button: `r` read the conversation of its latest question, `a`
    answer it; `key` is the turn id of the group's first question."""

    action: str
    key: str

    @classmethod
    def read(cls, data: str | None) -> Self | None:
        button = _strict(cls, data)
        if button is None or button.action not in ("r", "a"):
            return None
        return button if _TURN_ID.fullmatch(button.key) else None


class ChatPageButton(CallbackData, prefix="cv"):
    """A page of chat `chat`'s conversation before message `before` (0: the newest)."""

    chat: int
    before: int

    @classmethod
    def read(cls, data: str | None) -> Self | None:
        button = _strict(cls, data)
        return button if button is not None and button.before >= 0 else None


class DraftButton(CallbackData, prefix="qa"):
    """Under a draft from an operator's answer: `a` add, `e` edit, `s` skip."""

    draft: int
    action: str

    @classmethod
    def read(cls, data: str | None) -> Self | None:
        button = _strict(cls, data)
        if button is None or button.action not in ("a", "e", "s"):
            return None
        return button if button.draft > 0 else None


def render_draft(
    draft_id: int, question: str, answer: str, language: Language
) -> tuple[str, InlineKeyboardMarkup]:
    """A draft for the admins as (HTML, buttons)."""
    w = words(language)
    text = "\n\n".join(
        [
            w["draft_title"],
            w["draft_question"].format(question=question),
            w["draft_answer"].format(answer=answer),
        ]
    )
    row = [
        InlineKeyboardButton(
            text=w[f"draft_{name}"], callback_data=DraftButton(draft=draft_id, action=key).pack()
        )
        for name, key in (("add", "a"), ("edit", "e"), ("skip", "s"))
    ]
    return html.escape(text, quote=False), InlineKeyboardMarkup(inline_keyboard=[row])


def render_gaps(
    report: GapsReport, language: Language, *, answerable: bool
) -> tuple[str, str, InlineKeyboardMarkup | None]:
    """The report as (HTML, plain text, buttons)."""
    w = words(language)
    period = w[f"period_{report.period}"]
    if not report.groups:
        text = w["gaps_none"].format(period=period)
        return html.escape(text, quote=False), text, None
    lines = [w["gaps_title"].format(period=period, total=report.total), ""]
    rows: list[list[InlineKeyboardButton]] = []
    for n, group in enumerate(report.groups, start=1):
        lines.append(w["gaps_group"].format(n=n, count=group.count, chats=group.chats))
        lines.extend(f"   «{wording}»" for wording in group.wordings)
        row = [
            InlineKeyboardButton(
                text=w["gaps_read"].format(n=n),
                callback_data=GapButton(action="r", key=group.key).pack(),
            )
        ]
        if answerable:
            row.append(
                InlineKeyboardButton(
                    text=w["gaps_answer"].format(n=n),
                    callback_data=GapButton(action="a", key=group.key).pack(),
                )
            )
        rows.append(row)
    if report.more_groups:
        lines.extend(["", w["gaps_more"].format(n=report.more_groups)])
    if answerable:
        lines.extend(["", w["gaps_hint"]])
    plain = "\n".join(lines)[:MESSAGE_LIMIT]
    return html.escape(plain, quote=False), plain, InlineKeyboardMarkup(inline_keyboard=rows)


def render_page(
    page: ConversationPage, language: Language, tz: tzinfo
) -> tuple[str, str, InlineKeyboardMarkup | None]:
    """One page of a conversation as (HTML, plain text, buttons)."""
    w = words(language)
    lines = [w["chat_title"].format(chat=page.chat_id), ""]
    if not page.lines:
        lines.append(w["chat_empty"])
    for line in page.lines:
        lines.append(_line(line, w, tz))
    plain = "\n".join(lines)
    if len(plain) > MESSAGE_LIMIT:
        plain = "…" + plain[-MESSAGE_LIMIT:]
    row = []
    if page.older is not None:
        row.append(
            InlineKeyboardButton(
                text=w["chat_older"],
                callback_data=ChatPageButton(chat=page.chat_id, before=page.older).pack(),
            )
        )
    row.append(
        InlineKeyboardButton(
            text=w["chat_newest"],
            callback_data=ChatPageButton(chat=page.chat_id, before=0).pack(),
        )
    )
    return html.escape(plain, quote=False), plain, InlineKeyboardMarkup(inline_keyboard=[row])


def _line(line: ConversationLine, w: dict[str, str], tz: tzinfo) -> str:
    at = datetime.fromtimestamp(line.at, tz).strftime("%d.%m %H:%M")
    if line.kind == "tool":
        return f"   {w['who_tool']} {line.text} — {line.status}"
    text = " ".join(line.text.split())
    who = w["who_user"] if line.kind == "user" else w["who_bot"]
    if line.kind == "assistant" and text.startswith(OPERATOR_PREFIX.strip()):
        who, text = w["who_operator"], text[len(OPERATOR_PREFIX.strip()) :].strip()
    if len(text) > MAX_LINE:
        text = text[: MAX_LINE - 1] + "…"
    outcome = f"  [{line.outcome}]" if line.outcome else ""
    return f"{who} {at}{outcome}\n{text}"
