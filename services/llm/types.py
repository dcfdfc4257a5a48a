"""Typed view of one model call, shared by the real client and the test doubles."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any, Literal, Protocol

from tools.base import ToolCall

Message = dict[str, Any]
ToolChoice = Literal["auto", "none", "required"]


@dataclass(frozen=True, slots=True)
class LLMResponse:
    """What one Chat Completions call returned, reduced to what the loop needs."""

    text: str | None
    refusal: str | None
    tool_calls: tuple[ToolCall, ...]
    model: str
    finish_reason: str | None
    prompt_tokens: int | None = None
    completion_tokens: int | None = None
    total_tokens: int | None = None
    # input tokens served from the provider's prompt cache (part of prompt_tokens);
    # None when the provider does not report them
    cached_tokens: int | None = None
    response_id: str | None = None
    latency_ms: float = 0.0
    requested_model: str | None = None  # the primary model; differs from `model` on fallback
    raw_assistant_message: Message | None = field(default=None, compare=False)


class ChatModel(Protocol):
    """Anything that answers chat requests: the AsyncOpenAI client or a scripted double."""

    @property
    def model_name(self) -> str: ...

    async def complete(
        self,
        messages: Sequence[Message],
        *,
        tools: Sequence[dict[str, Any]] | None = None,
        tool_choice: ToolChoice | None = None,
        parallel_tool_calls: bool | None = None,
    ) -> LLMResponse: ...

    async def complete_text(
        self, messages: Sequence[Message], *, max_tokens: int | None = None
    ) -> LLMResponse: ...


class StepListener(Protocol):
    """Told about one streamed model step as it arrives (services.answer_stream.DraftRelay).

    Called from inside the request, so both must return at once (no I/O, no waiting).
    """

    def on_text(self, text: str) -> None:
        """The step's text so far (the whole of it, not the delta)."""

    def on_tool_call(self) -> None:
        """The step asks for a tool: it is not an answer, whatever text it had."""


@dataclass(frozen=True, slots=True)
class ModelCheck:
    """The start-up check of the model endpoint (`OpenAIChatModel.check`).

    `listed` is False when the endpoint does not list its models, so nothing could be
    checked (`detail` says why); otherwise `missing` holds the configured models (the
    primary first, then the fallbacks) that the endpoint does not offer.
    """

    listed: bool
    missing: tuple[str, ...] = ()
    detail: str = ""
