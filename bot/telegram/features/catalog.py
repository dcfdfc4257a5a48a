"""The Telegram side of the feature catalog: what a feature's Telegram part is built from
(`TelegramNeeds`), its type (`TelegramSide`, the third parameter of the neutral
`FeatureSpec`; `TelegramFeatureSpec` is that spec with this side filled in, what the
feature modules declare) and how the bot builds those parts (`telegram_features`).

What a feature declares and its part in a turn are channel-neutral
(bot/runtime/feature_catalog.py: `FeatureSpec`, `Needs`, `ChatPart`, `build_chat_parts`),
so `support-bot simulate` builds them without this module; the bot alone builds the
Telegram sides (routers, menu, offers' buttons, /stats block, gauges, background work:
`Feature`).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from bot.runtime import feature_catalog
from bot.runtime.feature_catalog import Built, ChatPart, Conf, Needs, Own, on, word_table
from bot.telegram.features import Feature
from bot.telegram.sender import Sender
from bot.telegram.texts import TextTable
from services.limits import TurnSlots
from services.llm.client import OpenAIChatModel
from storage.voice import VoiceNoteRepository

if TYPE_CHECKING:  # its module declares a TelegramFeatureSpec too
    from bot.telegram.features.instances import Instances

__all__ = [  # re-exported: a feature module imports what it declares from here
    "ChatPart",
    "Needs",
    "TelegramFeatureSpec",
    "TelegramNeeds",
    "on",
    "word_table",
]


@dataclass(frozen=True, slots=True)
class TelegramNeeds:
    """What a feature's Telegram side may be built from besides `Needs`."""

    sender: Sender
    texts: TextTable
    model: OpenAIChatModel
    turn_slots: TurnSlots
    voice_notes: VoiceNoteRepository
    instances: Instances | None  # PostgreSQL: chats claimed by one instance at a time


# a feature's Telegram side: (needs, telegram, its own objects, its settings) → Feature
TelegramSide = Callable[[Needs, TelegramNeeds, Own, Conf], Feature | None]


@dataclass(frozen=True, slots=True)
class TelegramFeatureSpec(feature_catalog.FeatureSpec[Own, Conf, TelegramSide[Own, Conf]]):
    """A feature of the bot: the channel-neutral spec with its Telegram side typed (what
    the feature modules declare and `FEATURES` holds; simulate reads it as the neutral
    spec and never calls `telegram`)."""


def telegram_features(
    built: Sequence[Built[TelegramSide[Any, Any]]], needs: Needs, telegram: TelegramNeeds
) -> tuple[Feature, ...]:
    """The Telegram sides of the features that are on (the bot only, never simulate)."""
    features = []
    for b in built:
        if b.spec.telegram is not None:
            feature = b.spec.telegram(needs, telegram, b.part.own, b.conf)
            if feature is not None:
                features.append(feature)
    return tuple(features)
