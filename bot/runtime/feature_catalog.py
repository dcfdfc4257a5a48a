"""The feature catalog, channel-neutral: what a feature declares (`FeatureSpec`), what
its part in a turn is built from (`Needs`), that part (`ChatPart`), its typed words as a
table (`word_table`) and how the features that are on are built (`build_chat_parts`); the
list itself (`FEATURES`, bot/telegram/features/registry.py) is read by the bot's wiring
and by `simulate`.

Each entry (`FeatureSpec`) declares in one place what a feature brings: its settings
group (`settings`, a `FeatureSettings` class read from the environment like the rest),
its words per language (`words`: keys a shop's TEXTS_FILE may reword like any text;
`word_table` makes them from the typed words its handlers read with `Texts.of`), and
two builders. `chat` builds its part in a turn — its tools, its system-prompt fragments
and its own objects (e.g. a service) — from `Needs`, so the bot and `support-bot
simulate` build it the same way; None means the feature is off. `telegram` builds the
rest (routers, menu, offers' buttons, /stats block, gauges, background work); its type is
the spec's third parameter (`Side`), which the Telegram adapter fills in
(bot/telegram/features/catalog.py: `TelegramSide`), so nothing here knows a router or a
keyboard and this module imports no aiogram (an import contract says so). Simulate never
calls it, so a Telegram-only part is left out by the list itself.

The system prompt is the frame (services/prompts/support_chat.py) with the fragments of
the features that are on, in the list's order (`system_prompt`); `make check` fails
when a fragment names a tool its feature does not register (bot/telegram/features/lint.py).

Adding a feature: its module declares a `FeatureSpec` (and its builders), and one line
in bot/telegram/features/registry.py adds it to `FEATURES`.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import asdict, dataclass, field
from typing import TYPE_CHECKING, Any, Generic, TypeVar

from bot.runtime.config import (
    FeatureSettings,
    NoSettings,
    Settings,
    SettingsError,
    load_feature_settings,
)
from bot.runtime.exit_codes import CannotStart
from bot.runtime.languages import Language
from services.prompts.composed import PromptFragment, SystemPrompt, compose
from services.prompts.support_chat import SUPPORT_CHAT_FRAME
from storage.database import Database, StorageRetry
from tools.base import Tool
from tools.shop.directory import ShopDirectory

if TYPE_CHECKING:
    from _typeshed import DataclassInstance

Own = TypeVar("Own")
Conf = TypeVar("Conf", bound=FeatureSettings)
# a feature's side in a channel (Telegram's: bot/telegram/features/catalog.py)
Side = TypeVar("Side")


@dataclass(frozen=True, slots=True)
class Needs:
    """What a feature's part in a turn may be built from: no Telegram in it."""

    settings: Settings
    db: Database
    shop: ShopDirectory
    storage_retry: StorageRetry


@dataclass(frozen=True, slots=True)
class ChatPart(Generic[Own]):
    """A feature's part in a turn, the same in the bot and in simulate: `own` is what
    its Telegram side builds on (e.g. its service)."""

    own: Own
    tools: tuple[Tool[Any, Any], ...] = ()
    prompt: tuple[PromptFragment, ...] = ()


def word_table(
    *tables: Mapping[Language, DataclassInstance],
) -> Mapping[Language, Mapping[str, str]]:
    """A feature's words as `FeatureSpec.words`, from its typed words (a frozen dataclass
    of strings per language, which its handlers read with `Texts.of`; a feature with
    words for customers and for staff gives both)."""
    merged: dict[Language, dict[str, str]] = {}
    for words in tables:
        for language, w in words.items():
            merged.setdefault(language, {}).update({k: str(v) for k, v in asdict(w).items()})
    return merged


def on(part: bool) -> ChatPart[None] | None:
    """The part of a feature with nothing in a turn: on (no tools, no words) or off."""
    return ChatPart(None) if part else None


@dataclass(frozen=True, slots=True)
class FeatureSpec(Generic[Own, Conf, Side]):
    """One feature, declared in its module (see the module docstring).

    `chat(needs, conf)`: its part in a turn, None when off; `telegram`: its Telegram
    side (typed by the adapter as `Side`), None when it has none; `words`: its texts per
    language (every language, the same keys); `settings`: its settings group (the
    settings of the features built before this list are still in `Settings`)."""

    name: str
    chat: Callable[[Needs, Conf], ChatPart[Own] | None]
    telegram: Side | None = None
    settings: type[Conf] = NoSettings  # type: ignore[assignment]
    words: Mapping[Language, Mapping[str, str]] = field(default_factory=dict)
    # values of its group's settings that turn it on (make check's lint builds it so)
    turned_on: Mapping[str, Any] = field(default_factory=dict)


@dataclass(frozen=True, slots=True)
class Built(Generic[Side]):
    """A feature that is on: its spec, settings and part in a turn."""

    spec: FeatureSpec[Any, Any, Side]
    conf: FeatureSettings
    part: ChatPart[Any]


def build_chat_parts(
    specs: Iterable[FeatureSpec[Any, Any, Side]],
    needs: Needs,
    overrides: Mapping[str, Mapping[str, Any]] | None = None,
) -> tuple[Built[Side], ...]:
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


def tools_of(built: Sequence[Built[Any]]) -> list[Tool[Any, Any]]:
    return [tool for b in built for tool in b.part.tools]


def system_prompt(built: Sequence[Built[Any]]) -> SystemPrompt:
    """The frame with the fragments of the features that are on, in the list's order."""
    return compose(SUPPORT_CHAT_FRAME, [f for b in built for f in b.part.prompt])


def own_of(built: Sequence[Built[Any]], spec: FeatureSpec[Own, Any, Any]) -> Own | None:
    """`spec`'s own objects when it is on (typed by the spec)."""
    for b in built:
        if b.spec is spec:
            own: Own = b.part.own
            return own
    return None


def words_of(specs: Iterable[FeatureSpec[Any, Any, Any]]) -> dict[Language, dict[str, str]]:
    """Every feature's built-in words by language, on or off (a shop's TEXTS_FILE may
    reword a feature before turning it on): what `load_text_table` takes as `features`."""
    table: dict[Language, dict[str, str]] = {}
    for spec in specs:
        for language, words in spec.words.items():
            table.setdefault(language, {}).update(words)
    return table
