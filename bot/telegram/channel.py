"""Telegram's `Channel` (bot/runtime/channel.py): how the runtime's messages leave.

Over the `Sender` (pacing, retries, the plain-text fallback): a stored part is a copy
(`copyMessage`) or a text with its keyboard (`sendMessage`, the keyboard read back from
its stored JSON); "typing…" is `sendChatAction`. A target's business connection goes
with the text and the chat action, so a reply in an owner's own chat (Telegram
Business) leaves as the owner; the Bot API copies nothing through one (`NOT_SUPPORTED`).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from aiogram.enums import ChatAction
from aiogram.methods import SendChatAction
from aiogram.types import Message

from bot.runtime.channel import NOT_SUPPORTED, Rendered, ReplyTarget, SendResult
from bot.telegram.formatting import markdown_to_messages
from bot.telegram.keyboards import markup_from_json
from bot.telegram.sender import Sender
from storage.inbox import StoredReply


class TelegramChannel:
    """The Bot API as a `Channel`."""

    def __init__(self, sender: Sender) -> None:
        self._sender = sender

    def render(self, markdown: str) -> Sequence[Rendered]:
        return markdown_to_messages(markdown)

    async def send(self, target: ReplyTarget, part: StoredReply) -> SendResult:
        if part.copy_message_id is not None and part.copy_from_chat_id is not None:
            if target.business_connection_id is not None:
                return SendResult(status="failed", reason=NOT_SUPPORTED)
            return await self._sender.copy_message(
                target.chat_id,
                from_chat_id=part.copy_from_chat_id,
                message_id=part.copy_message_id,
                message_thread_id=target.thread_id,
            )
        where: dict[str, Any] = {}  # the usual answer: no topic or connection argument
        if target.thread_id is not None:
            where["message_thread_id"] = target.thread_id
        if target.business_connection_id is not None:
            where["business_connection_id"] = target.business_connection_id
        return await self._sender.send_text(
            target.chat_id,
            part.html,
            parse_mode="HTML",
            plain_text=part.plain,
            reply_to_message_id=part.reply_to_message_id,
            reply_markup=markup_from_json(part.reply_markup),
            **where,
        )

    async def show_typing(self, target: ReplyTarget) -> None:
        await self._sender.call(
            SendChatAction(
                chat_id=target.chat_id,
                action=ChatAction.TYPING,
                business_connection_id=target.business_connection_id,
            )
        )


def reply_target_of(message: Message) -> ReplyTarget:
    """Where an answer to `message` goes: its chat, through the business connection it
    came through, if any (then as the owner)."""
    return ReplyTarget(message.chat.id, business_connection_id=message.business_connection_id)
