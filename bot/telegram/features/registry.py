"""The features, in the order their parts are wired (routers, prompt fragments, tools).

The one list the bot (bot/telegram/wiring/) and `support-bot simulate` (bot/programs/simulate.py)
build
from: a feature added here works in both. Each entry is declared in its own module
(a `TelegramFeatureSpec`, bot/telegram/features/catalog.py: the neutral `FeatureSpec`
of bot/runtime/feature_catalog.py with its Telegram side typed).
"""

from __future__ import annotations

from typing import Any

from bot.telegram.features.actions import ACTIONS
from bot.telegram.features.business import BUSINESS
from bot.telegram.features.catalog import TelegramFeatureSpec
from bot.telegram.features.gaps import GAPS
from bot.telegram.features.handoff import HANDOFF
from bot.telegram.features.instances import INSTANCES
from bot.telegram.features.knowledge import KNOWLEDGE
from bot.telegram.features.order_updates import ORDER_UPDATES
from bot.telegram.features.products import PRODUCTS
from bot.telegram.features.streaming import STREAMING
from bot.telegram.features.voice import VOICE

FEATURES: tuple[TelegramFeatureSpec[Any, Any], ...] = (
    HANDOFF,
    VOICE,
    STREAMING,
    INSTANCES,
    ACTIONS,
    ORDER_UPDATES,
    KNOWLEDGE,
    GAPS,
    PRODUCTS,
    BUSINESS,
)
