"""Contracts shared by every tool and by the loop that asks for them.

The model only *proposes* a `ToolCall`; the executor decides whether and how it runs
and always answers with a `ToolOutcome`: a JSON string for the model plus an
`AuditRecord` for the database (a row type, so it lives in `storage.records`). Caller
identity lives in `ToolContext`, set by the application from Telegram, never from model
output.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from enum import StrEnum
from typing import TYPE_CHECKING, Generic, TypeVar

from pydantic import BaseModel

from storage.records import AuditRecord

if TYPE_CHECKING:
    from storage.shop import ShopRepository

ArgsT = TypeVar("ArgsT", bound=BaseModel)
ResultT = TypeVar("ResultT", bound=BaseModel)


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


class TurnNote(StrEnum):
    """Facts a tool learned during a turn that the front end may act on (no Telegram here).

    - `ORDER_MISSED_NO_PHONE`: an order lookup in a private chat found nothing the caller
      may see, and the caller has no verified phone; the bot then offers to share one.
      Set for EVERY such miss — a missing number and someone else's order alike — so it
      tells nothing about whether the order exists.
    """

    ORDER_MISSED_NO_PHONE = "order_missed_no_phone"


@dataclass(frozen=True, slots=True)
class ToolContext:
    """Who is asking, and where (from the Telegram update), and what data the tools may use.

    - `user_id`: the caller's identity key, for access and per-caller limits. The sender's
      Telegram user id; for a message sent on behalf of a chat (an anonymous group admin,
      a channel) the id of that chat (negative, so never a person's id).
    - `private_chat`: the conversation is a one-to-one chat between this person and the
      bot, so only they read the answer. False in groups, where every member reads it
      and it enters the group's shared history. False is the default: a context built
      without saying so gets no private data.
    - `sender_is_chat`: the message was sent on behalf of a chat, not by a known person.
    - `notes`: filled by tools during the turn (`TurnNote`), read by the chat service.
    """

    user_id: int
    chat_id: int
    shop: ShopRepository
    turn_id: str | None = None
    session_id: int | None = None
    private_chat: bool = False
    sender_is_chat: bool = False
    notes: set[TurnNote] = field(default_factory=set)


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
