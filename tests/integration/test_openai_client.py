"""OpenAIChatModel through the real AsyncOpenAI client against the fake server."""

from __future__ import annotations

import asyncio
import json
from collections.abc import AsyncIterator
from typing import Any

import openai
import pytest
from openai import AsyncOpenAI

from services.llm.client import OpenAIChatModel
from services.llm.errors import (
    LLMAuthenticationError,
    LLMRateLimited,
    LLMRequestRejected,
    LLMTimeout,
    LLMUnavailable,
)
from tests.fakes.openai_server import (
    FakeOpenAIServer,
    FakeReply,
    by_model,
    completion,
    error,
    fake_call,
    sequence,
)

API_KEY = "sk-test-secret-key-123"
TOOLS = [
    {
        "type": "function",
        "function": {
            "name": "get_order_status",
            "description": "status",
            "strict": True,
            "parameters": {
                "type": "object",
                "properties": {"order_id": {"type": "string"}},
                "required": ["order_id"],
                "additionalProperties": False,
            },
        },
    }
]
USER = [{"role": "user", "content": "Где заказ 8041?"}]
# A second model call of a turn: instruction, history, question, a tool call and its result.
CONVERSATION: list[dict[str, Any]] = [
    {"role": "system", "content": "You are the support assistant of the shop."},
    {"role": "user", "content": "Здравствуйте!"},
    {"role": "assistant", "content": "Здравствуйте! Чем могу помочь?"},
    {"role": "user", "content": "Где заказ 8041?"},
    {
        "role": "assistant",
        "content": None,
        "tool_calls": [
            {
                "id": "call_1",
                "type": "function",
                "function": {"name": "get_order_status", "arguments": '{"order_id": "8041"}'},
            }
        ],
    },
    {"role": "tool", "tool_call_id": "call_1", "content": '{"ok": true, "data": {"found": true}}'},
]


