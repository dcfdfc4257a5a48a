"""Streamed completions through the real AsyncOpenAI client against the fake's SSE, and the
loop's streaming and stop on top of it."""

from __future__ import annotations

import asyncio
import json
from collections.abc import AsyncIterator
from typing import Any

import pytest

from services.llm.client import OpenAIChatModel
from services.llm.errors import LLMRequestRejected, LLMUnavailable
from services.loop import BoundedToolLoop
from services.loop_types import StopReason
from tests.fakes.openai_server import (
    FakeOpenAIServer,
    by_model,
    completion,
    error,
    fake_call,
    sequence,
    stream_chunks,
)
from tests.waits import OUTER_LIMIT_S
from tools.base import Caller, ToolContext
from tools.executor import ToolExecutor
from tools.factory import build_registry

USER = [{"role": "user", "content": "Где заказ 8041?"}]
TOOLS = [
    {
        "type": "function",
        "function": {
            "name": "get_order_status",
            "parameters": {"type": "object", "properties": {"order_id": {"type": "string"}}},
        },
    }
]


class Listener:
    """Records what a streamed step told it."""

    def __init__(self, until: str | None = None) -> None:
        self.texts: list[str] = []
        self.tool_calls = 0
        self._until = until
        self.reached = asyncio.Event()  # set once the text `until` arrived

    def on_text(self, text: str) -> None:
        self.texts.append(text)
        if text == self._until:
            self.reached.set()

    def on_tool_call(self) -> None:
        self.tool_calls += 1


@pytest.fixture
async def client(fake_openai: FakeOpenAIServer) -> AsyncIterator[OpenAIChatModel]:
    model = OpenAIChatModel(
        api_key="sk-test",
        model="primary",
        base_url=fake_openai.base_url,
        fallback_models=("backup",),
        max_retries=0,
        timeout_s=5,
    )
    try:
        yield model
    finally:
        await model.aclose()


async def test_text_deltas_reach_the_listener_and_usage_comes_from_the_last_chunk(
    fake_openai: FakeOpenAIServer, client: OpenAIChatModel
) -> None:
    fake_openai.handler = lambda body: completion(
        text="Заказ 8041 в пути.", usage=(40, 6), id="chatcmpl-s"
    )
    listener = Listener()
    response = await client.stream_complete(USER, listener=listener, tools=TOOLS)

    assert listener.texts == ["Заказ", "Заказ 8041", "Заказ 8041 в", "Заказ 8041 в пути."]
    assert listener.tool_calls == 0
    assert response.text == "Заказ 8041 в пути."
    assert response.finish_reason == "stop"
    assert (response.prompt_tokens, response.completion_tokens, response.total_tokens) == (
        40,
        6,
        46,
    )
    assert response.response_id == "chatcmpl-s"
    assert response.raw_assistant_message == {"role": "assistant", "content": "Заказ 8041 в пути."}
    [body] = fake_openai.requests
    assert body["stream"] is True and body["stream_options"] == {"include_usage": True}
    assert body["tools"] == TOOLS  # the same body as a whole request, plus the stream fields


async def test_tool_call_deltas_are_assembled_and_the_step_is_not_shown(
    fake_openai: FakeOpenAIServer, client: OpenAIChatModel
) -> None:
    fake_openai.handler = lambda body: completion(
        text="Сейчас посмотрю",
        tool_calls=[
            fake_call("get_order_status", {"order_id": "8041"}, id="call_a"),
            fake_call("get_order_status", {"order_id": "8042"}, id="call_b"),
        ],
    )
    listener = Listener()
    response = await client.stream_complete(USER, listener=listener, tools=TOOLS)

    assert [(c.id, c.name, json.loads(c.arguments)) for c in response.tool_calls] == [
        ("call_a", "get_order_status", {"order_id": "8041"}),
        ("call_b", "get_order_status", {"order_id": "8042"}),
    ]
    assert response.finish_reason == "tool_calls"
    assert listener.tool_calls == 2
    raw = response.raw_assistant_message
    assert raw is not None and [c["id"] for c in raw["tool_calls"]] == ["call_a", "call_b"]


async def test_usage_stays_unknown_when_the_provider_sends_none(
    fake_openai: FakeOpenAIServer, client: OpenAIChatModel
) -> None:
    fake_openai.handler = lambda body: completion(text="Да.", usage=None)
    response = await client.stream_complete(USER, listener=Listener())
    assert response.text == "Да."
    assert (response.prompt_tokens, response.completion_tokens) == (None, None)


