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

from bot.texts import texts_for


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
    """Puts `texts` (the fixed phrases in the user's language) into the handler data."""

    async def __call__(
        self,
        handler: Callable[[TelegramObject, dict[str, Any]], Awaitable[Any]],
        event: TelegramObject,
        data: dict[str, Any],
    ) -> Any:
        user: User | None = data.get("event_from_user")
        data["texts"] = texts_for(user.language_code if user else None)
        return await handler(event, data)
