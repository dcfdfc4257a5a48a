"""`python -m bot.telegram.features.lint`, run by `make check`: the features' declarations agree.

Every feature of bot/telegram/features/registry.py is built with its setting on (`ALL_ON`, or its
spec's `turned_on`; a throwaway SQLite database, no network), then: a fragment of its
system-prompt words names only tools the feature registers or the shop's own (always
registered), the frame names only the shop's own, and its words have the same keys in
every language, none of them a key of the bot's own texts or of another feature's.
Exit 1 with one line per problem.
"""

from __future__ import annotations

import asyncio
import sys
import tempfile
from collections.abc import Iterable, Sequence
from pathlib import Path
from typing import Any

from bot.runtime.config import Settings
from bot.runtime.feature_catalog import Built, FeatureSpec, Needs, build_chat_parts
from bot.telegram.features.registry import FEATURES
from bot.telegram.texts import LANGUAGES, TEXT_KEYS
from bot.telegram.wiring.core import build_shop_directory, build_storage_retry, build_tools
from services.prompts.composed import unregistered
from services.prompts.support_chat import SUPPORT_CHAT_FRAME
from storage.database import open_database

# the shared settings that turn features on (a group's own: its spec's `turned_on`; the
# instances feature needs PostgreSQL: it has no words)
ALL_ON: dict[str, Any] = {
    "bot_token": "1:lint",
    "openai_api_key": "sk-lint",
    "operator_chat_id": -1000000000000,
    "stream_answers": True,
}


def problems(built: Sequence[Built[Any]], shop_tools: Iterable[str]) -> list[str]:
    """What disagrees: fragments naming tools their feature does not register, words
    missing in a language."""
    own_shop = tuple(shop_tools)
    found = [
        f"the frame {SUPPORT_CHAT_FRAME.ref} names {name}, which is not a shop tool"
        for name in unregistered(SUPPORT_CHAT_FRAME.words, own_shop)
    ]
    found.extend(
        f"{spec_name(b)}: {fragment.ref} names {name}, which {spec_name(b)} does not register"
        for b in built
        for fragment in b.part.prompt
        for name in unregistered(fragment.body, (*own_shop, *(t.name for t in b.part.tools)))
    )
    for b in built:
        found.extend(word_problems(b.spec))
    return found


def spec_name(b: Built[Any]) -> str:
    return b.spec.name


def word_problems(spec: FeatureSpec[Any, Any, Any]) -> list[str]:
    if not spec.words:
        return []
    keys = {language: set(spec.words.get(language, {})) for language in LANGUAGES}
    every = set().union(*keys.values())
    return [
        f"{spec.name}: words {sorted(every - have)} are missing in {language!r}"
        for language, have in keys.items()
        if every - have
    ]


def word_clashes(specs: Sequence[FeatureSpec[Any, Any, Any]]) -> list[str]:
    """A feature's word key that is one of the bot's own texts or another feature's:
    `TEXTS_FILE` could not tell which one it rewords."""
    owner: dict[str, str] = {}
    found = []
    for spec in specs:
        for key in sorted({key for words in spec.words.values() for key in words}):
            if key in TEXT_KEYS:
                found.append(f"{spec.name}: word {key!r} is one of the bot's own texts")
            elif key in owner:
                found.append(f"{spec.name}: word {key!r} is {owner[key]}'s too")
            else:
                owner[key] = spec.name
    return found


async def check(specs: Sequence[FeatureSpec[Any, Any, Any]] = FEATURES) -> list[str]:
    settings = Settings(_env_file=None, **ALL_ON)  # type: ignore[call-arg]
    with tempfile.TemporaryDirectory() as tmp:
        db = await open_database(Path(tmp) / "lint.sqlite3", pool_size=1)
        try:
            shop = build_shop_directory(settings, db)
            needs = Needs(settings, db, shop, build_storage_retry(settings))
            built = build_chat_parts(specs, needs, {s.name: s.turned_on for s in specs})
            shop_tools = build_tools(settings, shop=shop).names
            return problems(built, shop_tools) + word_clashes(specs)
        finally:
            await db.close()


def main() -> int:
    found = asyncio.run(check())
    for line in found:
        print(f"bot/telegram/features: {line}", file=sys.stderr)
    return 1 if found else 0


if __name__ == "__main__":
    sys.exit(main())
