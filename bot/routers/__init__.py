"""The bot's routers in the order they are tried.

Commands first (/phone and /forget_phone among them), then the admin commands (only for
ADMIN_IDS), then the fall-through for unknown commands — so a non-admin's /stats gets
exactly the reply any unknown command gets — then shared contacts, then customer
messages; button presses (👍/👎) have their own router. Errors are handled by their own
router.
"""

from __future__ import annotations

from collections.abc import Iterable

from aiogram import Router

from bot.routers.chat import build_chat_router
from bot.routers.commands import build_commands_router, build_unknown_command_router
from bot.routers.errors import build_errors_router
from bot.routers.feedback import build_feedback_router
from bot.routers.phone import build_contact_router, build_phone_commands_router


def get_routers(
    *, admin_ids: Iterable[int], feedback_buttons: bool = True, offer_operator: bool = False
) -> list[Router]:
    """`feedback_buttons`: 👍/👎 under AI answers (FEEDBACK_ENABLED); `offer_operator`:
    a 👎 offers "talk to a person" (handoff configured)."""
    from bot.routers.admin import build_admin_router

    return [
        build_commands_router(),
        build_phone_commands_router(),
        build_admin_router(frozenset(admin_ids)),
        build_unknown_command_router(),
        build_contact_router(),
        build_chat_router(feedback_buttons=feedback_buttons),
        build_feedback_router(offer_operator=offer_operator),
        build_errors_router(),
    ]
