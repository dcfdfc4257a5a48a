"""What a feature declares (`FeatureSpec`) and how the features that are on are built;
the list itself (`FEATURES`, bot/telegram/features/registry.py) is read by the bot's wiring and by
`simulate`.

Each entry (`FeatureSpec`) declares in one place what a feature brings: its settings
group (`settings`, a `FeatureSettings` class read from the environment like the rest),
its words per language (`words`: keys a shop's TEXTS_FILE may reword like any text;
`word_table` makes them from the typed words its handlers read with `Texts.of`), and
two builders. `chat` builds its part in a turn —
its tools, its system-prompt fragments and its own objects (e.g. a service) — from
`Needs`, which holds nothing of Telegram (it and `ChatPart` are in
bot/runtime/feature_parts.py), so the bot and `support-bot simulate` build it
the same way; None means the feature is off. `telegram` builds the rest (routers, menu,
offers' buttons, /stats block, gauges, background work: `Feature`) from the chat part's
objects and the Telegram side (`TelegramNeeds`); simulate never calls it, so a
Telegram-only part is left out by the list itself.

The system prompt is the frame (services/prompts/support_chat.py) with the fragments of
the features that are on, in the list's order (`system_prompt`); `make check` fails
when a fragment names a tool its feature does not register (tools/lint_prompts.py).

Adding a feature: its module declares a `FeatureSpec` (and its builders), and one line
in bot/telegram/features/registry.py adds it to `FEATURES`.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Generic, TypeVar

from bot.runtime.config import (
    FeatureSettings,
    NoSettings,
    SettingsError,
    load_feature_settings,
)
from bot.runtime.feature_parts import ChatPart, Needs, Own, on, word_table
from bot.runtime.languages import Language
from bot.telegram.features import Feature
from bot.telegram.sender import Sender
from bot.telegram.startup import CannotStart
from bot.telegram.texts import TextTable
from services.limits import TurnSlots
from services.llm.client import OpenAIChatModel
from services.prompts.composed import SystemPrompt, compose
from services.prompts.support_chat import SUPPORT_CHAT_FRAME
from storage.voice import VoiceNoteRepository
from tools.base import Tool

if TYPE_CHECKING:  # its module declares a FeatureSpec too
    from bot.telegram.features.instances import Instances

Conf = TypeVar("Conf", bound=FeatureSettings)

__all__ = [  # re-exported: the feature modules import them from here
    "ChatPart",
    "Needs",
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


@dataclass(frozen=True, slots=True)
class FeatureSpec(Generic[Own, Conf]):
    """One feature, declared in its module (see the module docstring).

    `chat(needs, conf)`: its part in a turn, None when off; `telegram(needs, telegram,
    own, conf)`: its Telegram side, None when it has none; `words`: its texts per
    language (every language, the same keys); `settings`: its settings group (the
    settings of the features built before this list are still in `Settings`)."""

    name: str
    chat: Callable[[Needs, Conf], ChatPart[Own] | None]
    telegram: Callable[[Needs, TelegramNeeds, Own, Conf], Feature | None] | None = None
    settings: type[Conf] = NoSettings  # type: ignore[assignment]
    words: Mapping[Language, Mapping[str, str]] = field(default_factory=dict)
    # values of its group's settings that turn it on (make check's lint builds it so)
    turned_on: Mapping[str, Any] = field(default_factory=dict)


@dataclass(frozen=True, slots=True)
class Built:
    """A feature that is on: its spec, settings and part in a turn."""

    spec: FeatureSpec[Any, Any]
    conf: FeatureSettings
    part: ChatPart[Any]


def build_chat_parts(
    specs: Iterable[FeatureSpec[Any, Any]],
    needs: Needs,
    overrides: Mapping[str, Mapping[str, Any]] | None = None,
) -> tuple[Built, ...]:
    """The features that are on, with their parts in a turn (in the list's order);
    `overrides`: settings of a group by feature name (the lint). A bad setting of a
    group is `CannotStart`."""
    overrides = overrides or {}
    built = []
    for spec in specs:
        try:
            conf = load_feature_settings(spec.settings, **overrides.get(spec.name, {}))
        except SettingsError as exc:
            raise CannotStart(str(exc)) from None
        part = spec.chat(needs, conf)
        if part is not None:
            built.append(Built(spec, conf, part))
    return tuple(built)


def telegram_features(
    built: Sequence[Built], needs: Needs, telegram: TelegramNeeds
) -> tuple[Feature, ...]:
    """The Telegram sides of the features that are on (the bot only, never simulate)."""
    features = []
    for b in built:
        if b.spec.telegram is not None:
            feature = b.spec.telegram(needs, telegram, b.part.own, b.conf)
            if feature is not None:
                features.append(feature)
    return tuple(features)


def tools_of(built: Sequence[Built]) -> list[Tool[Any, Any]]:
    return [tool for b in built for tool in b.part.tools]


def system_prompt(built: Sequence[Built]) -> SystemPrompt:
    """The frame with the fragments of the features that are on, in the list's order."""
    return compose(SUPPORT_CHAT_FRAME, [f for b in built for f in b.part.prompt])


def own_of(built: Sequence[Built], spec: FeatureSpec[Own, Any]) -> Own | None:
    """`spec`'s own objects when it is on (typed by the spec)."""
    for b in built:
        if b.spec is spec:
            own: Own = b.part.own
            return own
    return None


def words_of(specs: Iterable[FeatureSpec[Any, Any]]) -> dict[Language, dict[str, str]]:
    """Every feature's built-in words by language, on or off (a shop's TEXTS_FILE may
    reword a feature before turning it on): what `load_text_table` takes as `features`."""
    table: dict[Language, dict[str, str]] = {}
    for spec in specs:
        for language, words in spec.words.items():
            table.setdefault(language, {}).update(words)
    return table
