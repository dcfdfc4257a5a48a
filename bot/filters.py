"""Who a message is meant for, and the user's language, for the routers.

In a group the bot answers only messages addressed to it: a mention of its username,
a reply to one of its messages, or a command. In private chats every message is.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import Any

from aiogram import Bot
from aiogram.dispatcher.middlewares.base import BaseMiddleware
from aiogram.enums import ChatType, MessageEntityType
from aiogram.filters import Filter
from aiogram.types import Message, TelegramObject, User

from bot.texts import language_for, texts_for


class HasText(Filter):
    """`F.text` as an async filter.

    aiogram runs every plain (synchronous) filter, magic filters included, through
    `asyncio.to_thread`: a worker-thread round trip per filter per update. The bench's
    profile showed those hops among the bot's largest costs (docs/benchmarks.md), so the
    filters every update meets are async.
    """

    async def __call__(self, message: Message) -> bool:
        return bool(message.text)


class IsCommand(Filter):
    """The text (or caption) starts with "/"; cheap, so command filters see only commands."""

    def __init__(self, *, captions: bool = True) -> None:
        self._captions = captions

    async def __call__(self, message: Message) -> bool:
        text = message.text or (message.caption if self._captions else None) or ""
        return text.startswith("/")


class FromUsers(Filter):
    """The sender is one of `user_ids` (an async `F.from_user.id.in_(...)`)."""

    def __init__(self, user_ids: frozenset[int]) -> None:
        self._user_ids = user_ids

    async def __call__(self, message: Message) -> bool:
        return message.from_user is not None and message.from_user.id in self._user_ids


class AddressedToBot(Filter):
    """True for private chats and for group messages that mention or reply to the bot."""

    async def __call__(self, message: Message, bot: Bot) -> bool:
        if message.chat.type == ChatType.PRIVATE:
            return True
        me = await bot.me()
        reply = message.reply_to_message
        if reply is not None and reply.from_user is not None and reply.from_user.id == me.id:
            return True
        text = message.text or message.caption or ""
        mention = f"@{me.username}".lower() if me.username else None
        for entity in message.entities or message.caption_entities or []:
            if entity.type == MessageEntityType.BOT_COMMAND:
                # "/help" is for every bot in the group, "/help@other_bot" is not for us
                _, _, addressee = entity.extract_from(text).partition("@")
                if not addressee or (mention is not None and f"@{addressee}".lower() == mention):
                    return True
            if entity.type == MessageEntityType.MENTION and mention is not None:
                value = entity.extract_from(text)
                if value.lower() == mention:
                    return True
            if entity.type == MessageEntityType.TEXT_MENTION and entity.user is not None:
                if entity.user.id == me.id:
                    return True
        return False


async def strip_bot_mention(text: str, bot: Bot) -> str:
    """The question without the leading/trailing "@bot" a group member addressed it with."""
    me = await bot.me()
    if not me.username:
        return text
    mention = f"@{me.username}"
    words = [w for w in text.split(" ") if w.lower() != mention.lower()]
    return " ".join(words)


class LanguageMiddleware(BaseMiddleware):
    """The one place a reply's language is chosen: once per update, for every router.

    Puts `language` (ours: "ru" or "en", by `bot.texts.language_for`) and `texts` (the
    fixed phrases in it) into the handler data. It wraps the update, so the data an
    error handler receives carries them too. No user (a channel post, say) means the
    default language, as a missing `language_code` does.
    """

    async def __call__(
        self,
        handler: Callable[[TelegramObject, dict[str, Any]], Awaitable[Any]],
        event: TelegramObject,
        data: dict[str, Any],
    ) -> Any:
        user: User | None = data.get("event_from_user")
        language = language_for(user.language_code if user else None)
        data["language"] = language
        data["texts"] = texts_for(language)
        return await handler(event, data)
