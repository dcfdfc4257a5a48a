"""BoundedToolLoop with the scripted LLM and small test-local tools."""

from __future__ import annotations

import asyncio
import json
from typing import Any

import pytest

from services.llm.errors import LLMRateLimited
from services.llm.types import Message, ToolChoice
from services.loop import BoundedToolLoop
from services.loop_types import ProtocolError, StopReason, TurnTimeout, TurnUnavailable
from storage.records import AuditStatus
from tests.doubles import (
    ScriptedLLM,
    assert_tool_messages_paired,
    text_response,
    tool_call,
    tool_calls_response,
)
from tests.unit.services.loop_helpers import FakeTools, context
from tools.base import ToolCall, ToolContext

PROMPT = "support_chat@1"
USER: list[Message] = [
    {"role": "system", "content": "rules"},
    {"role": "user", "content": "question"},
]


def make_loop(llm: ScriptedLLM, tools: FakeTools, **kwargs: object) -> BoundedToolLoop:
    return BoundedToolLoop(llm, tools.registry, tools.executor, **kwargs)  # type: ignore[arg-type]


def tool_results(messages: list[Message]) -> list[dict[str, object]]:
    return [json.loads(m["content"]) for m in messages if m["role"] == "tool"]


async def test_plain_answer_is_one_step_without_tools() -> None:
    llm = ScriptedLLM.from_responses(text_response("Здравствуйте!", usage=(30, 4)))
    result = await make_loop(llm, FakeTools()).run(USER, context(), prompt_ref=PROMPT)

    assert result.text == "Здравствуйте!"
    assert result.stop_reason is StopReason.COMPLETED
    assert result.model_steps == 1 and result.tool_names == []
    assert result.prompt_ref == PROMPT
    assert (result.trace.prompt_tokens, result.trace.completion_tokens) == (30, 4)
    assert result.trace.total_tokens == 34
    assert len(result.trace.response_ids) == 1
    [record] = result.trace.model_calls
    assert (record.purpose, record.status, record.model) == ("chat", "ok", "scripted-model")
    assert llm.requests[0].tool_choice == "auto"


async def test_tool_result_goes_back_to_the_model_then_it_answers() -> None:
    def script(messages: list[Message], tool_choice: ToolChoice | None):
        if messages[-1]["role"] == "tool":
            return text_response("Значение найдено.")
        return tool_calls_response(tool_call("lookup", {"key": "a"}, id="call_a"))

    tools = FakeTools()
    llm = ScriptedLLM(script)
    result = await make_loop(llm, tools).run(USER, context(), prompt_ref=PROMPT)

    assert result.text == "Значение найдено."
    assert result.model_steps == 2 and result.tool_names == ["lookup"]
    second = llm.requests[1].messages
    assert second[-2]["tool_calls"][0]["id"] == "call_a"
    assert second[-1] == {
        "role": "tool",
        "tool_call_id": "call_a",
        "content": '{"ok":true,"data":{"key":"a","value":"value-of-a"}}',
    }
    [audit] = result.trace.audit_records
    assert (audit.call_id, audit.status, audit.user_id, audit.turn_id) == (
        "call_a",
        AuditStatus.SUCCESS,
        42,
        "turn-1",
    )
    assert llm.requests[1].tool_choice == "auto"
    assert (result.trace.prompt_tokens, result.trace.total_tokens) == (20, 30)


@pytest.mark.parametrize("max_steps", [1, 2, 3, 5])
async def test_model_that_always_wants_tools_gets_none_on_the_last_step(max_steps: int) -> None:
    def script(messages: list[Message], tool_choice: ToolChoice | None):
        if tool_choice == "none":
            return text_response("Отвечаю без инструментов.")
        return tool_calls_response(tool_call("lookup", {"key": f"k{len(messages)}"}))

    tools = FakeTools()
    llm = ScriptedLLM(script)
    loop = make_loop(llm, tools, max_steps=max_steps)
    result = await loop.run(USER, context(), prompt_ref=PROMPT)

    assert len(llm.requests) == max_steps
    assert [r.tool_choice for r in llm.requests] == ["auto"] * (max_steps - 1) + ["none"]
    assert len(tools.calls) == max_steps - 1
    assert result.stop_reason is StopReason.COMPLETED
    for request in llm.requests:
        assert_tool_messages_paired(request.messages)


