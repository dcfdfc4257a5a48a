"""The bot's routers in the order they are tried.

Commands first (/phone and /forget_phone among them), then the admin commands (only for
ADMIN_IDS), then the fall-through for unknown commands — so a non-admin's /stats gets
exactly the reply any unknown command gets — then shared contacts, then voice notes,
then customer messages; button presses (👍/👎) have their own router. Errors are handled
by their own router. With OPERATOR_CHAT_ID set, the handoff routers
(bot/routers/handoff.py) join: see `get_routers`.
"""

from __future__ import annotations

from collections.abc import Iterable

from aiogram import Router

from bot.routers.chat import build_chat_router
from bot.routers.commands import build_commands_router, build_unknown_command_router
from bot.routers.errors import build_errors_router
from bot.routers.feedback import build_feedback_router
from bot.routers.handoff import (
    build_customer_handoff_router,
    build_handoff_button_router,
    build_handoff_commands_router,
    build_operator_router,
)
from bot.routers.phone import build_contact_router, build_phone_commands_router
from bot.routers.voice import build_voice_router


def get_routers(
    *,
    admin_ids: Iterable[int],
    operator_chat_id: int | None = None,
    feedback_buttons: bool = True,
) -> list[Router]:
    """`operator_chat_id` set: the handoff routers too — the operators' group first (no
    other router sees it), /operator among the commands, the "talk to a person" button
    (also offered after a 👎), and a customer's messages during a handoff before the AI's
    router. `feedback_buttons`: 👍/👎 under AI answers (FEEDBACK_ENABLED)."""
    from bot.routers.admin import build_admin_router

    handoff = operator_chat_id is not None
    operators = [build_operator_router(operator_chat_id)] if operator_chat_id is not None else []
    return [
        *operators,
        build_commands_router(),
        build_phone_commands_router(),
        *([build_handoff_commands_router(), build_handoff_button_router()] if handoff else []),
        build_admin_router(frozenset(admin_ids)),
        build_unknown_command_router(),
        build_contact_router(),
        # during a handoff every customer message (voice notes too) goes to the operators
        *([build_customer_handoff_router()] if handoff else []),
        build_voice_router(feedback_buttons=feedback_buttons),
        build_chat_router(feedback_buttons=feedback_buttons),
        build_feedback_router(offer_operator=handoff),
        build_errors_router(),
    ]
