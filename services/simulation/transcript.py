"""What one run of a scenario showed: the turns as the customer saw them, the tool calls
the model made (with their arguments and results), every model call, the final orders.

The recording model (`RecordingModel`) sits between the chat service and the real model:
it changes nothing, it only notes each request and response, so the run goes through the
same loop, tools and guard as in the bot.
"""

from __future__ import annotations

import json
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field, replace
from typing import Any

from services.llm.types import ChatModel, LLMResponse, Message, ToolChoice
from services.loop import TEXT_CALL_ID_PREFIX
from services.prompt_parts import PARTS, prompt_parts


@dataclass(frozen=True, slots=True)
class ModelCall:
    """One request to the model: what for, what came back, how long, how many tokens."""

    purpose: str  # "chat" (the tool loop) | "text" (summaries)
    finish_reason: str | None = None
    text: str | None = None
    tool_calls: tuple[tuple[str, str, str], ...] = ()  # (id, name, raw arguments)
    # calls the model wrote in its text and the loop read and ran (services/text_calls.py)
    text_calls: tuple[tuple[str, str, str], ...] = ()
    prompt_tokens: int = 0
    completion_tokens: int = 0
    cached_tokens: int = 0
    latency_ms: float = 0.0
    error: str | None = None  # the exception's type when the call failed
    # the request's tokens by part, estimated (services/prompt_parts.py; the summary
    # calls' whole prompt is their "summary")
    parts: Mapping[str, int] = field(default_factory=dict)


@dataclass(slots=True)
class RecordingModel:
    """A `ChatModel` that passes every call to `inner` and notes it (no streaming: the
    loop then asks `complete`, the same request a non-streaming bot sends)."""

    inner: ChatModel
    calls: list[ModelCall] = field(default_factory=list)
    # the tool messages the loop sent back, by call id: what each tool returned
    tool_results: dict[str, str] = field(default_factory=dict)

    @property
    def model_name(self) -> str:
        return self.inner.model_name

    async def complete(
        self,
        messages: Sequence[Message],
        *,
        tools: Sequence[dict[str, Any]] | None = None,
        tool_choice: ToolChoice | None = None,
        parallel_tool_calls: bool | None = None,
    ) -> LLMResponse:
        self._note_results(messages)
        parts = prompt_parts(messages, tools)
        started = time.perf_counter()
        try:
            response = await self.inner.complete(
                messages,
                tools=tools,
                tool_choice=tool_choice,
                parallel_tool_calls=parallel_tool_calls,
            )
        except BaseException as exc:
            failed = ModelCall(
                "chat", error=type(exc).__name__, latency_ms=_ms(started), parts=parts
            )
            self.calls.append(failed)
            raise
        self.calls.append(_noted("chat", response, started, parts))
        return response

    async def complete_text(
        self, messages: Sequence[Message], *, max_tokens: int | None = None
    ) -> LLMResponse:
        asked = sum(prompt_parts(messages, None).values())
        parts = {**dict.fromkeys(PARTS, 0), "summary": asked}
        started = time.perf_counter()
        try:
            response = await self.inner.complete_text(messages, max_tokens=max_tokens)
        except BaseException as exc:
            failed = ModelCall(
                "text", error=type(exc).__name__, latency_ms=_ms(started), parts=parts
            )
            self.calls.append(failed)
            raise
        self.calls.append(_noted("text", response, started, parts))
        return response

    def _note_results(self, messages: Sequence[Message]) -> None:
        """What the loop sent back: each tool result by call id, and the calls it read
        from the last answer's text (they come back as the assistant's structured calls
        under `text_s…` ids; noted on the call that wrote them)."""
        for message in messages:
            if message.get("role") == "assistant":
                self._note_text_calls(message.get("tool_calls") or [])
            if message.get("role") == "tool":
                call_id = message.get("tool_call_id")
                content = message.get("content")
                if isinstance(call_id, str) and isinstance(content, str):
                    self.tool_results[call_id] = content

    def _note_text_calls(self, entries: list[Any]) -> None:
        read = tuple(
            (str(e["id"]), str(e["function"]["name"]), str(e["function"]["arguments"]))
            for e in entries
            if isinstance(e, dict)
            and str(e.get("id", "")).startswith(TEXT_CALL_ID_PREFIX)
            and isinstance(e.get("function"), dict)
        )
        if not read or any(c for call in self.calls for c in call.text_calls if c in read):
            return
        index = next(
            (i for i in range(len(self.calls) - 1, -1, -1) if self.calls[i].purpose == "chat"),
            None,
        )
        if index is not None:
            self.calls[index] = replace(self.calls[index], text_calls=read)