async def test_tool_calls_on_the_none_step_are_a_protocol_error_and_never_run() -> None:
    llm = ScriptedLLM(
        lambda messages, choice: tool_calls_response(
            tool_call("lookup", {"key": f"k{len(messages)}"})
        )
    )
    tools = FakeTools()
    with pytest.raises(ProtocolError) as caught:
        await make_loop(llm, tools, max_steps=3).run(USER, context(), prompt_ref=PROMPT)

    assert len(llm.requests) == 3
    assert tools.calls == ["lookup:k2", "lookup:k4"]  # steps 1 and 2 only
    assert caught.value.trace.model_steps == 3


async def test_calls_of_one_response_run_concurrently_and_answer_in_call_order() -> None:
    tools = FakeTools(tool_timeout_s=5.0)
    tools.barrier = asyncio.Barrier(2)  # passes only if both calls are in flight together

    def script(messages: list[Message], tool_choice: ToolChoice | None):
        if messages[-1]["role"] == "tool":
            return text_response("Оба ответа получены.")
        return tool_calls_response(
            tool_call("wait", {"key": "first"}, id="c1"),
            tool_call("lookup", {"key": "second"}, id="c2"),
            tool_call("wait", {"key": "third"}, id="c3"),
        )

    llm = ScriptedLLM(script)
    async with asyncio.timeout(60):  # a bound on a deadlock, not a timing assertion
        result = await make_loop(llm, tools).run(USER, context(), prompt_ref=PROMPT)

    assert result.model_steps == 2
    assert result.tool_names == ["wait", "lookup", "wait"]
    second = llm.requests[1].messages
    assert [m["tool_call_id"] for m in second if m["role"] == "tool"] == ["c1", "c2", "c3"]
    assert [r["ok"] for r in tool_results(second)] == [True, True, True]
    assert [a.call_id for a in result.trace.audit_records] == ["c1", "c2", "c3"]


async def test_parallel_tool_calls_flag_is_sent_on_auto_steps_only() -> None:
    def script(messages: list[Message], tool_choice: ToolChoice | None):
        if tool_choice == "none":
            return text_response("ok")
        return tool_calls_response(tool_call("lookup", {"key": str(len(messages))}))

    llm = ScriptedLLM(script)
    await make_loop(llm, FakeTools(), parallel_tool_calls=False).run(
        USER, context(), prompt_ref=PROMPT
    )
    assert [r.parallel_tool_calls for r in llm.requests] == [False, False, None]
    assert all(
        r.tools and {t["function"]["name"] for t in r.tools} == {"lookup", "wait"}
        for r in llm.requests
    )


async def test_invalid_arguments_go_back_and_the_corrected_call_runs_next_step() -> None:
    def script(messages: list[Message], tool_choice: ToolChoice | None):
        results = tool_results(messages)
        if not results:
            return tool_calls_response(tool_call("lookup", {"key": 8041, "extra": 1}))
        if len(results) == 1:
            assert results[0]["error"]["code"] == "invalid_arguments"
            return tool_calls_response(tool_call("lookup", {"key": "8041"}))
        return text_response("Исправлено.")

    tools = FakeTools()
    result = await make_loop(ScriptedLLM(script), tools).run(USER, context(), prompt_ref=PROMPT)
    assert result.text == "Исправлено."
    assert tools.calls == ["lookup:8041"]
    assert [a.status for a in result.trace.audit_records] == [
        AuditStatus.REJECTED,
        AuditStatus.SUCCESS,
    ]


async def test_unknown_tool_gets_an_error_listing_allowed_tools() -> None:
    def script(messages: list[Message], tool_choice: ToolChoice | None):
        if messages[-1]["role"] == "tool":
            return text_response("Не могу это сделать.")
        return tool_calls_response(tool_call("cancel_order", {"order_id": "8041"}))

    llm = ScriptedLLM(script)
    result = await make_loop(llm, FakeTools()).run(USER, context(), prompt_ref=PROMPT)
    [error] = tool_results(llm.requests[1].messages)
    assert error["ok"] is False and error["error"]["code"] == "unknown_tool"
    assert "lookup" in error["error"]["message"] and "wait" in error["error"]["message"]
    assert result.tool_names == []  # nothing ran
    assert result.trace.audit_records[0].status is AuditStatus.REJECTED


