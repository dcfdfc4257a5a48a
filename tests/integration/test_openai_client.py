"""OpenAIChatModel through the real AsyncOpenAI client against the fake server."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator

import pytest

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
    assert response.fallback_used is False
    assert response.raw_assistant_message == {
        "role": "assistant",
        "content": None,
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
    assert (response.model, response.requested_model, response.fallback_used) == (
        "backup",
        "primary",
        True,
    )
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
