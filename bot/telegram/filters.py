"""Who a message is meant for, and the user's language, for the routers.

In a group the bot answers only messages addressed to it: a mention of its username,
a reply to one of its messages, or a command. In private chats every message is.

Who sent a message (`caller_of`): a person, or a chat. Telegram marks a message sent on
behalf of a chat with `sender_chat` — an anonymous group admin (`from` is the shared
placeholder user GroupAnonymousBot, 1087968824, for every anonymous admin of every
group), a channel posting into its discussion group or a user posting "as" a channel
(`from` is Channel_Bot, 136817688), a channel post forwarded automatically (`from` is
Telegram, 777000). Such a sender is identified by that chat's id: the anonymous admins
of one group share that group's limits (Telegram gives no way to tell them apart), but
not those of every other group's anonymous admins, and no person's. They never count as
a person for access to private data.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import Any

from aiogram import Bot
from aiogram.dispatcher.middlewares.base import BaseMiddleware
from aiogram.enums import ChatMemberStatus, ChatType, MessageEntityType
from aiogram.exceptions import ClientDecodeError, TelegramAPIError
from aiogram.filters import Filter
from aiogram.types import Message, TelegramObject, User

from bot.telegram.context import UpdateContext
from bot.telegram.texts import BUILT_IN, TextTable
from services.business import conversation_id
from tools.base import Caller

# Telegram's placeholder senders of messages sent on behalf of a chat
GROUP_ANONYMOUS_BOT_ID = 1087968824
CHANNEL_BOT_ID = 136817688
TELEGRAM_SERVICE_ID = 777000
_PLACEHOLDER_USERS = frozenset({GROUP_ANONYMOUS_BOT_ID, CHANNEL_BOT_ID, TELEGRAM_SERVICE_ID})


def conversation_of(message: Message) -> int:
    """The conversation a message belongs to: its chat — for a chat of the owner's
    business account, that chat's own conversation (services/business.py), apart from
    the bot's chat with the same person."""
    if message.business_connection_id:
        return conversation_id(message.business_connection_id, message.chat.id)
    return message.chat.id


def caller_of(message: Message) -> Caller:
    """The sender of `message` and its chat (see the module docstring for chats as
    senders): the one `Caller` that goes on to the chat service and the tools. In a chat
    of the owner's business account the customer is the chat's user, in a one-to-one
    chat, and the chat is its own conversation (`conversation_of`)."""
    if message.sender_chat is not None:
        key, is_chat = message.sender_chat.id, True
    elif message.from_user is not None and message.from_user.id not in _PLACEHOLDER_USERS:
        key, is_chat = message.from_user.id, False
    else:  # no sender, or a placeholder without sender_chat: the chat itself speaks
        key, is_chat = message.chat.id, True
    private = message.chat.type == ChatType.PRIVATE and not is_chat and key == message.chat.id
    return Caller(
        key=key,
        chat_id=conversation_of(message),
        is_chat=is_chat,
        private_chat=private,
        business=message.business_connection_id is not None,
    )


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
    """The sender is one of `user_ids` — a person: never a message sent on behalf of a chat
    (an anonymous admin's `from` is a placeholder shared by every anonymous admin)."""

    def __init__(self, user_ids: frozenset[int]) -> None:
        self._user_ids = user_ids

    async def __call__(self, message: Message) -> bool:
        caller = caller_of(message)
        return not caller.is_chat and caller.key in self._user_ids


class MayStartOver(Filter):
    """/new wipes the conversation of the whole chat: in a private chat the person may, in
    a group only its admins — its owner or an administrator (asked with getChatMember),
    or an anonymous admin writing as the group. Unknown (the check failed) is a no."""

    async def __call__(self, message: Message, bot: Bot) -> bool:
        if message.chat.type == ChatType.PRIVATE:
            return True
        if message.sender_chat is not None:
            return message.sender_chat.id == message.chat.id
        if message.from_user is None:
            return False
        try:
            member = await bot.get_chat_member(message.chat.id, message.from_user.id)
        except (TelegramAPIError, ClientDecodeError):
            return False
        return member.status in (ChatMemberStatus.CREATOR, ChatMemberStatus.ADMINISTRATOR)


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

    Puts `language` (ours: "ru" or "en", by `TextTable.choose`: the user's Telegram
    language when it is one of ours, else DEFAULT_LANGUAGE) and `texts` (the shop's
    effective phrases in it) into the handler data, and with them the update's `ctx`
    (`bot.telegram.context.UpdateContext`) when the update was fed with its `outbox` and
    `inbox_update_id` (bot/telegram/processing.py). It wraps the update, so the data an error
    handler receives carries them too. No user (a channel post, say) means the default
    language, as a missing `language_code` does.
    """

    def __init__(self, table: TextTable = BUILT_IN) -> None:
        self._table = table

    async def __call__(
        self,
        handler: Callable[[TelegramObject, dict[str, Any]], Awaitable[Any]],
        event: TelegramObject,
        data: dict[str, Any],
    ) -> Any:
        user: User | None = data.get("event_from_user")
        language, texts = self._table.choose(user.language_code if user else None)
        data["language"] = language
        data["texts"] = texts
        outbox = data.get("outbox")
        if outbox is not None:
            data["ctx"] = UpdateContext(outbox, data["inbox_update_id"], language, texts)
        return await handler(event, data)