async def test_a_failing_call_is_not_run_twice_and_the_model_gets_the_same_error() -> None:
    def script(messages: list[Message], tool_choice: ToolChoice | None):
        n = len(tool_results(messages))
        if n < 2:  # the same failing call twice, with different ids and key order/spacing
            raw = '{"key": "missing"}' if n == 0 else '{ "key":"missing" }'
            return tool_calls_response(tool_call("lookup", raw, id=f"c{n}"))
        return text_response("Такого ключа нет.")

    tools = FakeTools()
    llm = ScriptedLLM(script)
    result = await make_loop(llm, tools).run(USER, context(), prompt_ref=PROMPT)

    assert tools.calls == ["lookup:missing"]
    first, second = tool_results(llm.requests[2].messages)
    assert first == second and first["error"]["code"] == "not_found"
    tool_ids = [m["tool_call_id"] for m in llm.requests[2].messages if m["role"] == "tool"]
    assert tool_ids == ["c0", "c1"]
    assert [(a.call_id, a.status) for a in result.trace.audit_records] == [
        ("c0", AuditStatus.BUSINESS_ERROR),
        ("c1", AuditStatus.REJECTED),
    ]
    assert result.tool_names == ["lookup"]


@pytest.mark.parametrize(
    ("response", "expected"),
    [
        (text_response("Частичный ответ", finish_reason="length"), StopReason.TRUNCATED),
        (text_response(None, refusal="I can't help with that."), StopReason.REFUSED),
        (text_response("", finish_reason="content_filter"), StopReason.REFUSED),
    ],
)
async def test_typed_stop_reasons(response, expected: StopReason) -> None:
    llm = ScriptedLLM.from_responses(response)
    result = await make_loop(llm, FakeTools()).run(USER, context(), prompt_ref=PROMPT)
    assert result.stop_reason is expected
    assert result.model_steps == 1


@pytest.mark.parametrize(
    "response",
    [
        text_response("   "),
        text_response(None),
        text_response("", finish_reason="length"),
        text_response("hmm", finish_reason="function_call"),
        text_response("hmm", finish_reason=None),
        tool_calls_response(tool_call("lookup", {"key": "a"}), finish_reason="stop"),
        tool_calls_response(tool_call("lookup", {"key": "a"}), finish_reason="length"),
        tool_calls_response(finish_reason="tool_calls"),
    ],
)
async def test_answers_the_loop_cannot_accept_are_protocol_errors(response) -> None:
    tools = FakeTools()
    with pytest.raises(ProtocolError) as caught:
        await make_loop(ScriptedLLM.from_responses(response), tools).run(
            USER, context(), prompt_ref=PROMPT
        )
    assert tools.calls == []
    assert caught.value.trace.model_steps == 1
    assert caught.value.code == "protocol_error"


async def test_llm_error_becomes_turn_unavailable_with_the_trace() -> None:
    def script(messages: list[Message], tool_choice: ToolChoice | None):
        if messages[-1]["role"] == "tool":
            return LLMRateLimited("model x: HTTP 429")
        return tool_calls_response(tool_call("lookup", {"key": "a"}))

    with pytest.raises(TurnUnavailable) as caught:
        await make_loop(ScriptedLLM(script), FakeTools()).run(USER, context(), prompt_ref=PROMPT)

    error = caught.value
    assert error.code == "rate_limited"
    assert error.trace.tool_names == ["lookup"]
    assert [c.status for c in error.trace.model_calls] == ["ok", "error"]
    assert error.trace.model_calls[1].error_code == "rate_limited"
    assert error.trace.model_calls[1].model is None
    assert len(error.trace.audit_records) == 1


async def test_turn_deadline_cancels_a_held_tool_and_keeps_its_audit() -> None:
    tools = FakeTools(tool_timeout_s=30)
    llm = ScriptedLLM.from_responses(
        tool_calls_response(tool_call("wait", {"key": "slow"}, id="slow"))
    )
    loop = make_loop(llm, tools, turn_timeout_s=0.2)
    with pytest.raises(TurnTimeout) as caught:
        await loop.run(USER, context(), prompt_ref=PROMPT)

    trace = caught.value.trace
    assert tools.started.is_set()
    assert [(a.call_id, a.status, a.error_code) for a in trace.audit_records] == [
        ("slow", AuditStatus.TIMEOUT, "turn_timeout")
    ]
    assert trace.tool_names == ["wait"]
    assert caught.value.code == "turn_timeout"


