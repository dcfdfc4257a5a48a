"""The bot's routers in the order they are tried.

Commands first (/phone and /forget_phone among them), then the admin commands (only for
ADMIN_IDS), then the fall-through for unknown commands — so a non-admin's /stats gets
exactly the reply any unknown command gets — then shared contacts, then the features'
message routers (during a handoff, voice notes), then customer messages; button presses
(👍/👎) have their own router. Errors are handled by their own router. A feature
(bot/telegram/features/) puts its routers in one of three places: `FeatureRouters`.

What a customer can make the bot answer is limited per user (bot/telegram/limits.py): messages
by their handlers, commands (the features' among them), contacts and button presses by
`limit_updates`; the admin router and the features' `first` routers (the operators'
group) are not.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import TYPE_CHECKING

from aiogram import Router

from bot.telegram.context import HandlerDeps
from bot.telegram.limits import limit_updates
from bot.telegram.menu import Menu
from bot.telegram.routers import admin, commands, phone
from bot.telegram.routers.chat import build_chat_router
from bot.telegram.routers.commands import build_commands_router, build_unknown_command_router
from bot.telegram.routers.errors import build_errors_router
from bot.telegram.routers.feedback import build_feedback_router
from bot.telegram.routers.phone import build_contact_router, build_phone_commands_router

if TYPE_CHECKING:
    from bot.telegram.features import Feature


def get_routers(
    deps: HandlerDeps,
    *,
    admin_ids: Iterable[int],
    features: Sequence[Feature] = (),
) -> list[Router]:
    """The core routers with the features' ones in their places. After a 👎 the
    feedback router offers "talk to a person" when a feature answers it (`deps.person_button`)."""
    parts = [feature.routers(deps) for feature in features]
    customer_commands = limit_updates(
        [
            build_commands_router(deps),
            build_phone_commands_router(deps),
            *(router for part in parts for router in part.commands),
        ],
        deps.command_limiter,
    )
    admin_router = admin.build_admin_router(
        deps,
        frozenset(admin_ids),
        sections=[section for feature in features for section in feature.stats_sections],
    )
    unknown, contacts, feedback = limit_updates(
        [
            build_unknown_command_router(),
            build_contact_router(deps),
            build_feedback_router(deps, offer_operator=deps.person_button),
        ],
        deps.command_limiter,
    )
    return [
        *(router for part in parts for router in part.first),
        *customer_commands,
        admin_router,
        unknown,
        contacts,
        *(router for part in parts for router in part.messages),
        build_chat_router(deps),
        feedback,
        build_errors_router(),
    ]


def get_menu(features: Sequence[Feature] = ()) -> Menu:
    """The commands menu: the core routers' entries, then the features' (the customers'
    for everyone, the admins' for ADMIN_IDS only)."""
    extra = tuple(entry for feature in features for entry in feature.menu)
    staff = tuple(entry for feature in features for entry in feature.admin_menu)
    return Menu(customers=commands.MENU + phone.MENU + extra, admins=admin.MENU + staff)
