"""The channel-neutral half of what a feature declares: what its part in a turn is built
from (`Needs`), that part (`ChatPart`) and its typed words as a table (`word_table`).

They hold nothing of Telegram, so `support-bot simulate` and the runtime import them
without aiogram; the rest of a feature's declaration (`FeatureSpec`, its Telegram side)
is in bot/telegram/features/catalog.py, which re-exports these.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import asdict, dataclass
from typing import TYPE_CHECKING, Any, Generic, TypeVar

from bot.runtime.config import Settings
from bot.runtime.languages import Language
from services.prompts.composed import PromptFragment
from storage.database import Database, StorageRetry
from tools.base import Tool
from tools.shop.directory import ShopDirectory

if TYPE_CHECKING:
    from _typeshed import DataclassInstance

Own = TypeVar("Own")


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
