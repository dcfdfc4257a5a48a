"""Optional features as units: what each adds to the bot, through one seam (`Feature`).

A feature is built by one function in its module (`bot/features/handoff.py`,
`bot/features/voice.py`) that returns None when its setting leaves it off; the wiring
(bot/wiring/) then adds nothing of it: no tool, no router, no command, no check, no
gauge, no /stats section. What the core bot does not know about a feature stays here.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Coroutine
from dataclasses import dataclass, field
from typing import Any

from aiogram import Router
from aiohttp import web

from bot.context import HandlerDeps
from bot.menu import MenuEntry
from bot.metrics import Metrics
from bot.routers.admin import StatsSection
from tools.base import Tool


@dataclass(frozen=True, slots=True)
class FeatureRouters:
    """A feature's routers, by where they go among the core ones (bot/routers/):
    `first` before every other router (e.g. a chat no other router may see; not limited
    per user), `commands` among the command routers (before the unknown-command reply;
    customers' commands and button presses, limited per user: bot/limits.py), `messages`
    before the routers that answer customers' messages (their handlers apply the limits)."""

    first: tuple[Router, ...] = ()
    commands: tuple[Router, ...] = ()
    messages: tuple[Router, ...] = ()


def _no_routers(_deps: HandlerDeps) -> FeatureRouters:
    return FeatureRouters()


@dataclass(frozen=True, slots=True)
class Feature:
    """What one feature contributes.

    `routers` are built from the handlers' dependencies once those exist; `menu`: its
    customers' commands in the menu; `start_check(bot_id)`: a check of its settings at
    start-up that raises `bot.startup.CannotStart`; `on_start`: work at start, before the
    checks and before any update is taken; `gauges`: its numbers on /metrics; `stats_sections`: its
    blocks of the /stats table; `background`: work that runs while the bot takes updates
    (cancelled at the stop); `web_routes`: its routes on the web server (the webhook server,
    or in polling mode the one HEALTH_ENABLED opens).
    """

    name: str
    tools: tuple[Tool[Any, Any], ...] = ()
    routers: Callable[[HandlerDeps], FeatureRouters] = _no_routers
    menu: tuple[MenuEntry, ...] = ()
    start_check: Callable[[int], Awaitable[None]] | None = None
    on_start: Callable[[], Awaitable[None]] | None = None
    gauges: Callable[[Metrics], None] | None = None
    stats_sections: tuple[StatsSection, ...] = field(default=())
    background: Callable[[], Coroutine[Any, Any, None]] | None = None
    web_routes: Callable[[web.Application], None] | None = None