async def test_turn_deadline_cancels_a_held_model_call_and_records_it() -> None:
    never = asyncio.Event()
    cancelled = asyncio.Event()

    async def held(messages: list[Message], tool_choice: ToolChoice | None):
        try:
            await never.wait()
        except asyncio.CancelledError:
            cancelled.set()
            raise
        return text_response("never")

    loop = make_loop(ScriptedLLM(held), FakeTools(), turn_timeout_s=0.2)
    with pytest.raises(TurnTimeout) as caught:
        await loop.run(USER, context(), prompt_ref=PROMPT)
    assert cancelled.is_set()
    [record] = caught.value.trace.model_calls
    assert (record.status, record.error_code) == ("error", "turn_timeout")


async def test_callers_messages_are_never_mutated() -> None:
    def script(messages: list[Message], tool_choice: ToolChoice | None):
        if messages[-1]["role"] == "tool":
            return text_response("Готово.")
        return tool_calls_response(tool_call("lookup", {"key": "a"}))

    messages = [dict(m) for m in USER]
    snapshot = json.dumps(messages)
    await make_loop(ScriptedLLM(script), FakeTools()).run(messages, context(), prompt_ref=PROMPT)
    assert json.dumps(messages) == snapshot


async def test_unknown_usage_stays_unknown_and_fallback_model_is_recorded() -> None:
    llm = ScriptedLLM.from_responses(
        tool_calls_response(tool_call("lookup", {"key": "a"}), usage=(10, 2)),
        text_response("Готово.", usage=None, model="backup-model"),
        model_name="primary-model",
    )
    result = await make_loop(llm, FakeTools()).run(USER, context(), prompt_ref=PROMPT)
    trace = result.trace
    assert (trace.prompt_tokens, trace.completion_tokens, trace.total_tokens) == (None,) * 3
    first, second = trace.model_calls
    assert (first.model, first.fallback) == ("primary-model", False)
    assert (second.requested_model, second.model, second.fallback) == (
        "primary-model",
        "backup-model",
        True,
    )


def test_max_steps_and_deadline_are_validated() -> None:
    tools = FakeTools()
    llm = ScriptedLLM.from_responses()
    for bad in (0, 6):
        with pytest.raises(ValueError):
            make_loop(llm, tools, max_steps=bad)
    with pytest.raises(ValueError):
        make_loop(llm, tools, turn_timeout_s=0)


# ------------------------------------------------------------------ protocol edge cases

DEEP_ARGUMENTS = '{"key":' + "[" * 2000 + "]" * 2000 + "}"  # within the length bound


async def test_arguments_nested_deeper_than_the_recursion_limit_go_back_as_invalid() -> None:
    def script(messages: list[Message], tool_choice: ToolChoice | None):
        if messages[-1]["role"] == "tool":
            return text_response("Уточните, пожалуйста, ключ.")
        return tool_calls_response(tool_call("lookup", DEEP_ARGUMENTS, id="deep"))

    tools = FakeTools()
    llm = ScriptedLLM(script)
    result = await make_loop(llm, tools).run(USER, context(), prompt_ref=PROMPT)

    [error] = tool_results(llm.requests[1].messages)
    assert error["error"]["code"] == "invalid_arguments"
    assert "nested too deeply" in error["error"]["message"]
    assert result.text == "Уточните, пожалуйста, ключ."
    assert tools.calls == []
    assert [(a.call_id, a.status, a.error_code) for a in result.trace.audit_records] == [
        ("deep", AuditStatus.REJECTED, "invalid_arguments")
    ]


async def test_a_repeated_deep_call_is_answered_from_the_first_error_without_parsing() -> None:
    def script(messages: list[Message], tool_choice: ToolChoice | None):
        n = len(tool_results(messages))
        if n < 2:
            return tool_calls_response(tool_call("lookup", DEEP_ARGUMENTS, id=f"d{n}"))
        return text_response("Не получилось.")

    llm = ScriptedLLM(script)
    result = await make_loop(llm, FakeTools()).run(USER, context(), prompt_ref=PROMPT)
    assert [(a.call_id, a.error_code) for a in result.trace.audit_records] == [
        ("d0", "invalid_arguments"),
        ("d1", "repeated_failed_call"),
    ]


