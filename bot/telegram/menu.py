"""The commands menu: which commands Telegram lists, in each language, for whom.

Each router declares the menu entries of its commands next to their handlers (a `MENU`
tuple: the command and its words in `bot/telegram/texts.py`, so a shop's TEXTS_FILE may reword
them too); a feature's entries come with the feature (bot/telegram/features/). `set_commands`
sends them once at start: the customers' entries for everyone, the admins' entries
after them for each of ADMIN_IDS, in the default language and in each other language.
The menu is optional: a failure is a warning, never a stop. /help lists the same
customers' entries (`help_with_commands`), so the two never disagree.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, replace

from aiogram.methods import SetMyCommands
from aiogram.types import BotCommand, BotCommandScopeChat, BotCommandScopeDefault

from bot.telegram.sender import Sender
from bot.telegram.texts import COMMANDS_PLACEHOLDER, LANGUAGES, Language, Texts, TextTable

log = logging.getLogger(__name__)


@dataclass(frozen=True, slots=True)
class MenuEntry:
    """One command in the menu; `words` picks its description from a language's texts."""

    command: str
    words: Callable[[Texts], str]


def feature_entry(command: str, key: str, words: Mapping[Language, Mapping[str, str]]) -> MenuEntry:
    """A feature's command in the menu, with its words `key` from the feature's words
    (`FeatureSpec.words`) as the shop's TEXTS_FILE left them."""
    return MenuEntry(command, lambda texts: texts.features.get(key) or words[texts.language][key])


@dataclass(frozen=True, slots=True)
class Menu:
    customers: tuple[MenuEntry, ...]
    admins: tuple[MenuEntry, ...] = ()


def help_with_commands(table: TextTable, entries: tuple[MenuEntry, ...]) -> TextTable:
    """`table` with `{commands}` in each language's help replaced by `entries`, one
    "- /command — words" a line (a help a shop wrote without it stays as written)."""

    def completed(texts: Texts) -> Texts:
        listing = "\n".join(f"- /{e.command} — {e.words(texts)}" for e in entries)
        return replace(texts, help=texts.help.replace(f"{{{COMMANDS_PLACEHOLDER}}}", listing))

    by_language = {language: completed(texts) for language, texts in table.by_language.items()}
    return replace(table, by_language=by_language)


def menu_calls(menu: Menu, table: TextTable, admin_ids: Iterable[int]) -> list[SetMyCommands]:
    """The default scope, then each admin's chat, in the default language (no language
    code) and then in each other language."""

    def commands(entries: tuple[MenuEntry, ...], texts: Texts) -> list[BotCommand]:
        return [BotCommand(command=e.command, description=e.words(texts)) for e in entries]

    languages = [
        (None, table.default_language),
        *((lang, lang) for lang in LANGUAGES if lang != table.default_language),
    ]
    calls: list[SetMyCommands] = []
    for code, language in languages:
        texts = table.by_language[language]
        calls.append(
            SetMyCommands(
                commands=commands(menu.customers, texts),
                scope=BotCommandScopeDefault(),
                language_code=code,
            )
        )
        for admin_id in sorted(admin_ids):
            calls.append(
                SetMyCommands(
                    commands=commands(menu.customers + menu.admins, texts),
                    scope=BotCommandScopeChat(chat_id=admin_id),
                    language_code=code,
                )
            )
    return calls


async def set_commands(sender: Sender, calls: list[SetMyCommands]) -> None:
    """Send the menu; the first failure ends it with a warning (it is optional)."""
    for call in calls:
        try:
            await sender.call(call)
        except Exception as exc:
            log.warning("could not set the commands menu (%s); continuing", type(exc).__name__)
            return
