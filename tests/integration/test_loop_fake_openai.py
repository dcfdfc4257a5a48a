"""The seed scenarios end to end below the bot: prompt → BoundedToolLoop → real AsyncOpenAI
client → fake /v1/chat/completions, with the real tools over a seeded SQLite file.

Unless a test scripts its own handler, the fake runs its default keyword script, which
behaves like a careful model (see tests/fakes/openai_server.py:default_script).
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import AsyncIterator, Sequence
from dataclasses import dataclass

import pytest

from services.chat import ChatOptions, build_chat_service
from services.llm.client import OpenAIChatModel
from services.loop import BoundedToolLoop
from services.loop_types import (
    LoopResult,
    ProtocolError,
    StopReason,
    TurnReply,
    TurnTimeout,
    TurnUnavailable,
)
from services.prompts import build_prompt_registry
from storage.database import Database
from storage.records import AuditStatus
from storage.shop import ShopRepository
from tests.doubles import assert_tool_messages_paired
from tests.fakes.openai_server import (
    Body,
    FakeOpenAIServer,
    by_model,
    completion,
    default_script,
    error,
    fake_call,
    sequence,
)
from tools.base import Caller, ToolCall, ToolContext, ToolOutcome
from tools.executor import ToolExecutor
from tools.factory import build_registry
from tools.shop.demo import seed_demo_shop


class SpyExecutor(ToolExecutor):
    """The real executor, noting each batch and how many calls were in flight at once."""

    def __init__(self, *args: object, **kwargs: object) -> None:
        super().__init__(*args, **kwargs)  # type: ignore[arg-type]
        self.batches: list[list[str]] = []
        self.in_flight = 0
        self.max_in_flight = 0

    async def execute_batch(
        self, calls: Sequence[ToolCall], context: ToolContext
    ) -> list[ToolOutcome]:
        self.batches.append([call.name for call in calls])
        return await super().execute_batch(calls, context)

    async def execute(self, call: ToolCall, context: ToolContext) -> ToolOutcome:
        self.in_flight += 1
        self.max_in_flight = max(self.max_in_flight, self.in_flight)
        try:
            return await super().execute(call, context)
        finally:
            self.in_flight -= 1


@dataclass
class Bench:
    server: FakeOpenAIServer
    model: OpenAIChatModel
    executor: SpyExecutor
    context: ToolContext

    def loop(self, **kwargs: object) -> BoundedToolLoop:
        registry = build_registry()
        self.executor = SpyExecutor(registry)
        return BoundedToolLoop(self.model, registry, self.executor, **kwargs)  # type: ignore[arg-type]

    async def ask(self, text: str, **kwargs: object) -> LoopResult:
        prompt = build_prompt_registry().render("support_chat", shop_name="Демо-магазин")
        messages = [
            {"role": "system", "content": prompt.text},
            {"role": "user", "content": text},
        ]
        return await self.loop(**kwargs).run(messages, self.context, prompt_ref=prompt.ref)

    def tool_results(self, request: int = -1) -> list[dict[str, object]]:
        body = self.server.requests[request]
        return [json.loads(m["content"]) for m in body["messages"] if m["role"] == "tool"]


@pytest.fixture
async def bench(fake_openai: FakeOpenAIServer, db: Database) -> AsyncIterator[Bench]:
    shop = ShopRepository(db)
    await seed_demo_shop(shop)
    model = OpenAIChatModel(
        api_key="sk-test",
        model="primary",
        base_url=fake_openai.base_url,
        fallback_models=("backup",),
        max_retries=0,
        timeout_s=5,
    )
    context = ToolContext(caller=Caller(key=1001, chat_id=1001), shop=shop, turn_id="turn-1")
    try:
        yield Bench(fake_openai, model, SpyExecutor(build_registry()), context)
    finally:
        # whatever the test did, every request respected the tool-message contract
        for body in fake_openai.requests:
            assert_tool_messages_paired(body["messages"])
        await model.aclose()


# ------------------------------------------------------------------ seed scenarios


async def test_order_question_without_number_asks_for_it(bench: Bench) -> None:
    result = await bench.ask("Подскажите, где сейчас мой заказ?")
    assert len(bench.server.requests) == 1
    assert result.tool_names == []
    assert "номер заказа" in result.text
    assert result.stop_reason is StopReason.COMPLETED


async def test_order_status_is_answered_from_the_data(bench: Bench) -> None:
    result = await bench.ask("Где сейчас находится заказ 8041?")
    assert len(bench.server.requests) == 2
    assert result.tool_names == ["get_order_status"]
    [data] = bench.tool_results()
    assert data["ok"] is True and data["data"]["status"] == "in_transit"
    assert "8041" in result.text and "in_transit" in result.text
    assert result.trace.audit_records[0].status is AuditStatus.SUCCESS
    assert len(result.trace.response_ids) == 2
    assert result.trace.total_tokens == 2 * 19
    assert result.prompt_ref == "support_chat@5"


async def test_unknown_order_is_found_false(bench: Bench) -> None:
    result = await bench.ask("Проверьте статус заказа 1234.")
    assert result.tool_names == ["get_order_status"]
    [data] = bench.tool_results()
    assert data["ok"] is True and data["data"]["found"] is False
    assert "не найдено" in result.text


async def test_return_question_uses_the_return_policy(bench: Bench) -> None:
    result = await bench.ask("Можно ли вернуть кофемашину?")
    assert len(bench.server.requests) == 2
    assert result.tool_names == ["get_return_policy"]
    [data] = bench.tool_results()
    assert data["data"]["found"] is True and data["data"]["return_days"] == 14
    assert "14" in result.text


async def test_delivery_question_is_answered_from_the_shop_faq(bench: Bench) -> None:
    result = await bench.ask("Сколько стоит доставка?")
    assert len(bench.server.requests) == 2
    assert result.tool_names == ["get_shop_info"]
    [data] = bench.tool_results()
    assert data["ok"] is True and data["data"]["found"] is True
    [entry] = data["data"]["entries"]
    assert entry["topic"] == "Доставка" and "300 ₽" in entry["answer"]
    assert entry["answer"] in result.text
    assert result.trace.audit_records[0].status is AuditStatus.SUCCESS


async def test_unknown_topic_is_an_honest_i_do_not_know_with_the_contacts(bench: Bench) -> None:
    result = await bench.ask("Какая у вас гарантия на технику?")
    assert result.tool_names == ["get_shop_info"]
    [data] = bench.tool_results()
    assert data["ok"] is True and data["data"]["found"] is False
    contacts = data["data"]["contacts"]
    assert contacts and "support@example.com" in contacts
    assert "не знаю" in result.text and contacts in result.text
    assert "300 ₽" not in result.text  # nothing from other entries is offered as an answer


async def test_two_questions_with_parallel_calls_take_two_model_calls(bench: Bench) -> None:
    result = await bench.ask("Где заказ 8041 и можно ли вернуть кофемашину?")
    assert len(bench.server.requests) == 2
    assert bench.server.requests[0]["parallel_tool_calls"] is True
    assert bench.executor.batches == [["get_order_status", "get_return_policy"]]
    assert bench.executor.max_in_flight == 2  # both calls ran at the same time
    assert sorted(result.tool_names) == ["get_order_status", "get_return_policy"]
    assert "in_transit" in result.text and "14" in result.text


async def test_two_questions_one_call_per_response_take_three_model_calls(bench: Bench) -> None:
    result = await bench.ask(
        "Где заказ 8041 и можно ли вернуть кофемашину?", parallel_tool_calls=False
    )
    assert len(bench.server.requests) == 3
    assert [b["parallel_tool_calls"] for b in bench.server.requests[:2]] == [False, False]
    assert [b["tool_choice"] for b in bench.server.requests] == ["auto", "auto", "none"]
    assert bench.executor.batches == [["get_order_status"], ["get_return_policy"]]
    assert result.tool_names == ["get_order_status", "get_return_policy"]


async def test_greeting_needs_no_tool(bench: Bench) -> None:
    result = await bench.ask("Здравствуйте!")
    assert len(bench.server.requests) == 1
    assert result.tool_names == [] and result.text.startswith("Здравствуйте")


# ------------------------------------------------------------------ the step bound


@pytest.mark.parametrize("max_steps", [1, 3, 5])
async def test_a_model_that_always_asks_for_tools_is_bounded(bench: Bench, max_steps: int) -> None:
    def always_tools(body: Body):
        if body.get("tool_choice") == "none":
            return completion(text="Итог по имеющимся данным.")
        n = len(body["messages"])  # a new order each step: a repeat would end the turn
        return completion(
            tool_calls=[fake_call("get_order_status", {"order_id": str(8040 + n)}, id=f"c{n}")]
        )

    bench.server.handler = always_tools
    result = await bench.ask("Где заказ 8041?", max_steps=max_steps)

    requests = bench.server.requests
    assert len(requests) == max_steps
    assert [b["tool_choice"] for b in requests] == ["auto"] * (max_steps - 1) + ["none"]
    assert len(result.tool_names) == max_steps - 1
    assert result.text == "Итог по имеющимся данным."


async def test_tool_calls_despite_none_are_a_protocol_error_and_do_not_run(bench: Bench) -> None:
    bench.server.handler = lambda body: completion(
        tool_calls=[fake_call("get_order_status", {"order_id": "8041"})]
    )
    with pytest.raises(ProtocolError) as caught:
        await bench.ask("Где заказ 8041?", max_steps=2)
    assert len(bench.server.requests) == 2
    assert caught.value.trace.tool_names == ["get_order_status"]  # step 1 only


# ------------------------------------------------------------------ errors back to the model


async def test_invalid_arguments_then_the_corrected_call_runs(bench: Bench) -> None:
    bench.server.handler = sequence(
        completion(tool_calls=[fake_call("get_order_status", {"order_id": "№8041"})]),
        completion(tool_calls=[fake_call("get_order_status", '{"order_id": "8041"')]),
        completion(tool_calls=[fake_call("get_order_status", {"order_id": "8041"})]),
        default_script,
    )
    result = await bench.ask("Где заказ №8041?", max_steps=4)

    first, malformed, good = bench.tool_results()
    assert first["error"]["code"] == "invalid_arguments"
    assert "4 digits" in first["error"]["message"]
    assert malformed["error"]["code"] == "invalid_arguments"
    assert good["ok"] is True
    assert result.tool_names == ["get_order_status"]  # only the valid call ran
    assert [a.status for a in result.trace.audit_records] == [
        AuditStatus.REJECTED,
        AuditStatus.REJECTED,
        AuditStatus.SUCCESS,
    ]


async def test_unknown_tool_gets_the_list_of_allowed_tools(bench: Bench) -> None:
    bench.server.handler = sequence(
        completion(tool_calls=[fake_call("cancel_order", {"order_id": "8041"})]),
        completion(text="Отменить заказ я не могу, но могу проверить его статус."),
    )
    result = await bench.ask("Отмените заказ 8041")
    [error_result] = bench.tool_results()
    assert error_result["error"]["code"] == "unknown_tool"
    assert "get_order_status" in error_result["error"]["message"]
    assert "get_return_policy" in error_result["error"]["message"]
    assert "get_shop_info" in error_result["error"]["message"]
    assert result.tool_names == []


# ------------------------------------------------------------------ typed outcomes


@pytest.mark.parametrize(
    ("reply", "expected"),
    [
        (completion(refusal="I can't help with that."), StopReason.REFUSED),
        (completion(text="", finish_reason="content_filter"), StopReason.REFUSED),
        (completion(text="Заказ 8041 в пу", finish_reason="length"), StopReason.TRUNCATED),
    ],
)
async def test_refusal_and_length_are_typed_stop_reasons(
    bench: Bench, reply, expected: StopReason
) -> None:
    bench.server.handler = lambda body: reply
    result = await bench.ask("Где заказ 8041?")
    assert result.stop_reason is expected


async def test_empty_text_is_a_protocol_error(bench: Bench) -> None:
    bench.server.handler = lambda body: completion(text="")
    with pytest.raises(ProtocolError):
        await bench.ask("Здравствуйте!")


async def test_server_error_on_every_model_is_unavailable(bench: Bench) -> None:
    bench.server.handler = lambda body: error(500)
    with pytest.raises(TurnUnavailable) as caught:
        await bench.ask("Здравствуйте!")
    assert caught.value.code == "unavailable"
    [record] = caught.value.trace.model_calls
    assert (record.status, record.error_code, record.model) == ("error", "unavailable", None)
    assert [b["model"] for b in bench.server.requests] == ["primary", "backup"]


async def test_429_then_the_fallback_model_answers_and_is_recorded(bench: Bench) -> None:
    bench.server.handler = by_model({"primary": error(429), "backup": default_script})
    result = await bench.ask("Где сейчас находится заказ 8041?")

    assert result.tool_names == ["get_order_status"]
    models = [b["model"] for b in bench.server.requests]
    assert models == ["primary", "backup", "primary", "backup"]
    for record in result.trace.model_calls:
        assert (record.requested_model, record.model, record.fallback) == (
            "primary",
            "backup",
            True,
        )


async def test_request_timeout_is_a_typed_error(bench: Bench) -> None:
    release = asyncio.Event()
    bench.server.handler = lambda body: completion(text="late", hold=release)
    bench.model = OpenAIChatModel(
        api_key="sk-test",
        model="primary",
        base_url=bench.server.base_url,
        timeout_s=0.2,
        max_retries=0,
    )
    try:
        with pytest.raises(TurnUnavailable) as caught:
            await bench.ask("Здравствуйте!")
    finally:
        release.set()
        await bench.model.aclose()
    assert caught.value.code == "timeout"


async def test_turn_deadline_cancels_the_model_call_and_keeps_the_audit(bench: Bench) -> None:
    release = asyncio.Event()
    bench.server.handler = sequence(
        default_script,  # step 1: get_order_status runs
        lambda body: completion(text="too late", hold=release),  # step 2 never answers
    )
    task = asyncio.create_task(bench.ask("Где заказ 8041?", turn_timeout_s=1.0))
    try:
        await bench.server.wait_for_requests(2)
        with pytest.raises(TurnTimeout) as caught:
            await task
    finally:
        release.set()
    trace = caught.value.trace
    assert trace.tool_names == ["get_order_status"]
    [audit] = trace.audit_records
    assert audit.status is AuditStatus.SUCCESS
    assert [(c.status, c.error_code) for c in trace.model_calls] == [
        ("ok", None),
        ("error", "turn_timeout"),
    ]


async def test_the_callers_messages_are_not_mutated(bench: Bench) -> None:
    messages = [
        {"role": "system", "content": "rules"},
        {"role": "user", "content": "Где заказ 8041 и можно ли вернуть кофемашину?"},
    ]
    before = json.dumps(messages)
    await bench.loop().run(messages, bench.context, prompt_ref="support_chat@1")
    assert json.dumps(messages) == before


# ------------------------------------------------------------------ tool-call protocol edge cases
# Through the chat service, so the audit rows are read back from the real SQLite file.


async def _answer_through_the_chat_service(bench: Bench, db: Database, text: str) -> TurnReply:
    registry = build_registry()
    loop = BoundedToolLoop(bench.model, registry, ToolExecutor(registry), max_steps=3)
    service = build_chat_service(
        db=db,
        loop=loop,
        model=bench.model,
        prompts=build_prompt_registry(),
        shop=ShopRepository(db),
        options=ChatOptions(shop_name="Демо-магазин"),
    )
    try:
        return await service.answer(Caller(key=1001, chat_id=1001), text)
    finally:
        await service.aclose()


async def _rows(db: Database, sql: str, *params: object) -> list[tuple[object, ...]]:
    return [tuple(row) for row in await db.fetch_all(sql, params)]


async def test_arguments_nested_too_deeply_go_back_as_invalid_and_the_turn_ends_in_text(
    bench: Bench, db: Database
) -> None:
    deep = '{"order_id":' + "[" * 2000 + "]" * 2000 + "}"
    bench.server.handler = sequence(
        completion(tool_calls=[fake_call("get_order_status", deep, id="call_deep")]),
        completion(text="Пришлите, пожалуйста, номер заказа из 4 цифр."),
    )
    reply = await _answer_through_the_chat_service(bench, db, "Где заказ?")

    assert reply.error_code is None
    assert reply.text == "Пришлите, пожалуйста, номер заказа из 4 цифр."
    [result] = bench.tool_results()
    assert result["error"]["code"] == "invalid_arguments"
    assert "nested too deeply" in result["error"]["message"]
    assert await _rows(db, "SELECT call_id, tool_name, status, error_code FROM tool_calls") == [
        ("call_deep", "get_order_status", "rejected", "invalid_arguments")
    ]
    # the turn is answered; no handler ran (turns.tool_calls counts the ones that did)
    assert await _rows(db, "SELECT status, error_code, tool_calls FROM turns") == [
        ("answered", None, 0)
    ]


async def test_two_calls_with_one_id_are_a_protocol_error_and_nothing_runs(
    bench: Bench, db: Database
) -> None:
    bench.server.handler = sequence(
        completion(
            tool_calls=[
                fake_call("get_order_status", {"order_id": "8041"}, id="call_same"),
                fake_call("get_order_status", {"order_id": "8042"}, id="call_same"),
            ]
        ),
    )
    reply = await _answer_through_the_chat_service(bench, db, "Где заказы 8041 и 8042?")

    assert reply.error_code == "protocol_error" and reply.text is None
    assert len(bench.server.requests) == 1  # no results were sent under the shared id
    assert await _rows(db, "SELECT count(*) FROM tool_calls") == [(0,)]
    assert await _rows(db, "SELECT status, error_code, tool_calls FROM turns") == [
        ("failed", "protocol_error", 0)
    ]
    assert await _rows(db, "SELECT status, finish_reason FROM llm_calls") == [("ok", "tool_calls")]


@pytest.mark.parametrize("bad_id", ["", "c" * 5000])
async def test_an_empty_or_huge_call_id_is_a_protocol_error(
    bench: Bench, db: Database, bad_id: str
) -> None:
    bench.server.handler = sequence(
        completion(
            tool_calls=[
                {
                    "id": bad_id,
                    "type": "function",
                    "function": {"name": "get_order_status", "arguments": '{"order_id":"8041"}'},
                }
            ]
        ),
    )
    reply = await _answer_through_the_chat_service(bench, db, "Где заказ 8041?")

    assert reply.error_code == "protocol_error"
    assert await _rows(db, "SELECT count(*) FROM tool_calls") == [(0,)]


def _call_ids(body: Body) -> tuple[list[str], list[str]]:
    """The call ids of a request's assistant messages and of its tool messages."""
    proposed = [
        call["id"]
        for m in body["messages"]
        if m["role"] == "assistant"
        for call in m.get("tool_calls") or []
    ]
    answered = [m["tool_call_id"] for m in body["messages"] if m["role"] == "tool"]
    return proposed, answered


