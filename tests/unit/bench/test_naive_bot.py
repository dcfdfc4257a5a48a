"""The floor bot answers the bench's questions the way the bench counts as answered:
its tools' constants, quoted by the fake model's script, match each kind of question
(otherwise the floor's turns/s would count wrong answers)."""

from __future__ import annotations

import json
from typing import Any

import aiohttp
import pytest

from bench.driver import question, reply_matches
from bench.naive_bot import CLIENTS, TOOLS, run_tool
from tests.fakes.openai_server import FakeOpenAIServer, default_script


def _answer(text: str) -> str:
    """The floor's tool loop against the fake model's script, without the processes."""
    messages: list[dict[str, Any]] = [{"role": "user", "content": text}]
    for _ in range(4):
        reply = default_script({"messages": messages, "tools": TOOLS})
        message = reply.body["choices"][0]["message"]
        calls = message.get("tool_calls")
        if not calls:
            return str(message["content"])
        messages.append(message)
        for call in calls:
            result = run_tool(call["function"]["name"], json.loads(call["function"]["arguments"]))
            messages.append(
                {"role": "tool", "tool_call_id": call["id"], "content": json.dumps(result)}
            )
    raise AssertionError("no answer within four model calls")


@pytest.mark.parametrize("kind", ["greet", "one", "two", "faq"])
def test_the_floor_answers_every_kind_of_bench_question(kind: str) -> None:
    text = _answer(question(kind, "8041", "#bkq"))
    assert reply_matches(kind, "8041", text), text


def test_a_tool_the_floor_does_not_know_is_an_error_not_an_answer() -> None:
    assert run_tool("cancel_order", {"order_id": "8041"})["ok"] is False


@pytest.mark.parametrize("client", sorted(CLIENTS))
async def test_both_model_clients_of_the_floor_bring_back_the_models_message(client: str) -> None:
    server = await FakeOpenAIServer().start()
    try:
        async with aiohttp.ClientSession() as session:
            complete = CLIENTS[client](session, server.base_url, "sk-test", "fake-model")
            reply = await complete([{"role": "user", "content": "Где заказ 8041?"}])
    finally:
        await server.close()
    [call] = reply["tool_calls"]
    assert call["function"]["name"] == "get_order_status"
    assert json.loads(call["function"]["arguments"]) == {"order_id": "8041"}
    assert server.chat_requests[0]["tools"] == TOOLS  # the same tools on the wire
