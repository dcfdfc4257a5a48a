"""Business mode's decisions: answering in the chats of the owner's own Telegram account.

Telegram Business ("Chat Automation" in the app) connects the bot to a person's account;
the bot then receives that account's private chats (`business_message`) and may answer
in them as the owner while the connection's rights allow (`can_reply`: chats with an
incoming message in the last 24 hours). What this module decides, with no Telegram in it:

- **who is served**: only connections of the configured owners (BUSINESS_OWNER_IDS,
  default ADMIN_IDS); any other account's connection is not stored and gets nothing;
- **the conversation** of a customer's chat: `conversation_id(connection, chat)`, a
  number below `BUSINESS_CHATS_BELOW` that keys its session, turns and actions apart from
  any bot chat with the same id (Telegram says a business chat is independent of a bot
  chat that shares its id);
- **the owner takes over**: a message the owner wrote by hand in a chat (not one the bot
  sent on their behalf) silences the bot there for BUSINESS_PAUSE_HOURS; `/ai on` or the
  button gives it back. A turn already running when the owner wrote is not sent
  (`owner_wrote`, noted the moment the owner's message is stored);
- **deleted messages**: a customer's message deleted before its answer was posted is not
  answered (`was_deleted`, noted the moment the deletion is stored; a waiting draft is
  discarded), and its turn leaves the conversation's memory;
- **the window**: a message older than 24 hours is not answered (Telegram would refuse);
- **approval mode** (per connection): the answer (with the action card the turn
  proposed, if any) becomes a draft the owner sends, rewrites or discards; each draft is
  decided once.
"""

from __future__ import annotations

import enum
import hashlib
import logging
import secrets
import time
from collections.abc import Callable
from dataclasses import dataclass

from storage.business import (
    DISCARDED,
    EDITING,
    SENT,
    WAITING,
    BusinessRepository,
    Connection,
    Draft,
)

log = logging.getLogger(__name__)

# Conversation ids of business chats lie below this (Telegram's chat ids have at most 52
# significant bits, so no bot chat is ever here).
BUSINESS_CHATS_BELOW = -(2**62)
REPLY_WINDOW_S = 24 * 3600.0
_DELETIONS_KEPT_S = 3600.0


def conversation_id(connection_id: str, chat_id: int) -> int:
    """The bot's id of a customer's chat of a business connection (stable, no lookup)."""
    digest = hashlib.blake2b(f"{connection_id}:{chat_id}".encode(), digest_size=8).digest()
    return BUSINESS_CHATS_BELOW - 1 - (int.from_bytes(digest, "big") >> 2)


def is_business_conversation(chat_id: int) -> bool:
    return chat_id < BUSINESS_CHATS_BELOW


class Change(enum.Enum):
    """What a `business_connection` update changed."""

    NOT_OWNER = "not_owner"  # another account: ignored
    CONNECTED = "connected"
    DISCONNECTED = "disconnected"
    REPLY_REVOKED = "reply_revoked"
    REPLY_GRANTED = "reply_granted"
    UNCHANGED = "unchanged"


class Verdict(enum.Enum):
    """What to do with a business message."""

    UNKNOWN_CONNECTION = "unknown_connection"  # ask Telegram (getBusinessConnection)
    NOT_SERVED = "not_served"  # the connection is off or not an owner's
    CANNOT_REPLY = "cannot_reply"  # can_reply revoked
    FROM_BOT = "from_bot"  # the bot's own message on the owner's behalf
    OWNER_WROTE = "owner_wrote"  # the owner took over: silent for a while
    PAUSED = "paused"
    TOO_OLD = "too_old"  # outside the 24-hour window
    ANSWER = "answer"
    DRAFT = "draft"  # approval mode: the owner decides


@dataclass(frozen=True, slots=True)
class Incoming:
    """A business message as far as the decision needs it."""

    connection_id: str
    chat_id: int
    from_id: int | None
    sent_by_bot: bool
    date: float


@dataclass(frozen=True, slots=True)
class DraftCard:
    """The action card a drafted turn proposed: its operation, its words (the exact
    effect) and its keyboard (JSON), kept with the draft until the owner decides."""

    operation_id: str
    words: str
    markup: str


