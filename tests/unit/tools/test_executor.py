"""Executor: every path a model-proposed call can take, with handlers provably not run."""

from __future__ import annotations

import asyncio
import dataclasses
import json
import logging
from typing import Any, cast

import pytest
from pydantic import BaseModel, ConfigDict, Field, field_validator

from storage.records import AuditStatus
from tools.base import Caller, ErrorCode, Tool, ToolBusinessError, ToolCall, ToolContext
from tools.executor import ToolExecutor, audit_record
from tools.registry import ToolRegistry


class OrderArgs(BaseModel):
    model_config = ConfigDict(extra="forbid")

    order_id: str = Field(description="4 digits")

    @field_validator("order_id")
    @classmethod
    def _digits(cls, value: str) -> str:
        if len(value) != 4 or not value.isdigit():
            raise ValueError("must be exactly 4 digits")
        return value


class Echo(BaseModel):
    order_id: str


class Other(BaseModel):
    something: str


CONTEXT = ToolContext(
    caller=Caller(key=42, chat_id=4242), shop=cast(Any, None), turn_id="turn-9", session_id=3
)


class Recorder:
    """A handler whose behaviour each test sets, recording whether it ran."""

    def __init__(self, behaviour: Any = None) -> None:
        self.calls: list[str] = []
        self.behaviour = behaviour

    async def __call__(self, arguments: OrderArgs, context: ToolContext) -> Any:
        self.calls.append(arguments.order_id)
        if self.behaviour is not None:
            return await self.behaviour(arguments, context)
        return Echo(order_id=arguments.order_id)


def registry_with(*handlers: tuple[str, Recorder, bool], timeout_s: float = 5.0) -> ToolRegistry:
    registry = ToolRegistry()
    for name, handler, read_only in handlers:
        registry.register(
            Tool(
                name=name,
                description=f"Use {name} in tests.",
                arguments_model=OrderArgs,
                result_model=Echo,
                handler=handler,
                timeout_s=timeout_s,
                read_only=read_only,
            )
        )
    return registry


def parsed(content: str) -> dict[str, Any]:
    return json.loads(content)


async def test_success_result_is_ok_data_tied_to_call_id() -> None:
    handler = Recorder()
    executor = ToolExecutor(registry_with(("check", handler, True)))
    outcome = await executor.execute(ToolCall("call_1", "check", '{"order_id": "8041"}'), CONTEXT)
    assert parsed(outcome.content) == {"ok": True, "data": {"order_id": "8041"}}
    assert outcome.ok and outcome.call_id == "call_1" and outcome.tool_name == "check"
    audit = outcome.audit
    assert (audit.call_id, audit.tool_name, audit.status) == ("call_1", "check", "success")
    assert (audit.user_id, audit.chat_id, audit.turn_id, audit.session_id) == (
        42,
        4242,
        "turn-9",
        3,
    )
    assert audit.error_code is None and audit.duration_ms >= 0 and audit.started_at > 0


async def test_unknown_tool_lists_allowed_names_and_runs_nothing() -> None:
    handler = Recorder()
    executor = ToolExecutor(registry_with(("check", handler, True), ("look", handler, True)))
    outcome = await executor.execute(ToolCall("c", "delete_everything", "{}"), CONTEXT)
    error = parsed(outcome.content)["error"]
    assert parsed(outcome.content)["ok"] is False
    assert error["code"] == "unknown_tool"
    assert "check" in error["message"] and "look" in error["message"]
    assert handler.calls == []
    assert outcome.audit.status is AuditStatus.REJECTED
    assert outcome.audit.error_code == "unknown_tool"


@pytest.mark.parametrize(
    ("arguments", "expected"),
    [
        ('{"order_id": "80a1"}', "order_id: must be exactly 4 digits"),
        ('{"order_id": 8041}', "order_id: "),
        ("{}", "order_id: required field is missing"),
        ('{"order_id": "8041", "user_id": 1}', "user_id: unexpected field"),
        ("not json at all", "JSON object"),
        ('{"order_id": "8041"', "JSON object"),
        ('["8041"]', "JSON object"),
        ('"8041"', "JSON object"),
        ("null", "JSON object"),
        ("", "JSON object"),
        # nesting that exhausts the recursion limit (RecursionError is not a ValueError)
        ('{"order_id":' + "[" * 2000 + "]" * 2000 + "}", "nested too deeply"),
        ("[" * 1500 + "]" * 1500, "nested too deeply"),
        ('{"order_id":"8041","x":' + "[" * 1500 + "]" * 1500 + "}", "nested too deeply"),
        # a longer string is refused unread, even when it is valid JSON
        ('{"order_id": "8041"' + " " * 4096 + "}", "more than 4096 characters"),
        ('{"order_id":' + "[" * 100_000 + "]" * 100_000 + "}", "more than 4096 characters"),
    ],
)
async def test_invalid_arguments_explain_the_field_and_run_nothing(
    arguments: str, expected: str
) -> None:
    handler = Recorder()
    executor = ToolExecutor(registry_with(("check", handler, True)))
    outcome = await executor.execute(ToolCall("c", "check", arguments), CONTEXT)
    body = parsed(outcome.content)
    assert body["ok"] is False and body["error"]["code"] == "invalid_arguments"
    assert expected in body["error"]["message"]
    assert handler.calls == []
    assert outcome.audit.status is AuditStatus.REJECTED
    assert outcome.audit.error_code == "invalid_arguments"


