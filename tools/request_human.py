"""`request_human`: the model hands the conversation to a person at the shop.

The model calls it when the customer asks for a person, or when it cannot help. The
tool only records the request (an open handoff in SQLite, source "model", with the
model's short reason) — durable before the turn's answer is stored, so a crash cannot
lose it — and notes `HandoffRequested` for a handoff it opened; that becomes the turn's
"a person will answer" offer, and the bot then opens the operators' topic and tells the
customer, in their language, with the turn's answer (bot/telegram/handoff.py). Who is handed
over comes from `ToolContext` (the Telegram chat), never from the arguments. A person is
reached only from a private chat between that person and the bot: in a group, or for a
message sent on behalf of a chat, the tool refuses. The tool is registered only when
OPERATOR_CHAT_ID is set. In a chat of the owner's business account the person is the
owner: the tool notes `OwnerAsked` (no operators' handoff) and the bot tells the owner.
"""

from __future__ import annotations

from typing import Annotated, Protocol

from pydantic import BaseModel, ConfigDict, Field, StringConstraints

from tools.base import HandoffRequested, OwnerAsked, Tool, ToolBusinessError, ToolContext

REQUEST_HUMAN = "request_human"
PRIVATE_ONLY = "private_chat_only"

DESCRIPTION = (
    "Hand the chat over to a person from the shop's support team, when the customer asks "
    "for one or you cannot help (a complaint, a problem no tool solves). Then tell the "
    "customer a person will answer in this chat; promise no time."
)


class RequestHumanArguments(BaseModel):
    model_config = ConfigDict(extra="forbid")

    reason: Annotated[
        str, StringConstraints(strip_whitespace=True, min_length=3, max_length=200)
    ] = Field(description="Why, in a few words, for the operator.")


class RequestHumanResult(BaseModel):
    requested: bool
    already_open: bool
    message: str


class HandoffRequests(Protocol):
    """What the tool needs from the handoff service: record one request."""

    async def request_from_model(self, chat_id: int, reason: str) -> int | None:
        """Open a handoff for the chat: its id; None when one was open already."""
        ...


def request_human_tool(
    handoffs: HandoffRequests,
) -> Tool[RequestHumanArguments, RequestHumanResult]:
    async def request_human(
        arguments: RequestHumanArguments, context: ToolContext
    ) -> RequestHumanResult:
        caller = context.caller
        if not caller.private_chat or caller.is_chat:
            raise ToolBusinessError(
                PRIVATE_ONLY,
                "A person can be reached only from a private chat with the bot. Ask the "
                "customer to write to the bot directly and ask for a person there.",
            )
        if caller.business:  # the owner's own chat: the owner is the person, not operators
            context.notes.append(OwnerAsked(reason=arguments.reason))
            return RequestHumanResult(
                requested=True,
                already_open=False,
                message="The shop's owner will answer in this chat.",
            )
        opened = await handoffs.request_from_model(caller.chat_id, arguments.reason)
        if opened is not None:  # the bot tells the customer and briefs the operators
            context.notes.append(HandoffRequested(handoff_id=opened, reason=arguments.reason))
        return RequestHumanResult(
            requested=True,
            already_open=opened is None,
            message="A person from the shop will answer in this chat.",
        )

    return Tool(
        name=REQUEST_HUMAN,
        description=DESCRIPTION,
        arguments_model=RequestHumanArguments,
        result_model=RequestHumanResult,
        handler=request_human,
        timeout_s=5.0,
        read_only=False,
    )
