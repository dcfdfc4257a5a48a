"""Contracts shared by every tool and by the loop that asks for them.

The model only *proposes* a `ToolCall`; the executor decides whether and how it runs
and always answers with a `ToolOutcome`: a JSON string for the model plus an
`AuditRecord` for the database (a row type, so it lives in `storage.records`). The
caller (`Caller`) lives in `ToolContext`, set by the application from Telegram, never
from model output; it is defined here, in the lowest layer that needs it, and the bot
and the services use this one type. What a tool learned for the front end is a typed
`TurnNote` with its data.
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from enum import StrEnum
from typing import TYPE_CHECKING, Generic, TypeVar

from pydantic import BaseModel

from storage.database import StorageRetry
from storage.records import AuditRecord

if TYPE_CHECKING:
    from storage.shop import ShopRepository
    from tools.shop.directory import ShopDirectory

ArgsT = TypeVar("ArgsT", bound=BaseModel)
ResultT = TypeVar("ResultT", bound=BaseModel)
T = TypeVar("T")


@dataclass(frozen=True, slots=True)
class StorageWait:
    """How a handler waits for the store: through storage faults (a lock held, a full
    disk, a database restart) with the application's `StorageRetry`, and with the tool's
    own timeout paused meanwhile — that timeout bounds the handler's work, not the
    store's outage (the turn deadline still bounds the whole turn). The executor gives
    each call its own; the default neither retries nor pauses."""

    retry: StorageRetry | None = None
    deadline: asyncio.Timeout | None = None

    async def run(self, what: str, access: Callable[[], Awaitable[T]]) -> T:
        """`await access()` as above; `what` names it in the log (no personal data)."""
        loop = asyncio.get_running_loop()
        when = self.deadline.when() if self.deadline is not None else None
        started = loop.time()
        if self.deadline is not None:
            self.deadline.reschedule(None)
        try:
            if self.retry is None:
                return await access()
            return await self.retry.run(what, access)
        finally:
            if self.deadline is not None and when is not None:
                self.deadline.reschedule(when + (loop.time() - started))


class ErrorCode(StrEnum):
    """Codes the model sees in `{"ok": false, "error": {"code": ...}}`."""

    UNKNOWN_TOOL = "unknown_tool"
    INVALID_ARGUMENTS = "invalid_arguments"
    NOT_FOUND = "not_found"
    RATE_LIMITED = "rate_limited"
    TIMEOUT = "timeout"
    UNAVAILABLE = "unavailable"


@dataclass(frozen=True, slots=True)
class ToolCall:
    """One call as the model proposed it: the raw arguments string is untrusted."""

    id: str
    name: str
    arguments: str


@dataclass(frozen=True, slots=True)
class Caller:
    """Who is asking, and where: taken from the Telegram update only
    (`bot.telegram.filters.caller_of`),
    never from the text or the model; the one value that reaches every tool.

    - `key`: the caller's identity key, for access, per-caller limits and records. The
      sender's Telegram user id; for a message sent on behalf of a chat (an anonymous
      group admin, a channel) the id of that chat (negative, so never a person's id).
    - `chat_id`: the chat the message is in (the conversation, the reply's address).
    - `is_chat`: the message was sent on behalf of a chat, not by a known person; such a
      sender never gets a person's access.
    - `private_chat`: a one-to-one chat between this person and the bot, so only they read
      the answer. False in groups, where every member reads it and it enters the group's
      shared history. False is the default: a caller built without saying so gets no
      private data.
    """

    key: int
    chat_id: int
    is_chat: bool = False
    private_chat: bool = False
    business: bool = False  # a chat of the owner's business account: the owner is the person


@dataclass(frozen=True, slots=True)
class OrderMissedNoPhone:
    """An order lookup in a private chat found nothing the caller may see, and the caller
    has no verified phone: the customer may be offered to share one. Noted for EVERY such
    miss — a missing number and someone else's order alike — so it tells nothing about
    whether the order exists."""

    order_id: str


@dataclass(frozen=True, slots=True)
class HandoffRequested:
    """The model asked for a person (`request_human`) and a handoff was opened now: the
    customer is told, the operators get the brief (with the model's `reason`)."""

    handoff_id: int
    reason: str


@dataclass(frozen=True, slots=True)
class OwnerAsked:
    """The model asked for a person (`request_human`) in a chat of the owner's business
    account: no operators' handoff there; the owner is told and the bot pauses in it."""

    reason: str


@dataclass(frozen=True, slots=True)
class ActionProposed:
    """A proposing tool (tools/actions/) found the action allowed and stored it pending:
    the turn ends suspended, and the customer gets the confirmation card of operation
    `operation_id` with its exact effect (`effect`: the words per language)."""

    operation_id: str
    effect: dict[str, str]


@dataclass(frozen=True, slots=True)
class OwnOrderShown:
    """An order lookup in a private chat showed the caller an order that is theirs (not a
    public one): the customer may be offered to hear when it moves."""

    order_id: str


# Facts a tool learned during a turn that the front end may act on (no Telegram here):
# frozen values with their data, collected in `ToolContext.notes` and turned into the
# turn's offers by services/offers.py. A new kind of fact is one more type in this union
# (mypy then names every place that must handle it).
TurnNote = OrderMissedNoPhone | HandoffRequested | OwnerAsked | ActionProposed | OwnOrderShown


@dataclass(frozen=True, slots=True)
class ToolContext:
    """Who is asking and where (`caller`, from the Telegram update), and what the tools
    may use during one turn.

    - `notes`: filled by tools during the turn (`TurnNote`s, in the order noted), read by
      the chat service.
    - `storage_wait`: how the handler reads and writes the store (`StorageWait`).
    - `shop_data`: the results the tools returned this turn (filled by the tool loop); the
      output guard does not count a passage the answer took from them as the instruction.
    - `shop_directory`: where orders are read (tools/shop/directory.py, over the
      `SHOP_BACKEND`); None: the local backend over `shop`, uncached (tests, tools
      built without the application).
    """

    caller: Caller
    shop: ShopRepository
    turn_id: str | None = None
    session_id: int | None = None
    notes: list[TurnNote] = field(default_factory=list)
    storage_wait: StorageWait = field(default_factory=StorageWait)
    shop_data: list[str] = field(default_factory=list)
    shop_directory: ShopDirectory | None = None


class LookupResult(BaseModel):
    """The result of a tool that looks something up in the shop's data; the subclass has a
    `found: bool` field (declared there, so it keeps its place in the JSON).

    `found` False is still an ordinary result for the model, but the audit records it as
    the shop's data saying no (`business_error`, code `not_found`): /stats counts it
    under "said no", never under "done".
    """

    def found_nothing(self) -> bool:
        return getattr(self, "found", True) is False


@dataclass(frozen=True, slots=True)
class ToolOutcome:
    """The executor's answer to one call: `content` goes to the model as a `tool` message."""

    call_id: str
    tool_name: str
    content: str
    ok: bool
    audit: AuditRecord


class ToolBusinessError(Exception):
    """Raised by a handler for a problem the model must explain (e.g. `rate_limited`)."""

    def __init__(self, code: str, message: str) -> None:
        super().__init__(message)
        self.code = code
        self.message = message


Handler = Callable[[ArgsT, ToolContext], Awaitable[ResultT]]


@dataclass(frozen=True, slots=True)
class Tool(Generic[ArgsT, ResultT]):
    """A tool definition; the registry validates it on registration."""

    name: str
    description: str
    arguments_model: type[ArgsT]
    result_model: type[ResultT]
    handler: Handler[ArgsT, ResultT]
    timeout_s: float = 5.0
    read_only: bool = True
    # offered to the model now? (an action the connected shop does not do: no); None: always
    offered: Callable[[], bool] | None = None