async def test_business_error_reaches_the_model_with_its_code() -> None:
    async def refuse(arguments: OrderArgs, context: ToolContext) -> Echo:
        raise ToolBusinessError("rate_limited", "Too many lookups, try later.")

    executor = ToolExecutor(registry_with(("check", Recorder(refuse), True)))
    outcome = await executor.execute(ToolCall("c", "check", '{"order_id": "1111"}'), CONTEXT)
    assert parsed(outcome.content) == {
        "ok": False,
        "error": {"code": "rate_limited", "message": "Too many lookups, try later."},
    }
    assert outcome.audit.status is AuditStatus.BUSINESS_ERROR
    assert outcome.audit.error_code == "rate_limited"


async def test_timeout_cancels_the_handler() -> None:
    started = asyncio.Event()
    cancelled = asyncio.Event()

    async def hang(arguments: OrderArgs, context: ToolContext) -> Echo:
        started.set()
        try:
            await asyncio.Event().wait()  # never set
        except asyncio.CancelledError:
            cancelled.set()
            raise
        raise AssertionError("unreachable")

    executor = ToolExecutor(registry_with(("check", Recorder(hang), True), timeout_s=0.05))
    outcome = await executor.execute(ToolCall("c", "check", '{"order_id": "1111"}'), CONTEXT)
    assert started.is_set() and cancelled.is_set()
    assert parsed(outcome.content)["error"]["code"] == "timeout"
    assert outcome.audit.status is AuditStatus.TIMEOUT
    assert outcome.audit.error_code == "timeout"


async def test_technical_error_text_never_reaches_the_model(
    caplog: pytest.LogCaptureFixture,
) -> None:
    async def explode(arguments: OrderArgs, context: ToolContext) -> Echo:
        raise RuntimeError("password=hunter2 at /srv/db.sqlite3 line 12")

    executor = ToolExecutor(registry_with(("check", Recorder(explode), True)))
    with caplog.at_level(logging.ERROR, logger="tools.executor"):
        outcome = await executor.execute(
            ToolCall("call_xyz", "check", '{"order_id": "1111"}'), CONTEXT
        )
    body = parsed(outcome.content)
    assert body["error"]["code"] == "unavailable"
    for secret in ("hunter2", "/srv", "RuntimeError", "Traceback"):
        assert secret not in outcome.content
    assert outcome.audit.status is AuditStatus.TECHNICAL_ERROR
    assert outcome.audit.error_code == "unavailable"
    logged = [r for r in caplog.records if "call_xyz" in r.getMessage()]
    assert logged and logged[0].exc_info is not None


async def test_a_timeout_error_raised_inside_the_handler_is_technical_not_timeout() -> None:
    async def inner(arguments: OrderArgs, context: ToolContext) -> Echo:
        raise TimeoutError("upstream socket timed out")

    executor = ToolExecutor(registry_with(("check", Recorder(inner), True)))
    outcome = await executor.execute(ToolCall("c", "check", '{"order_id": "1111"}'), CONTEXT)
    assert parsed(outcome.content)["error"]["code"] == "unavailable"
    assert outcome.audit.status is AuditStatus.TECHNICAL_ERROR


@pytest.mark.parametrize("returned", [{"order_id": "1111"}, Other(something="x"), None, "ok"])
async def test_wrong_result_type_is_unavailable(returned: Any) -> None:
    async def wrong(arguments: OrderArgs, context: ToolContext) -> Any:
        return returned

    executor = ToolExecutor(registry_with(("check", Recorder(wrong), True)))
    outcome = await executor.execute(ToolCall("c", "check", '{"order_id": "1111"}'), CONTEXT)
    assert parsed(outcome.content)["error"]["code"] == "unavailable"
    assert outcome.audit.status is AuditStatus.TECHNICAL_ERROR