def _two_calls(first_id: object, second_id: object) -> object:
    # ToolCall itself: the double's `tool_call` would replace an empty id with a fresh one
    return tool_calls_response(
        ToolCall(id=first_id, name="lookup", arguments='{"key": "a"}'),  # type: ignore[arg-type]
        ToolCall(id=second_id, name="lookup", arguments='{"key": "b"}'),  # type: ignore[arg-type]
    )


@pytest.mark.parametrize(
    ("first_id", "second_id", "problem"),
    [
        ("same", "same", "repeats the id"),
        ("call_1", "", "has no id"),
        (None, "call_2", "has no id"),
        ("call_1", "c" * 257, "longer than 256"),
        ("call_1\nINFO forged log line", "call_2", "control characters"),
    ],
)
async def test_call_ids_that_cannot_be_answered_apart_are_a_protocol_error(
    first_id: object, second_id: object, problem: str
) -> None:
    tools = FakeTools()
    llm = ScriptedLLM.from_responses(_two_calls(first_id, second_id))  # type: ignore[arg-type]
    with pytest.raises(ProtocolError) as caught:
        await make_loop(llm, tools).run(USER, context(), prompt_ref=PROMPT)

    assert problem in str(caught.value)
    assert tools.calls == []  # neither call ran: no data under a shared or missing id
    assert caught.value.trace.audit_records == []
    assert caught.value.trace.tool_names == []
    assert [c.status for c in caught.value.trace.model_calls] == ["ok"]


async def test_distinct_ids_of_the_longest_allowed_length_are_answered_each() -> None:
    ids = ["a" * 256, "functions.lookup:0"]

    def script(messages: list[Message], tool_choice: ToolChoice | None):
        if messages[-1]["role"] == "tool":
            return text_response("Готово.")
        return _two_calls(*ids)

    tools = FakeTools()
    llm = ScriptedLLM(script)  # type: ignore[arg-type]
    result = await make_loop(llm, tools).run(USER, context(), prompt_ref=PROMPT)
    answered = [m for m in llm.requests[1].messages if m["role"] == "tool"]
    assert [m["tool_call_id"] for m in answered] == ids
    assert [json.loads(m["content"])["data"]["key"] for m in answered] == ["a", "b"]
    assert [a.call_id for a in result.trace.audit_records] == ids
    assert_tool_messages_paired(llm.requests[1].messages)


async def test_a_huge_tool_name_is_an_unknown_tool_named_in_bounded_form() -> None:
    name = "lookup" + "x" * 100_000

    def script(messages: list[Message], tool_choice: ToolChoice | None):
        if messages[-1]["role"] == "tool":
            return text_response("Такого инструмента нет.")
        return tool_calls_response(tool_call(name, {"key": "a"}, id="big"))

    llm = ScriptedLLM(script)
    result = await make_loop(llm, FakeTools()).run(USER, context(), prompt_ref=PROMPT)
    [error] = tool_results(llm.requests[1].messages)
    assert error["error"]["code"] == "unknown_tool"
    assert len(error["error"]["message"]) < 200
    [audit] = result.trace.audit_records
    assert audit.tool_name == name[:64] and audit.status is AuditStatus.REJECTED
    assert result.text == "Такого инструмента нет."


async def test_a_proposed_action_suspends_the_turn_the_next_step_is_the_last() -> None:
    """A tool that noted `ActionProposed`: the next step is text only, so nothing
    else runs before the customer's press, however many steps remain."""
    from tools.base import ActionProposed

    def script(messages: list[Message], tool_choice: ToolChoice | None):
        if tool_choice == "none":
            return text_response("Подтвердите кнопкой ниже.")
        return tool_calls_response(tool_call("lookup", {"key": f"k{len(messages)}"}))

    tools = FakeTools()
    ctx = context()
    original = tools.registry.get("lookup")
    assert original is not None
    lookup = original.handler

    async def proposing(args: Any, tool_context: ToolContext) -> Any:
        tool_context.notes.append(ActionProposed(operation_id="a" * 32, effect={"ru": "?"}))
        return await lookup(args, tool_context)

    object.__setattr__(original, "handler", proposing)
    llm = ScriptedLLM(script)
    result = await make_loop(llm, tools, max_steps=5).run(USER, ctx, prompt_ref=PROMPT)
    assert [r.tool_choice for r in llm.requests] == ["auto", "none"]
    assert result.text == "Подтвердите кнопкой ниже." and len(tools.calls) == 1