def _ms(started: float) -> float:
    return (time.perf_counter() - started) * 1000.0


def _noted(
    purpose: str, response: LLMResponse, started: float, parts: Mapping[str, int]
) -> ModelCall:
    return ModelCall(
        purpose=purpose,
        finish_reason=response.finish_reason,
        text=response.text,
        tool_calls=tuple((call.id, call.name, call.arguments) for call in response.tool_calls),
        prompt_tokens=response.prompt_tokens or 0,
        completion_tokens=response.completion_tokens or 0,
        cached_tokens=response.cached_tokens or 0,
        latency_ms=_ms(started),
        parts=parts,
    )


@dataclass(frozen=True, slots=True)
class ToolUse:
    """A tool call the model asked for: its raw arguments, parsed when they are JSON, and
    what the tool answered (None when no answer was sent back)."""

    name: str
    raw_arguments: str
    result: str | None
    written: bool = False  # written in the answer's text, read by the loop

    @property
    def arguments(self) -> dict[str, Any]:
        try:
            parsed = json.loads(self.raw_arguments)
        except ValueError:
            return {}
        return parsed if isinstance(parsed, dict) else {}

    @property
    def result_data(self) -> dict[str, Any]:
        """The result's `data` (the tool's answer) when the call succeeded, else {}."""
        try:
            parsed = json.loads(self.result or "")
        except ValueError:
            return {}
        data = parsed.get("data") if isinstance(parsed, dict) else None
        return data if isinstance(data, dict) else {}


@dataclass(frozen=True, slots=True)
class Exchange:
    """One customer message and what the bot answered to it."""

    customer: str
    shown: str  # what the customer saw (the bot's own polite text when there was no answer)
    answer: str | None  # the model's answer, None when the bot showed its own text
    stop_reason: str | None
    error_code: str | None
    handoff: bool
    tools: tuple[ToolUse, ...]
    model_calls: tuple[ModelCall, ...]


@dataclass(frozen=True, slots=True)
class ActionRecord:
    """An action proposed in the run, as its row ended (pending, done, declined, ...)."""

    action: str
    order_id: str
    status: str
    reason: str | None = None


@dataclass(slots=True)
class Transcript:
    exchanges: list[Exchange] = field(default_factory=list)
    customer_calls: list[ModelCall] = field(default_factory=list)  # the simulated customer's
    order_status: dict[str, str | None] = field(default_factory=dict)  # after the run
    actions: list[ActionRecord] = field(default_factory=list)  # after the run
    crash: str | None = None  # the runner or the bot failed: what happened
    note: str | None = None  # e.g. why the conversation ended early
    duration_s: float = 0.0

    @property
    def model_calls(self) -> list[ModelCall]:
        return [call for exchange in self.exchanges for call in exchange.model_calls]

    @property
    def tools(self) -> list[ToolUse]:
        return [tool for exchange in self.exchanges for tool in exchange.tools]

    @property
    def handoff(self) -> bool:
        return any(exchange.handoff for exchange in self.exchanges)


def tool_uses(calls: Sequence[ModelCall], results: dict[str, str]) -> tuple[ToolUse, ...]:
    """The tool calls the model asked for in `calls`, with the results sent back."""
    return tuple(
        ToolUse(name=name, raw_arguments=arguments, result=results.get(call_id), written=written)
        for call in calls
        for written, entries in ((False, call.tool_calls), (True, call.text_calls))
        for call_id, name, arguments in entries
    )