async def test_an_id_reused_by_a_later_step_is_sent_back_under_a_turn_unique_id(
    bench: Bench, db: Database
) -> None:
    # a model that numbers its calls afresh in every response
    bench.server.handler = sequence(
        completion(tool_calls=[fake_call("get_order_status", {"order_id": "8041"}, id="call_0")]),
        completion(tool_calls=[fake_call("get_return_policy", {"product": "чайник"}, id="call_0")]),
        completion(text="Заказ в пути, чайник можно вернуть."),
    )
    reply = await _answer_through_the_chat_service(bench, db, "Где заказ 8041 и можно ли вернуть?")

    assert reply.error_code is None
    proposed, answered = _call_ids(bench.server.requests[-1])
    assert len(proposed) == 2 and len(set(proposed)) == 2  # strict providers require it
    assert answered == proposed
    assert proposed[0] == "call_0"  # the first keeps the model's own id


async def test_arguments_too_long_to_read_are_not_sent_back_on_later_steps(
    bench: Bench, db: Database
) -> None:
    huge = json.dumps({"order_id": "8" * 1_000_000})
    bench.server.handler = sequence(
        completion(tool_calls=[fake_call("get_order_status", huge, id="call_huge")]),
        completion(tool_calls=[fake_call("get_order_status", {"order_id": "8041"}, id="c2")]),
        completion(text="Заказ 8041 в пути."),
    )
    reply = await _answer_through_the_chat_service(bench, db, "Где заказ?")

    assert reply.error_code is None
    for body in bench.server.requests[1:]:
        assert len(json.dumps(body, ensure_ascii=False)) < 50_000  # not a megabyte each
        [stand_in, *_] = [
            call["function"]["arguments"]
            for m in body["messages"]
            if m["role"] == "assistant"
            for call in m.get("tool_calls") or []
        ]
        assert f"{len(huge)} characters" in json.loads(stand_in)["omitted"]
    assert bench.tool_results(1)[0]["error"]["code"] == "invalid_arguments"