async def test_audit_holds_no_raw_arguments_or_results() -> None:
    executor = ToolExecutor(registry_with(("check", Recorder(), True)))
    outcome = await executor.execute(ToolCall("c", "check", '{"order_id": "9876"}'), CONTEXT)
    assert "9876" in outcome.content
    # the clock's figures are left out: a timestamp may hold those digits by chance
    audit = dataclasses.replace(outcome.audit, started_at=0.0, duration_ms=0.0)
    assert "9876" not in repr(audit)


async def test_read_only_batch_runs_concurrently_and_keeps_call_order() -> None:
    barrier = asyncio.Barrier(3)
    second_done = asyncio.Event()
    finished: list[str] = []

    async def meet(arguments: OrderArgs, context: ToolContext) -> Echo:
        # Only passes if all three handlers are running at the same time; sequential
        # execution would block here until the tool timeout fires.
        await barrier.wait()
        if arguments.order_id == "0001":
            await second_done.wait()  # the first call finishes last
        finished.append(arguments.order_id)
        if arguments.order_id == "0002":
            second_done.set()
        return Echo(order_id=arguments.order_id)

    handler = Recorder(meet)
    executor = ToolExecutor(registry_with(("check", handler, True), timeout_s=5.0))
    calls = [ToolCall(f"call_{i}", "check", f'{{"order_id": "000{i}"}}') for i in (1, 2, 3)]
    outcomes = await executor.execute_batch(calls, CONTEXT)
    assert [o.call_id for o in outcomes] == ["call_1", "call_2", "call_3"]
    assert [parsed(o.content)["data"]["order_id"] for o in outcomes] == ["0001", "0002", "0003"]
    assert all(o.audit.status is AuditStatus.SUCCESS for o in outcomes)
    assert finished.index("0001") > finished.index("0002")


async def test_one_failing_call_does_not_affect_the_others() -> None:
    async def maybe_explode(arguments: OrderArgs, context: ToolContext) -> Echo:
        if arguments.order_id == "6666":
            raise RuntimeError("boom")
        return Echo(order_id=arguments.order_id)

    executor = ToolExecutor(registry_with(("check", Recorder(maybe_explode), True)))
    calls = [
        ToolCall("a", "check", '{"order_id": "1111"}'),
        ToolCall("b", "nope", "{}"),
        ToolCall("c", "check", '{"order_id": "x"}'),
        ToolCall("d", "check", '{"order_id": "6666"}'),
        ToolCall("e", "check", '{"order_id": "2222"}'),
    ]
    outcomes = await executor.execute_batch(calls, CONTEXT)
    codes = [
        parsed(o.content)["data"]["order_id"] if o.ok else parsed(o.content)["error"]["code"]
        for o in outcomes
    ]
    assert codes == ["1111", "unknown_tool", "invalid_arguments", "unavailable", "2222"]
    assert [o.call_id for o in outcomes] == list("abcde")


async def test_batch_with_a_writing_tool_runs_sequentially_in_order() -> None:
    events: list[str] = []

    async def traced(arguments: OrderArgs, context: ToolContext) -> Echo:
        events.append(f"start {arguments.order_id}")
        for _ in range(5):  # yield to the event loop; concurrent calls would interleave
            await asyncio.sleep(0)
        events.append(f"end {arguments.order_id}")
        return Echo(order_id=arguments.order_id)

    executor = ToolExecutor(
        registry_with(("read", Recorder(traced), True), ("write", Recorder(traced), False))
    )
    calls = [
        ToolCall("a", "read", '{"order_id": "0001"}'),
        ToolCall("b", "write", '{"order_id": "0002"}'),
        ToolCall("c", "read", '{"order_id": "0003"}'),
    ]
    outcomes = await executor.execute_batch(calls, CONTEXT)
    assert [o.call_id for o in outcomes] == ["a", "b", "c"]
    assert events == ["start 0001", "end 0001", "start 0002", "end 0002", "start 0003", "end 0003"]


async def test_empty_batch() -> None:
    executor = ToolExecutor(registry_with(("check", Recorder(), True)))
    assert await executor.execute_batch([], CONTEXT) == []


def test_the_audit_builder_bounds_the_name_and_never_goes_below_zero() -> None:
    """The executor and the loop build audit rows with this one function."""
    call = ToolCall(id="c1", name="x" * 500, arguments="{}")
    audit = audit_record(
        call,
        CONTEXT,
        started_at=1000.0,
        duration_ms=-0.5,  # a clock that stepped back
        status=AuditStatus.TIMEOUT,
        error_code=ErrorCode.TIMEOUT,
    )
    assert audit.tool_name == "x" * 64
    assert audit.duration_ms == 0.0
    assert audit.error_code == "timeout" and type(audit.error_code) is str
    assert (audit.call_id, audit.user_id, audit.chat_id, audit.turn_id, audit.session_id) == (
        "c1",
        42,
        4242,
        "turn-9",
        3,
    )