@dataclass(frozen=True, slots=True)
class Decision:
    verdict: Verdict
    connection: Connection | None = None
    paused_until: float | None = None
    newly_paused: bool = False  # the owner's message began the silence (not extended it)


class BusinessService:
    def __init__(
        self,
        repo: BusinessRepository,
        *,
        owners: frozenset[int],
        pause_s: float,
        approval: bool,
        clock: Callable[[], float] = time.time,
    ) -> None:
        self._repo = repo
        self._owners = owners
        self._pause_s = pause_s
        self._approval = approval
        self._clock = clock
        # (connection, chat) → when the owner's own message was stored (see `owner_wrote`)
        self._owner_wrote: dict[tuple[str, int], float] = {}
        # (connection, chat, message) → when the customer's deletion of it was stored
        self._deleted: dict[tuple[str, int, int], float] = {}

    @property
    def owners(self) -> frozenset[int]:
        return self._owners

    async def connected(self, connection: Connection) -> Change:
        """A `business_connection` update: stored when it is an owner's; what changed."""
        if connection.owner_id not in self._owners:
            return Change.NOT_OWNER
        fresh = Connection(
            connection.connection_id,
            connection.owner_id,
            connection.owner_chat_id,
            connection.enabled,
            connection.can_reply,
            approval=self._approval,
        )
        before = await self._repo.save_connection(fresh)
        if not connection.enabled:
            return Change.DISCONNECTED if before is None or before.enabled else Change.UNCHANGED
        if before is None or not before.enabled:
            return Change.CONNECTED if connection.can_reply else Change.REPLY_REVOKED
        if before.can_reply and not connection.can_reply:
            return Change.REPLY_REVOKED
        if connection.can_reply and not before.can_reply:
            return Change.REPLY_GRANTED
        return Change.UNCHANGED

    def note_stored(self, connection_id: str, chat_id: int, from_id: int | None) -> None:
        """Right after a business message is stored (before its turn in the queue): the
        owner's own message stops a turn that is running in that chat."""
        if from_id is not None and from_id in self._owners and from_id != chat_id:
            self._owner_wrote[(connection_id, chat_id)] = self._clock()

    def owner_wrote(self, connection_id: str, chat_id: int, since: float) -> bool:
        """The owner wrote in the chat after `since` (the turn's start): no answer."""
        wrote = self._owner_wrote.get((connection_id, chat_id))
        return wrote is not None and wrote >= since

    def note_deleted(self, connection_id: str, chat_id: int, message_ids: list[int]) -> None:
        """Right after a deletion is stored (before its turn in the queue): a message
        whose turn is running or waiting is not answered (`was_deleted`). Kept for an
        hour (a turn takes far less)."""
        now = self._clock()
        for key in [k for k, at in self._deleted.items() if now - at > _DELETIONS_KEPT_S]:
            del self._deleted[key]
        for message_id in message_ids:
            self._deleted[(connection_id, chat_id, message_id)] = now

    def was_deleted(self, connection_id: str, chat_id: int, message_id: int) -> bool:
        """The customer deleted this message before its answer was posted."""
        return (connection_id, chat_id, message_id) in self._deleted

    async def not_read(self, turn_id: str | None, *, deleted: bool) -> None:
        """A turn whose answer was not posted (the owner wrote meanwhile, or the customer
        deleted the message) leaves the conversation's memory: its answer, and the
        question too when the customer deleted it (so the model never acts on what they
        took back)."""
        if turn_id is not None:
            await self._repo.forget_turn(turn_id, question=deleted)

    async def decide(self, message: Incoming) -> Decision:
        connection = await self._repo.connection(message.connection_id)
        if connection is None:
            return Decision(Verdict.UNKNOWN_CONNECTION)
        if not connection.enabled or connection.owner_id not in self._owners:
            return Decision(Verdict.NOT_SERVED, connection)
        if message.sent_by_bot:
            return Decision(Verdict.FROM_BOT, connection)
        chat = conversation_id(message.connection_id, message.chat_id)
        if message.from_id == connection.owner_id:
            now = self._clock()
            known = await self._repo.chat(message.connection_id, message.chat_id)
            was_paused = known is not None and (known.paused_until or 0.0) > now
            until = now + self._pause_s
            await self._repo.pause(chat, message.connection_id, message.chat_id, until)
            return Decision(Verdict.OWNER_WROTE, connection, until, newly_paused=not was_paused)
        if not connection.can_reply:
            return Decision(Verdict.CANNOT_REPLY, connection)
        await self._repo.note_chat(chat, message.connection_id, message.chat_id)
        known = await self._repo.chat(message.connection_id, message.chat_id)
        now = self._clock()
        if known is not None and known.paused_until is not None and known.paused_until > now:
            return Decision(Verdict.PAUSED, connection, known.paused_until)
        if now - message.date > REPLY_WINDOW_S:
            return Decision(Verdict.TOO_OLD, connection)
        return Decision(Verdict.DRAFT if connection.approval else Verdict.ANSWER, connection)

    async def owner_asked(self, message: Incoming) -> float:
        """The model asked for a person in this chat: the same pause as the owner writing
        (until the owner gives it back or the pause ends); its end."""
        until = self._clock() + self._pause_s
        chat = conversation_id(message.connection_id, message.chat_id)
        await self._repo.pause(chat, message.connection_id, message.chat_id, until)
        return until

    async def give_back(self, owner_id: int, chat_id: int | None = None) -> int:
        """`/ai on` (every chat) or the button (one chat): the bot answers again."""
        ids = [c.connection_id for c in await self._repo.of_owner(owner_id)]
        for key in [k for k in self._owner_wrote if k[0] in ids]:
            if chat_id is None or key[1] == chat_id:
                del self._owner_wrote[key]
        return await self._repo.resume(ids, chat_id)

    async def set_approval(self, owner_id: int, approval: bool) -> int:
        return await self._repo.set_approval(owner_id, approval)

    async def connection(self, connection_id: str) -> Connection | None:
        return await self._repo.connection(connection_id)

    async def connections_of(self, owner_id: int) -> list[Connection]:
        return await self._repo.of_owner(owner_id)

    # --- approval mode ----------------------------------------------------------------
    async def new_draft(
        self,
        message: Incoming,
        message_id: int,
        text: str,
        turn_id: str | None = None,
        card: DraftCard | None = None,
    ) -> Draft:
        """The answer (and the action card the turn proposed, if any) waits for the
        owner: the customer sees nothing, so the card cannot be pressed until Send."""
        draft = Draft(
            draft_id=secrets.token_hex(8),
            connection_id=message.connection_id,
            chat_id=message.chat_id,
            message_id=message_id,
            text=text,
            status=WAITING,
            asked_at=message.date,
            turn_id=turn_id,
            operation_id=None if card is None else card.operation_id,
            card=None if card is None else card.words,
            card_markup=None if card is None else card.markup,
        )
        await self._repo.add_draft(draft)
        return draft

    async def draft(self, draft_id: str) -> Draft | None:
        return await self._repo.draft(draft_id)

    def in_window(self, draft: Draft) -> bool:
        return self._clock() - draft.asked_at <= REPLY_WINDOW_S

    async def send(self, draft_id: str, text: str | None = None) -> bool:
        """Send (or send the owner's rewrite): True once; False when already decided."""
        return await self._repo.move_draft(draft_id, to=SENT, from_=(WAITING, EDITING), text=text)

    async def discard(self, draft_id: str) -> bool:
        return await self._repo.move_draft(draft_id, to=DISCARDED, from_=(WAITING, EDITING))

    async def edit(self, draft_id: str) -> bool:
        return await self._repo.move_draft(draft_id, to=EDITING, from_=(WAITING,))

    async def editing(self, owner_id: int) -> Draft | None:
        ids = [c.connection_id for c in await self._repo.of_owner(owner_id)]
        return await self._repo.editing(ids)

    async def deleted(self, connection_id: str, chat_id: int, message_ids: list[int]) -> int:
        """The customer deleted messages: drafts answering them are discarded, as by the
        owner's Discard (their action cards expire), and their turns leave the history,
        question and answer. A message already answered keeps its answer."""
        return await self._repo.discard_for_messages(connection_id, chat_id, message_ids)

    async def questions_by_channel(self, since: float) -> tuple[int, int]:
        return await self._repo.questions_by_channel(since, BUSINESS_CHATS_BELOW)
