"""Optional features as units: what each adds to the bot's Telegram side (`Feature`).

A feature is declared in its module as a `TelegramFeatureSpec` (its part in a turn —
tools, prompt fragments — channel-neutral, bot/runtime/feature_catalog.py; this Telegram
side typed, bot/telegram/features/catalog.py) and listed once in
bot/telegram/features/registry.py; where its setting leaves it off the wiring
(bot/telegram/wiring/) adds nothing of it: no tool, no router, no command, no check, no
gauge, no /stats section, no part in the core's work. The core classes take what a
feature adds there as typed collaborators whose default is "nothing" (the intake's
signals and scheduler, the inbox's fence, the responder's lost-topic fallback, the chat
path's drafts and after-turn parts); the wiring fills them from the features, and what
the core bot does not know about a feature stays in its module.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Coroutine
from dataclasses import dataclass, field
from typing import Any

from aiogram import Router
from aiohttp import web

from bot.runtime.intake import SchedulerFactory, SignalHook
from bot.runtime.metrics import Metrics
from bot.runtime.responder import TopicLost
from bot.telegram.context import AfterTurn, AnswerDrafts, HandlerDeps, OfferRows
from bot.telegram.menu import MenuEntry
from bot.telegram.routers.admin import StatsSection
from storage.coordination import InboxFence


@dataclass(frozen=True, slots=True)
class FeatureRouters:
    """A feature's routers, by where they go among the core ones (bot/telegram/routers/):
    `first` before every other router (e.g. a chat no other router may see; not limited
    per user), `commands` among the command routers (before the unknown-command reply;
    customers' commands and button presses, limited per user: bot/telegram/limits.py), `messages`
    before the routers that answer customers' messages (their handlers apply the limits)."""

    first: tuple[Router, ...] = ()
    commands: tuple[Router, ...] = ()
    messages: tuple[Router, ...] = ()


def _no_routers(_deps: HandlerDeps) -> FeatureRouters:
    return FeatureRouters()


@dataclass(frozen=True, slots=True)
class ChatOwnership:
    """Who runs a chat's updates when it is not simply this process (several instances):
    the intake's scheduler and the fence on the inbox's answer steps."""

    scheduling: SchedulerFactory
    inbox_fence: InboxFence


@dataclass(frozen=True, slots=True)
class Feature:
    """What one feature contributes.

    `routers` are built from the handlers' dependencies once those exist; `menu`: its
    customers' commands in the menu; `start_check(bot_id)`: a check of its settings at
    start-up that raises `bot.runtime.exit_codes.CannotStart`; `on_start`: work at start, before the
    checks and before any update is taken; `gauges`: its numbers on /metrics; `stats_sections`: its
    blocks of the /stats table; `background`: work that runs while the bot takes updates
    (cancelled at the stop); `web_routes`: its routes on the web server (the webhook server,
    or in polling mode the one HEALTH_ENABLED opens).

    Its part in the core's work (bot/telegram/wiring/telegram.py hands these over): `drafts`: the
    chat path streams answers through it (`HandlerDeps.drafts`, one feature at most);
    `after_turn`: its part in a turn's reply (`HandlerDeps.after_turn`); `person_button`:
    it answers the "talk to a person" button; `offer_rows`: the buttons of its offers
    under an answer in a private chat (bot/telegram/turn_view.py); `on_stored`: sees each update
    as soon as it is stored (`Intake` signals); `topic_lost`: where a part goes whose
    forum topic was deleted (`Responder`); `chats`: the scheduler and inbox fence of
    several instances.
    """

    name: str
    routers: Callable[[HandlerDeps], FeatureRouters] = _no_routers
    menu: tuple[MenuEntry, ...] = ()
    admin_menu: tuple[MenuEntry, ...] = ()  # in ADMIN_IDS' menus only, after /stats
    start_check: Callable[[int], Awaitable[None]] | None = None
    on_start: Callable[[], Awaitable[None]] | None = None
    gauges: Callable[[Metrics], None] | None = None
    stats_sections: tuple[StatsSection, ...] = field(default=())
    drafts: AnswerDrafts | None = None
    after_turn: AfterTurn | None = None
    person_button: bool = False
    offer_rows: OfferRows | None = None
    on_stored: SignalHook | None = None
    topic_lost: TopicLost | None = None
    chats: ChatOwnership | None = None
    background: Callable[[], Coroutine[Any, Any, None]] | None = None
    web_routes: Callable[[web.Application], None] | None = None
