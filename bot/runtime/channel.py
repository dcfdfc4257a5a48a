"""The sending seam: where a message goes (`ReplyTarget`) and what sends it (`Channel`).

The runtime stores replies, delivers them, shows "typing…" and sends order
notifications without knowing how messages leave: it hands a `Channel` a target and a
stored part (`storage.inbox.StoredReply`: formatted text, its plain fallback, a keyboard
as JSON, or a copy of another message) and reads back a `SendResult`. The Telegram
adapter implements it over its paced, retrying sender (`bot/telegram/channel.py`); a
second channel plugs in by implementing the same three methods.

A reply in the owner's own chats (Telegram Business) is the same channel with a target
that carries the business connection: `ReplyTarget.business_connection_id`. Such a
target takes no drafts (`streams_drafts`), because the Bot API streams drafts only into
the bot's own private chats.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, Literal, Protocol

from storage.inbox import StoredReply

SendStatus = Literal["delivered", "unknown", "failed"]

# Reasons a channel reports that the runtime acts on (short codes, safe to store and log).
# A forum topic that no longer exists (an operator deleted it): the handoff recreates it.
THREAD_NOT_FOUND = "thread_not_found"
# The person blocked the bot, or the account is gone: nothing will reach them again.
FORBIDDEN = "forbidden"
# What this channel cannot send to that target (e.g. a copy through a business connection).
NOT_SUPPORTED = "not_supported"


@dataclass(frozen=True, slots=True)
class ReplyTarget:
    """Where one message goes: a chat, the forum topic in it (None: none), and the
    business connection it is sent on behalf of (None: the bot speaks as itself)."""

    chat_id: int
    thread_id: int | None = None
    business_connection_id: str | None = None

    @property
    def streams_drafts(self) -> bool:
        """Whether a turn's answer may stream into a draft here (never on behalf of an
        owner: drafts exist only in the bot's own private chats)."""
        return self.business_connection_id is None


@dataclass(frozen=True, slots=True)
class Rendered:
    """The same text as the channel's formatted markup (Telegram: HTML) and as what a
    reader sees without formatting (sent instead when the formatting is refused)."""

    html: str
    plain: str

    def __add__(self, other: Rendered) -> Rendered:
        return Rendered(self.html + other.html, self.plain + other.plain)


@dataclass(frozen=True, slots=True)
class SendResult:
    """What happened to one outgoing message.

    ``delivered``: the channel accepted it (``message_id`` is set). ``unknown``: the
    request may have been delivered but the answer was lost; do not resend automatically.
    ``failed``: it was certainly not delivered; ``reason`` is a short code safe to store
    and log (never a token or a raw exception text).
    """

    status: SendStatus
    message_id: int | None = None
    reason: str | None = None

    @property
    def delivered(self) -> bool:
        return self.status == "delivered"


class Channel(Protocol):
    """One way messages leave the bot; implemented by the Telegram adapter."""

    def render(self, markdown: str) -> Sequence[Rendered]:
        """The model's Markdown as this channel's messages (split at its size limit)."""
        ...

    async def send(self, target: ReplyTarget, part: StoredReply) -> SendResult:
        """Send one stored part (its text, or the copy it names) to `target`; the part's
        own `chat_id`/`thread_id` are already resolved into the target."""
        ...

    async def show_typing(self, target: ReplyTarget) -> None:
        """Show "typing…" once (cosmetic: may be skipped under load; may raise)."""
        ...


def reply_target(
    row_chat_id: int, payload: dict[str, Any], part: StoredReply, *, thread_id: int | None
) -> ReplyTarget:
    """Where a part of the reply to an update goes: the chat the part names, else the
    update's own chat — through the update's business connection when it came through
    one (a `business_message`, Bot API 7.2), so the owner's customer gets the answer in
    the owner's chat."""
    if part.chat_id is not None:  # a chat the part names, as the owner if it says so
        return ReplyTarget(part.chat_id, thread_id, part.business_connection_id)
    connection = part.business_connection_id or business_connection_id(payload)
    return ReplyTarget(row_chat_id, thread_id, connection)


def business_connection_id(payload: dict[str, Any]) -> str | None:
    """The business connection an update came through (Bot API `Update.business_message`
    or `edited_business_message`: `Message.business_connection_id`; a press under a
    message in a business chat: its `callback_query.message`), else None."""
    press = payload.get("callback_query")
    pressed = press.get("message") if isinstance(press, dict) else None
    kinds = ("business_message", "edited_business_message")
    for message in (*(payload.get(kind) for kind in kinds), pressed):
        if isinstance(message, dict):
            connection = message.get("business_connection_id")
            if isinstance(connection, str) and connection:
                return connection
    return None
