"""A scripted `ChatModel`: a function from the messages so far to the next response.

Unit tests describe the model's behaviour as a plain function instead of a queue of
canned answers, so a test reads like the conversation it checks:

    def script(messages, tool_choice):
        if messages[-1]["role"] == "tool":
            return text_response("Заказ 8041 в пути.")
        return tool_calls_response(tool_call("get_order_status", {"order_id": "8041"}))

    llm = ScriptedLLM(script)

The script may return an `LLMResponse`, an exception (instance or class) to raise, or
an awaitable of either (to hold a call on an `asyncio.Event`). Every request is
recorded with a deep copy of its messages, so later mutations cannot rewrite history.
"""

from __future__ import annotations

import copy
import inspect
import json
import uuid
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass, replace
from typing import Any, Literal

from services.llm.types import LLMResponse, Message, ToolChoice
from tools.base import ToolCall

ScriptResult = LLMResponse | BaseException | type[BaseException]
Script = Callable[[list[Message], ToolChoice | None], ScriptResult | Awaitable[ScriptResult]]

Usage = tuple[int, int] | None


@dataclass(frozen=True, slots=True)
class ScriptedRequest:
    """One request the double received."""

    kind: Literal["complete", "complete_text"]
    messages: list[Message]
    tools: list[dict[str, Any]] | None
    tool_choice: ToolChoice | None
    parallel_tool_calls: bool | None
    max_tokens: int | None


class ScriptedLLM:
    """Implements `ChatModel`; answers with whatever the script decides."""

    def __init__(self, script: Script, *, model_name: str = "scripted-model") -> None:
        self._script = script
        self._model_name = model_name
        self.requests: list[ScriptedRequest] = []

    @classmethod
    def from_responses(
        cls, *responses: ScriptResult, model_name: str = "scripted-model"
    ) -> ScriptedLLM:
        """Answers in the given order; a request beyond the list fails the test loudly."""
        queue = list(responses)

        def script(messages: list[Message], tool_choice: ToolChoice | None) -> ScriptResult:
            if not queue:
                raise AssertionError(f"ScriptedLLM: unexpected request #{len(messages)} msgs")
            return queue.pop(0)

        return cls(script, model_name=model_name)

    @property
    def model_name(self) -> str:
        return self._model_name

    @property
    def chat_requests(self) -> list[ScriptedRequest]:
        return [r for r in self.requests if r.kind == "complete"]

    async def complete(
        self,
        messages: Sequence[Message],
        *,
        tools: Sequence[dict[str, Any]] | None = None,
        tool_choice: ToolChoice | None = None,
        parallel_tool_calls: bool | None = None,
    ) -> LLMResponse:
        request = ScriptedRequest(
            kind="complete",
            messages=copy.deepcopy(list(messages)),
            tools=copy.deepcopy(list(tools)) if tools is not None else None,
            tool_choice=tool_choice,
            parallel_tool_calls=parallel_tool_calls,
            max_tokens=None,
        )
        return await self._answer(request)

    async def complete_text(
        self, messages: Sequence[Message], *, max_tokens: int | None = None
    ) -> LLMResponse:
        request = ScriptedRequest(
            kind="complete_text",
            messages=copy.deepcopy(list(messages)),
            tools=None,
            tool_choice=None,
            parallel_tool_calls=None,
            max_tokens=max_tokens,
        )
        return await self._answer(request)

    async def aclose(self) -> None:
        return None

    async def _answer(self, request: ScriptedRequest) -> LLMResponse:
        self.requests.append(request)
        result = self._script(copy.deepcopy(request.messages), request.tool_choice)
        if inspect.isawaitable(result):
            result = await result
        if isinstance(result, type) and issubclass(result, BaseException):
            raise result("scripted failure")
        if isinstance(result, BaseException):
            raise result
        if not isinstance(result, LLMResponse):
            raise TypeError(f"script returned {type(result).__name__}, not LLMResponse")
        return replace(
            result,
            model=result.model or self._model_name,
            requested_model=result.requested_model or self._model_name,
        )


def tool_call(name: str, arguments: dict[str, Any] | str, *, id: str | None = None) -> ToolCall:
    """A call as a model would propose it; dict arguments are JSON-encoded."""
    raw = arguments if isinstance(arguments, str) else json.dumps(arguments, ensure_ascii=False)
    return ToolCall(id=id or f"call_{uuid.uuid4().hex[:12]}", name=name, arguments=raw)


def text_response(
    text: str | None,
    *,
    finish_reason: str | None = "stop",
    refusal: str | None = None,
    usage: Usage = (10, 5),
    model: str = "",
    response_id: str | None = None,
) -> LLMResponse:
    """A plain answer (or, with `finish_reason`/`refusal`, a truncated or refused one)."""
    raw: Message = {"role": "assistant", "content": text}
    if refusal is not None:
        raw["refusal"] = refusal
    return _response(
        text=text,
        refusal=refusal,
        tool_calls=(),
        finish_reason=finish_reason,
        usage=usage,
        model=model,
        response_id=response_id,
        raw=raw,
    )


def tool_calls_response(
    *calls: ToolCall,
    text: str | None = None,
    finish_reason: str | None = "tool_calls",
    usage: Usage = (10, 5),
    model: str = "",
    response_id: str | None = None,
) -> LLMResponse:
    """A response asking for the given calls, with the assistant message as a provider sends it."""
    raw: Message = {
        "role": "assistant",
        "content": text,
        "tool_calls": [
            {
                "id": call.id,
                "type": "function",
                "function": {"name": call.name, "arguments": call.arguments},
            }
            for call in calls
        ],
    }
    return _response(
        text=text,
        refusal=None,
        tool_calls=tuple(calls),
        finish_reason=finish_reason,
        usage=usage,
        model=model,
        response_id=response_id,
        raw=raw,
    )


def _response(
    *,
    text: str | None,
    refusal: str | None,
    tool_calls: tuple[ToolCall, ...],
    finish_reason: str | None,
    usage: Usage,
    model: str,
    response_id: str | None,
    raw: Message,
) -> LLMResponse:
    prompt, completion = usage if usage is not None else (None, None)
    total = prompt + completion if prompt is not None and completion is not None else None
    return LLMResponse(
        text=text,
        refusal=refusal,
        tool_calls=tool_calls,
        model=model,
        finish_reason=finish_reason,
        prompt_tokens=prompt,
        completion_tokens=completion,
        total_tokens=total,
        response_id=response_id or f"resp_{uuid.uuid4().hex[:12]}",
        raw_assistant_message=raw,
    )
