"""The features, in the order their parts are wired (routers, prompt fragments, tools).

The one list the bot (bot/wiring/) and `support-bot simulate` (bot/simulate.py) build
from: a feature added here works in both. Each entry is declared in its own module
(`FeatureSpec`, bot/features/catalog.py).
"""

from __future__ import annotations

from typing import Any

from bot.features.actions import ACTIONS
from bot.features.catalog import FeatureSpec
from bot.features.handoff import HANDOFF
from bot.features.instances import INSTANCES
from bot.features.order_updates import ORDER_UPDATES
from bot.features.streaming import STREAMING
from bot.features.voice import VOICE

FEATURES: tuple[FeatureSpec[Any, Any], ...] = (
    HANDOFF,
    VOICE,
    STREAMING,
    INSTANCES,
    ACTIONS,
    ORDER_UPDATES,
)