@pytest.fixture
async def client(fake_openai: FakeOpenAIServer) -> AsyncIterator[OpenAIChatModel]:
    model = OpenAIChatModel(
        api_key=API_KEY,
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


async def test_tool_call_response_is_typed_and_the_request_carries_the_tool_options(
    fake_openai: FakeOpenAIServer, client: OpenAIChatModel
) -> None:
    fake_openai.handler = lambda body: completion(
        tool_calls=[fake_call("get_order_status", '{"order_id": "80', id="call_1")],
        usage=(50, 9),
        id="chatcmpl-1",
    )
    response = await client.complete(
        USER, tools=TOOLS, tool_choice="auto", parallel_tool_calls=False
    )

    [call] = response.tool_calls
    assert (call.id, call.name, call.arguments) == (
        "call_1",
        "get_order_status",
        '{"order_id": "80',
    )
    assert response.finish_reason == "tool_calls"
    assert (response.prompt_tokens, response.completion_tokens, response.total_tokens) == (
        50,
        9,
        59,
    )
    assert (response.response_id, response.model, response.requested_model) == (
        "chatcmpl-1",
        "primary",
        "primary",
    )
    assert response.raw_assistant_message == {  # never null: llama-cpp-python refuses it
        "role": "assistant",
        "content": "",
        "tool_calls": [
            {
                "id": "call_1",
                "type": "function",
                "function": {"name": "get_order_status", "arguments": '{"order_id": "80'},
            }
        ],
    }
    [body] = fake_openai.requests
    assert body["model"] == "primary"
    assert body["tools"] == TOOLS
    assert body["tool_choice"] == "auto"
    assert body["parallel_tool_calls"] is False
    assert fake_openai.headers[0]["Authorization"] == f"Bearer {API_KEY}"


async def test_without_tools_no_tool_options_are_sent(
    fake_openai: FakeOpenAIServer, client: OpenAIChatModel
) -> None:
    fake_openai.handler = lambda body: completion(text="Кратко.", usage=None)
    await client.complete(USER, tools=None, tool_choice="auto", parallel_tool_calls=True)
    response = await client.complete_text(USER, max_tokens=200)

    for body in fake_openai.requests:
        assert not {"tools", "tool_choice", "parallel_tool_calls"} & body.keys()
    assert fake_openai.requests[1]["max_completion_tokens"] == 200
    assert response.text == "Кратко."
    assert (response.prompt_tokens, response.completion_tokens, response.total_tokens) == (
        None,
        None,
        None,
    )


async def test_refusal_is_reported(fake_openai: FakeOpenAIServer, client: OpenAIChatModel) -> None:
    fake_openai.handler = lambda body: completion(refusal="I can't help with that.")
    response = await client.complete(USER, tools=TOOLS, tool_choice="auto")
    assert response.refusal == "I can't help with that."
    assert response.text is None


@pytest.mark.parametrize(
    ("status", "expected"),
    [
        (400, LLMRequestRejected),
        (404, LLMRequestRejected),
        (401, LLMAuthenticationError),
        (403, LLMAuthenticationError),
    ],
)
async def test_client_errors_are_typed_and_not_retried_on_other_models(
    fake_openai: FakeOpenAIServer, client: OpenAIChatModel, status: int, expected: type
) -> None:
    fake_openai.handler = lambda body: error(status)
    with pytest.raises(expected) as caught:
        await client.complete(USER, tools=TOOLS, tool_choice="auto")
    assert [body["model"] for body in fake_openai.requests] == ["primary"]
    assert API_KEY not in str(caught.value)


@pytest.mark.parametrize(
    ("status", "expected"), [(429, LLMRateLimited), (500, LLMUnavailable), (503, LLMUnavailable)]
)
async def test_retryable_errors_go_to_the_fallback_model_then_surface_typed(
    fake_openai: FakeOpenAIServer, client: OpenAIChatModel, status: int, expected: type
) -> None:
    fake_openai.handler = lambda body: error(status)
    with pytest.raises(expected) as caught:
        await client.complete(USER, tools=TOOLS, tool_choice="auto")
    assert [body["model"] for body in fake_openai.requests] == ["primary", "backup"]
    assert caught.value.model == "backup"
    assert API_KEY not in str(caught.value)


async def test_429_then_the_fallback_model_answers_the_same_request(
    fake_openai: FakeOpenAIServer, client: OpenAIChatModel
) -> None:
    fake_openai.handler = by_model(
        {"primary": error(429, "rate limit"), "backup": completion(text="Заказ в пути.")}
    )
    response = await client.complete(USER, tools=TOOLS, tool_choice="auto")

    assert response.text == "Заказ в пути."
    assert (response.model, response.requested_model) == ("backup", "primary")
    first, second = fake_openai.requests
    assert {k: v for k, v in first.items() if k != "model"} == {
        k: v for k, v in second.items() if k != "model"
    }


async def test_request_timeout_is_typed_and_falls_back(fake_openai: FakeOpenAIServer) -> None:
    release = asyncio.Event()
    fake_openai.handler = by_model(
        {"primary": completion(text="late", hold=release), "backup": completion(text="backup")}
    )
    model = OpenAIChatModel(
        api_key=API_KEY,
        model="primary",
        base_url=fake_openai.base_url,
        timeout_s=0.2,
        max_retries=0,
        fallback_models=["backup"],
    )
    try:
        response = await model.complete(USER)
        assert (response.text, response.model) == ("backup", "backup")

        solo = OpenAIChatModel(
            api_key=API_KEY,
            model="primary",
            base_url=fake_openai.base_url,
            timeout_s=0.2,
            max_retries=0,
        )
        with pytest.raises(LLMTimeout):
            await solo.complete(USER)
        await solo.aclose()
    finally:
        release.set()
        await model.aclose()


async def test_sdk_retries_run_before_the_fallback(fake_openai: FakeOpenAIServer) -> None:
    fake_openai.handler = sequence(error(500, retry=True), completion(text="retried"))
    model = OpenAIChatModel(
        api_key=API_KEY,
        model="primary",
        base_url=fake_openai.base_url,
        max_retries=1,
        fallback_models=["backup"],
    )
    try:
        response = await model.complete(USER)
    finally:
        await model.aclose()
    assert (response.text, response.model) == ("retried", "primary")
    assert [b["model"] for b in fake_openai.requests] == ["primary", "primary"]


async def test_unreachable_server_is_unavailable() -> None:
    server = await FakeOpenAIServer().start()
    base_url = server.base_url
    await server.close()  # nothing listens on this port any more
    model = OpenAIChatModel(api_key=API_KEY, model="primary", base_url=base_url, max_retries=0)
    try:
        with pytest.raises(LLMUnavailable):
            await model.complete(USER)
    finally:
        await model.aclose()


async def test_malformed_response_is_unavailable(
    fake_openai: FakeOpenAIServer, client: OpenAIChatModel
) -> None:
    fake_openai.handler = lambda body: FakeReply(body={"id": "x", "choices": []})
    with pytest.raises(LLMUnavailable):
        await client.complete(USER)
    assert [b["model"] for b in fake_openai.requests] == ["primary", "backup"]


def _assert_is_the_whole_request(body: dict[str, Any], expected: dict[str, Any]) -> None:
    """The request as sent: every message (roles and contents in order), every tool schema,
    the tool options, and nothing else."""
    assert [(m.get("role"), m.get("content")) for m in body.get("messages") or []] == [
        (m["role"], m["content"]) for m in expected["messages"]
    ], "the conversation sent is not the one given"
    assert body.get("tools") == expected.get("tools"), "the tool schemas sent differ"
    assert body == expected


async def test_the_request_on_the_wire_is_the_whole_conversation_with_the_tools(
    fake_openai: FakeOpenAIServer,
) -> None:
    fake_openai.handler = sequence(error(500, retry=True), completion(text="В пути."), completion())
    model = OpenAIChatModel(
        api_key=API_KEY, model="primary", base_url=fake_openai.base_url, max_retries=1
    )
    try:
        response = await model.complete(
            CONVERSATION, tools=TOOLS, tool_choice="required", parallel_tool_calls=False
        )
        await model.complete_text(CONVERSATION[:4], max_tokens=300)
    finally:
        await model.aclose()

    assert response.text == "В пути."
    expected = {
        "model": "primary",
        "messages": CONVERSATION,
        "tools": TOOLS,
        "tool_choice": "required",
        "parallel_tool_calls": False,
    }
    first, retried, summary = fake_openai.requests
    _assert_is_the_whole_request(first, expected)
    _assert_is_the_whole_request(retried, expected)  # an SDK retry resends all of it
    _assert_is_the_whole_request(
        summary,
        {
            "model": "primary",
            "messages": CONVERSATION[:4],
            "max_completion_tokens": 300,
            "max_tokens": 300,  # not OpenAI's endpoint: the older name too (llama.cpp)
        },
    )


def test_the_wire_check_fails_on_an_empty_conversation_or_missing_tools() -> None:
    """The check above would catch the request this client used to hand the SDK."""
    expected = {"model": "m", "messages": CONVERSATION, "tools": TOOLS, "tool_choice": "auto"}
    with pytest.raises(AssertionError, match="conversation"):
        _assert_is_the_whole_request({**expected, "messages": []}, expected)
    with pytest.raises(AssertionError, match="tool schemas"):
        _assert_is_the_whole_request({k: v for k, v in expected.items() if k != "tools"}, expected)


async def test_sdk_request_options_and_http_hooks_see_the_real_request(
    fake_openai: FakeOpenAIServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    """What the SDK itself handles is the request sent: its request options (which its
    option hook, provider adapters and retries work on) carry the whole body as
    `json_data`, and an HTTP event hook on the SDK's transport sees the same body.
    (The SDK logs no request bodies at any level, so its logs are no witness.)"""
    seen_options: list[tuple[Any, Any]] = []
    prepare_options = AsyncOpenAI._prepare_options

    async def recording_prepare_options(self: AsyncOpenAI, options: Any) -> Any:
        seen_options.append((options.json_data, options.extra_json))
        return await prepare_options(self, options)

    seen_on_http: list[dict[str, Any]] = []

    async def on_request(request: Any) -> None:
        seen_on_http.append(json.loads(request.content))

    transport = openai.DefaultAioHttpClient

    def hooked_transport(**kwargs: Any) -> Any:
        return transport(event_hooks={"request": [on_request]}, **kwargs)

    monkeypatch.setattr(AsyncOpenAI, "_prepare_options", recording_prepare_options)
    monkeypatch.setattr(openai, "DefaultAioHttpClient", hooked_transport)
    fake_openai.handler = lambda body: completion(text="В пути.")
    model = OpenAIChatModel(api_key=API_KEY, model="primary", base_url=fake_openai.base_url)
    try:
        await model.complete(CONVERSATION, tools=TOOLS, tool_choice="auto")
    finally:
        await model.aclose()

    expected = {"model": "primary", "messages": CONVERSATION, "tools": TOOLS, "tool_choice": "auto"}
    [(json_data, extra_json)] = seen_options
    _assert_is_the_whole_request(json_data, expected)
    assert extra_json is None  # nothing rides beside the body, out of sight of hooks
    [on_http] = seen_on_http
    _assert_is_the_whole_request(on_http, expected)
    _assert_is_the_whole_request(fake_openai.requests[0], expected)


async def test_cached_input_tokens_are_read_when_the_provider_reports_them(
    fake_openai: FakeOpenAIServer, client: OpenAIChatModel
) -> None:
    fake_openai.handler = lambda body: completion(text="ok", usage=(1000, 20), cached_tokens=768)
    reported = await client.complete_text(USER)
    fake_openai.handler = lambda body: completion(text="ok", usage=(1000, 20))
    silent = await client.complete_text(USER)

    assert (reported.prompt_tokens, reported.cached_tokens) == (1000, 768)
    assert silent.cached_tokens is None


def test_the_answer_cap_is_named_for_the_endpoint() -> None:
    """OpenAI's reasoning models refuse `max_tokens`; llama.cpp's server reads only it
    (without it a small model generates until its context is full)."""
    from services.llm.client import _cap_names

    assert _cap_names(None) == ("max_completion_tokens",)
    assert _cap_names("https://api.openai.com/v1") == ("max_completion_tokens",)
    assert _cap_names("http://127.0.0.1:8765/v1") == ("max_completion_tokens", "max_tokens")


async def test_the_temperature_is_sent_on_every_call_and_none_sends_nothing(
    fake_openai: FakeOpenAIServer,
) -> None:
    """LLM_TEMPERATURE reaches the wire on answer steps, streamed steps and summaries;
    left blank, the parameter is absent (a model that refuses it still works)."""
    fake_openai.handler = lambda body: completion(text="Кратко.")

    class Listener:
        def on_text(self, text: str) -> None: ...
        def on_tool_call(self) -> None: ...

    for temperature in (0.2, None):
        model = OpenAIChatModel(
            api_key=API_KEY, model="m", base_url=fake_openai.base_url, temperature=temperature
        )
        try:
            await model.complete(USER, tools=TOOLS, tool_choice="auto")
            await model.stream_complete(USER, listener=Listener(), tools=TOOLS)
            await model.complete_text(USER, max_tokens=50)
        finally:
            await model.aclose()
    sent = [body.get("temperature", "absent") for body in fake_openai.requests]
    assert sent == [0.2, 0.2, 0.2, "absent", "absent", "absent"]