async def test_a_provider_that_refuses_streaming_gets_whole_requests_from_then_on(
    fake_openai: FakeOpenAIServer, client: OpenAIChatModel
) -> None:
    fake_openai.refuse_streaming = True
    fake_openai.handler = lambda body: completion(text="Целиком.")
    listener = Listener()
    first = await client.stream_complete(USER, listener=listener)
    second = await client.stream_complete(USER, listener=listener)

    assert (first.text, second.text) == ("Целиком.", "Целиком.")
    assert [bool(body.get("stream")) for body in fake_openai.requests] == [True, False, False]
    assert client.streaming is False
    assert listener.texts == []


async def test_a_rejected_request_that_also_fails_whole_keeps_streaming_on(
    fake_openai: FakeOpenAIServer, client: OpenAIChatModel
) -> None:
    fake_openai.handler = lambda body: error(400, "bad tool schema")
    with pytest.raises(LLMRequestRejected):
        await client.stream_complete(USER, listener=Listener())
    assert client.streaming is True


async def test_a_failing_stream_falls_back_to_the_next_model(
    fake_openai: FakeOpenAIServer, client: OpenAIChatModel
) -> None:
    fake_openai.handler = by_model(
        {"primary": error(503), "backup": completion(text="Ответ резервной модели")}
    )
    response = await client.stream_complete(USER, listener=Listener())
    assert (response.model, response.text) == ("backup", "Ответ резервной модели")


async def test_a_stream_that_breaks_off_is_unavailable(
    fake_openai: FakeOpenAIServer, client: OpenAIChatModel
) -> None:
    fake_openai.handler = sequence(completion(text="не JSON"), completion(text="не JSON"))

    original = fake_openai._stream

    async def broken(request: Any, body: Any, reply: Any, arrived: float) -> Any:
        from aiohttp import web

        response = web.StreamResponse(headers={"Content-Type": "text/event-stream"})
        await response.prepare(request)
        await response.write(b"data: {not json\n\n")
        await response.write_eof()
        return response

    fake_openai._stream = broken  # type: ignore[method-assign]
    try:
        with pytest.raises(LLMUnavailable):
            await client.stream_complete(USER, listener=Listener())
    finally:
        fake_openai._stream = original  # type: ignore[method-assign]


def test_the_fake_streams_like_openai() -> None:
    body = completion(text="a b", usage=(1, 2)).body
    body["model"] = "m"
    chunks = stream_chunks(body)
    assert [c["choices"][0]["delta"] for c in chunks[:3]] == [
        {"role": "assistant", "content": ""},
        {"content": "a"},
        {"content": " b"},
    ]
    assert chunks[-2]["choices"][0]["finish_reason"] == "stop"
    assert chunks[-1]["choices"] == [] and chunks[-1]["usage"]["total_tokens"] == 3
    assert stream_chunks(body, include_usage=False)[-1]["choices"]


# ----------------------------------------------------------------- the loop on top of it


def _context() -> ToolContext:
    return ToolContext(caller=Caller(key=1, chat_id=1), shop=None, turn_id="t1")  # type: ignore[arg-type]


def _loop(client: OpenAIChatModel) -> BoundedToolLoop:
    registry = build_registry()
    return BoundedToolLoop(client, registry, ToolExecutor(registry), max_steps=3)


async def test_the_loop_streams_the_answer_and_stops_with_the_text_so_far(
    fake_openai: FakeOpenAIServer, client: OpenAIChatModel
) -> None:
    never = asyncio.Event()
    fake_openai.handler = lambda body: completion(
        text="Первая часть и остальное", pause_after=2, hold=never
    )
    listener = Listener(until="Первая часть")
    stop = asyncio.Event()
    run = asyncio.create_task(
        _loop(client).run(USER, _context(), prompt_ref="p@1", listener=listener, stop=stop)
    )
    await asyncio.wait_for(listener.reached.wait(), OUTER_LIMIT_S)
    assert not run.done()
    stop.set()
    result = await asyncio.wait_for(run, OUTER_LIMIT_S)

    assert (result.text, result.stop_reason) == ("Первая часть", StopReason.STOPPED)
    [call] = result.trace.model_calls
    assert (call.status, call.error_code) == ("error", "cancelled")


async def test_without_a_stop_the_loop_answers_as_before(
    fake_openai: FakeOpenAIServer, client: OpenAIChatModel
) -> None:
    fake_openai.handler = lambda body: completion(text="Готово.")
    result = await _loop(client).run(
        USER, _context(), prompt_ref="p@1", listener=Listener(), stop=asyncio.Event()
    )
    assert (result.text, result.stop_reason) == ("Готово.", StopReason.COMPLETED)
    assert result.trace.prompt_tokens == 12
