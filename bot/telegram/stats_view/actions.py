"""The /stats block about actions the customers confirmed, shown when
ACTIONS_ENABLED names any: the admin router passes it to `render_table` as an extra
section."""

from __future__ import annotations

from collections.abc import Sequence

from bot.telegram.stats_view.table import kv
from bot.telegram.stats_view.wording import format_int
from bot.telegram.texts import Language
from storage.actions import ActionCounts, ActionRequest, ActionRow

_WORDS: dict[Language, dict[str, str]] = {
    "ru": {
        "title": "ДЕЙСТВИЯ С ПОДТВЕРЖДЕНИЕМ",
        "proposed": "предложено",
        "confirmed": "подтверждено",
        "done": "выполнено",
        "declined": "отклонено",
        "expired": "истекло",
        "failed": "не удалось",
        "needs_attention": "ждёт проверки человеком",
        "open": "сейчас ждёт проверки: заказ",
        "request": "запрос ждёт ответа сотрудника: заказ",
        "resolved_questions": "вопросов решено действием",
    },
    "en": {
        "title": "CONFIRMED ACTIONS",
        "proposed": "proposed",
        "confirmed": "confirmed",
        "done": "done",
        "declined": "declined",
        "expired": "expired",
        "failed": "failed",
        "needs_attention": "needs a person's check",
        "open": "waiting for a person now: order",
        "request": "request open for the staff: order",
        "resolved_questions": "questions resolved by an action",
    },
}


OPEN_SHOWN = 10  # actions waiting for a person listed by order, at most


def actions_block(
    counts: ActionCounts,
    language: Language,
    waiting: Sequence[ActionRow] = (),
    requests: Sequence[ActionRequest] = (),
) -> list[str]:
    """The block's monospace lines, laid out like the rest of the owner's table; then
    customers' questions (turns) an action answered — what the feature is for; then the
    actions waiting for a person's check now, and the requests to the shop's people
    nobody answered yet (whatever the period), by order."""
    w = _WORDS[language]
    return [
        kv(w["title"], format_int(counts.proposed, language), indent=0),
        *(
            kv(w[name], format_int(getattr(counts, name), language))
            for name in ("confirmed", "done", "declined", "expired", "failed", "needs_attention")
        ),
        kv(w["resolved_questions"], format_int(counts.resolved_questions, language)),
        *(kv(f"{w['open']} {row.order_number}", row.action) for row in waiting[:OPEN_SHOWN]),
        *(
            kv(f"{w['request']} {request.order_number}", request.operation_id[:8])
            for request in requests[:OPEN_SHOWN]
        ),
    ]
