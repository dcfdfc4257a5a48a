"""The scripted LLM double behaves like a ChatModel the rest of the suite can trust."""

from __future__ import annotations

import asyncio

import pytest

from services.llm.errors import LLMTimeout
from services.llm.types import Message, ToolChoice
from tests.doubles import ScriptedLLM, text_response, tool_call, tool_calls_response


async def test_requests_are_recorded_as_copies_and_defaults_filled() -> None:
    llm = ScriptedLLM(lambda messages, choice: text_response(f"{len(messages)}:{choice}"))
    messages: list[Message] = [{"role": "user", "content": "hi"}]
    response = await llm.complete(messages, tools=[{"type": "function"}], tool_choice="auto")
    messages[0]["content"] = "changed"
    summary = await llm.complete_text(messages, max_tokens=50)

    assert response.text == "1:auto" and summary.text == "1:None"
    assert (response.model, response.requested_model) == ("scripted-model", "scripted-model")
    first, second = llm.requests
    assert first.messages == [{"role": "user", "content": "hi"}]
    assert (first.kind, first.tool_choice, second.kind, second.max_tokens) == (
        "complete",
        "auto",
        "complete_text",
        50,
    )
    assert llm.chat_requests == [first]


async def test_exceptions_and_held_answers() -> None:
    release = asyncio.Event()

    async def held(messages: list[Message], choice: ToolChoice | None):
        await release.wait()
        return tool_calls_response(tool_call("lookup", {"key": "a"}, id="c1"))

    llm = ScriptedLLM.from_responses(LLMTimeout("slow"), LLMTimeout)
    with pytest.raises(LLMTimeout):
        await llm.complete([])
    with pytest.raises(LLMTimeout):
        await llm.complete([])
    llm_held = ScriptedLLM(held)
    task = asyncio.create_task(llm_held.complete([]))
    release.set()
    response = await task
    assert response.finish_reason == "tool_calls"
    assert response.raw_assistant_message == {
        "role": "assistant",
        "content": None,
        "tool_calls": [
            {
                "id": "c1",
                "type": "function",
                "function": {"name": "lookup", "arguments": '{"key": "a"}'},
            }
        ],
    }


async def test_running_out_of_scripted_responses_fails_loudly() -> None:
    llm = ScriptedLLM.from_responses(text_response("one"))
    await llm.complete([])
    with pytest.raises(AssertionError):
        await llm.complete([])
