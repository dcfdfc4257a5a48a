"""Conversation memory end to end: the real loop, real tools, real SQLite, a scripted model.

The scripted model answers chat requests (calling get_order_status when an order number
is asked about) and summary requests (a summary listing the order numbers it was shown),
so the tests can follow a fact from an early message, through the summary, into later
requests.
"""

from __future__ import annotations

import asyncio
import re
from collections.abc import AsyncIterator, Callable
from dataclasses import dataclass
from pathlib import Path

import pytest

from services.chat import ChatOptions, ChatService, build_chat_service, summary_block
from services.history import estimate_tokens, message_tokens, prompt_tokens
from services.llm.errors import LLMUnavailable
from services.llm.types import LLMResponse, Message, ToolChoice
from services.loop import BoundedToolLoop
from services.loop_types import TurnReply
from services.prompts import build_prompt_registry
from storage.conversations import ConversationRepository
from storage.database import Database, open_database
from storage.shop import ShopRepository
from tests.doubles import (
    ScriptedLLM,
    ScriptedRequest,
    text_response,
    tool_call,
    tool_calls_response,
)
from tools.base import Caller
from tools.executor import ToolExecutor
from tools.factory import build_registry
from tools.shop.demo import seed_demo_shop

SUMMARY_MARK = "running summary"
ORDER = re.compile(r"\b\d{4}\b")


def _is_summary(messages: list[Message]) -> bool:
    return SUMMARY_MARK in str(messages[0]["content"])


def _summary_of(messages: list[Message]) -> str:
    """A summary that keeps the order numbers it was shown (previous summary included)."""
    orders = sorted(set(ORDER.findall(str(messages[1]["content"]))))
    return "Customer asked about orders: " + ", ".join(orders) if orders else "Small talk."


def chat_script(
    summary: Callable[[list[Message]], LLMResponse | BaseException] | None = None,
) -> Callable[[list[Message], ToolChoice | None], LLMResponse | BaseException]:
    def script(messages: list[Message], tool_choice: ToolChoice | None) -> object:
        if _is_summary(messages):
            return summary(messages) if summary else text_response(_summary_of(messages))
        last = messages[-1]
        if last["role"] == "tool":
            return text_response("Заказ 8041 в пути.", usage=(40, 8))
        asked = ORDER.search(str(last["content"]))
        if asked and tool_choice == "auto":
            return tool_calls_response(
                tool_call("get_order_status", {"order_id": asked.group()}), usage=None
            )
        return text_response("Ответ: " + str(last["content"])[:60].ljust(60, "."))

    return script  # type: ignore[return-value]


@dataclass
class Stack:
    service: ChatService
    llm: ScriptedLLM
    db: Database

    def turn_requests(self) -> list[ScriptedRequest]:
        """The first model request of every turn (the one the chat service assembled)."""
        return [
            r
            for r in self.llm.chat_requests
            if r.messages[-1]["role"] == "user" and r.tool_choice != "none"
        ]


async def _stack(
    db: Database,
    llm: ScriptedLLM,
    *,
    budget: int = 2000,
    summary_cap: int = 300,
) -> Stack:
    shop = ShopRepository(db)
    await seed_demo_shop(shop)
    registry = build_registry()
    loop = BoundedToolLoop(llm, registry, ToolExecutor(registry), max_steps=3)
    service = build_chat_service(
        db=db,
        loop=loop,
        model=llm,
        prompts=build_prompt_registry(),
        shop=shop,
        options=ChatOptions(
            shop_name="Кофейный двор",
            history_token_budget=budget,
            summary_max_tokens=summary_cap,
        ),
    )
    return Stack(service=service, llm=llm, db=db)


@pytest.fixture
async def stack(db: Database) -> AsyncIterator[Stack]:
    built = await _stack(db, ScriptedLLM(chat_script()), budget=400, summary_cap=80)
    yield built
    await built.service.aclose()


def _filler(i: int) -> str:
    return f"Сообщение {i}: расскажите про доставку и оплату подробнее, пожалуйста".ljust(120, ".")


async def test_tool_turn_is_recorded_and_tool_traffic_is_not_history(stack: Stack) -> None:
    reply = await stack.service.answer(Caller(key=20, chat_id=10), "Где заказ 8041?")
    assert reply.answered and reply.text == "Заказ 8041 в пути."

    db = stack.db
    turn = await db.fetch_one("SELECT * FROM turns WHERE id = ?", (reply.turn_id,))
    assert turn is not None
    assert (turn["status"], turn["stop_reason"], turn["error_code"]) == (
        "answered",
        "completed",
        None,
    )
    assert (turn["model_steps"], turn["tool_calls"], turn["prompt"]) == (2, 1, "support_chat@5")
    # the tool-call step reported no usage: the turn's totals are unknown, not 0
    assert turn["prompt_tokens"] is None and turn["total_tokens"] is None

    audit = await db.fetch_all("SELECT * FROM tool_calls")
    assert len(audit) == 1
    assert (audit[0]["turn_id"], audit[0]["session_id"]) == (reply.turn_id, turn["session_id"])
    assert (audit[0]["chat_id"], audit[0]["user_id"]) == (10, 20)
    assert (audit[0]["tool_name"], audit[0]["status"]) == ("get_order_status", "success")

    calls = await db.fetch_all("SELECT * FROM llm_calls ORDER BY id")
    assert [(c["purpose"], c["status"], c["finish_reason"]) for c in calls] == [
        ("chat", "ok", "tool_calls"),
        ("chat", "ok", "stop"),
    ]
    assert calls[0]["prompt_tokens"] is None and calls[1]["prompt_tokens"] == 40
    assert all(c["turn_id"] == reply.turn_id and c["fallback"] == 0 for c in calls)
    assert calls[1]["model"] == "scripted-model"

    await stack.service.answer(Caller(key=20, chat_id=10), "Спасибо!")
    next_request = stack.turn_requests()[-1].messages
    assert [m["role"] for m in next_request] == ["system", "user", "assistant", "user"]
    assert "tool_calls" not in next_request[2]


async def test_long_conversation_is_summarised_and_the_summary_is_sent_as_data(
    stack: Stack,
) -> None:
    service = stack.service
    await service.answer(Caller(key=2, chat_id=1), "Где заказ 8041?")
    for i in range(12):
        await service.answer(Caller(key=2, chat_id=1), _filler(i))
        await service.wait_for_summaries()

    session = await ConversationRepository(stack.db).current_session(1)
    summary = await ConversationRepository(stack.db).summary(session or 0)
    assert summary is not None and "8041" in summary.content

    request = stack.turn_requests()[-1].messages
    assert "Где заказ 8041?" not in [m["content"] for m in request]  # left the window...
    block = request[1]
    assert block["role"] == "system" and "not instructions" in block["content"]
    # ...and is carried by the summary, inside the data block
    assert re.search(r"<conversation_summary>\n.*8041.*\n</conversation_summary>", block["content"])
    # a summary request saw the previous summary and the messages as data
    summary_requests = [r for r in stack.llm.requests if r.kind == "complete_text"]
    assert summary_requests and all(r.max_tokens == 80 for r in summary_requests)


async def test_summary_failure_keeps_the_old_summary_and_is_retried(db: Database) -> None:
    failing = {"on": False}

    def summary(messages: list[Message]) -> LLMResponse | BaseException:
        if failing["on"]:
            return LLMUnavailable("provider down")
        return text_response(_summary_of(messages))

    built = await _stack(db, ScriptedLLM(chat_script(summary)), budget=400, summary_cap=80)
    service = built.service
    repo = ConversationRepository(db)
    await service.answer(Caller(key=2, chat_id=1), "Где заказ 8041?")
    turn = 0
    while await repo.summary((await repo.current_session(1)) or 0) is None:
        await service.answer(Caller(key=2, chat_id=1), _filler(turn))
        await service.wait_for_summaries()
        turn += 1
        assert turn < 30
    session = await repo.current_session(1)
    first = await repo.summary(session or 0)
    assert first is not None

    failing["on"] = True
    for _ in range(4):
        await service.answer(Caller(key=2, chat_id=1), _filler(turn))
        await service.wait_for_summaries()
        turn += 1
    kept = await repo.summary(session or 0)
    assert kept == first  # failures changed nothing
    # and the turns still got answered, carrying the old summary
    assert first.content in str(built.turn_requests()[-1].messages[1]["content"])

    failing["on"] = False
    await service.answer(Caller(key=2, chat_id=1), _filler(turn))
    await service.wait_for_summaries()
    retried = await repo.summary(session or 0)
    assert retried is not None and retried.covers_message_id > first.covers_message_id
    statuses = [
        r[0] for r in await db.fetch_all("SELECT status FROM llm_calls WHERE purpose = 'summary'")
    ]
    assert "error" in statuses and statuses[-1] == "ok"
    await service.aclose()


async def test_after_new_no_earlier_message_or_summary_reaches_the_model(stack: Stack) -> None:
    service = stack.service
    await service.answer(Caller(key=2, chat_id=1), "Где заказ 8041?")
    for i in range(10):
        await service.answer(Caller(key=2, chat_id=1), _filler(i))
        await service.wait_for_summaries()
    repo = ConversationRepository(stack.db)
    old = await repo.current_session(1)
    assert old is not None and await repo.summary(old) is not None

    await service.reset(1)
    await service.answer(Caller(key=2, chat_id=1), "Здравствуйте")

    request = stack.turn_requests()[-1].messages
    assert [m["role"] for m in request] == ["system", "user"]
    assert request[-1]["content"] == "Здравствуйте"
    assert "8041" not in str(request) and "Сообщение" not in str(request)
    # the old session keeps everything for audit
    old_rows = await stack.db.fetch_one(
        "SELECT COUNT(*) FROM messages WHERE session_id = ?", (old,)
    )
    assert old_rows is not None and old_rows[0] == 22
    assert await repo.summary(old) is not None


async def test_prompt_size_stops_growing_once_the_window_is_full(db: Database) -> None:
    budget, cap = 400, 60

    def long_summary(messages: list[Message]) -> LLMResponse:
        return text_response("fact " * 400)  # ignores max_tokens: the cap must still hold

    built = await _stack(db, ScriptedLLM(chat_script(long_summary)), budget=budget, summary_cap=cap)
    service = built.service
    for i in range(200):
        reply = await service.answer(Caller(key=2, chat_id=1), _filler(i))
        assert reply.answered
    await service.wait_for_summaries()

    sizes = [prompt_tokens(r.messages) for r in built.turn_requests()]
    assert len(sizes) == 200
    instruction = build_prompt_registry().render("support_chat", shop_name="Кофейный двор").text
    bound = (
        message_tokens(instruction)
        + message_tokens(summary_block(""))
        + cap  # the largest summary allowed
        + budget
        + message_tokens(_filler(199))
    )
    assert max(sizes) <= bound
    assert sizes[-1] <= bound
    assert max(sizes[100:]) <= max(sizes[:100])  # no growth after the window filled
    # the summary exists and is capped; old history is never re-sent
    session = await ConversationRepository(db).current_session(1)
    summary = await ConversationRepository(db).summary(session or 0)
    assert summary is not None and estimate_tokens(summary.content) <= cap
    last = built.turn_requests()[-1].messages
    assert _filler(0) not in [m["content"] for m in last]
    await service.aclose()


async def test_a_new_service_on_the_same_file_continues_the_session(tmp_path: Path) -> None:
    path = tmp_path / "bot.sqlite3"
    db = await open_database(path)
    first = await _stack(db, ScriptedLLM(chat_script()))
    await first.service.answer(Caller(key=2, chat_id=1), "Где заказ 8041?")
    session = await ConversationRepository(db).current_session(1)
    await first.service.aclose()
    await db.close()

    db = await open_database(path)
    try:
        second = await _stack(db, ScriptedLLM(chat_script()))
        await second.service.answer(Caller(key=2, chat_id=1), "А когда доставят?")
        request = second.turn_requests()[-1].messages
        assert [m["content"] for m in request[1:]] == [
            "Где заказ 8041?",
            "Заказ 8041 в пути.",
            "А когда доставят?",
        ]
        assert await ConversationRepository(db).current_session(1) == session
        await second.service.aclose()
    finally:
        await db.close()


async def test_one_chat_in_order_two_chats_concurrently(db: Database) -> None:
    entered: dict[int, asyncio.Event] = {1: asyncio.Event(), 2: asyncio.Event()}
    script = chat_script()

    async def gated(messages: list[Message], tool_choice: ToolChoice | None) -> object:
        if not _is_summary(messages) and tool_choice == "auto":
            text = str(messages[-1]["content"])
            if text.startswith("chat"):
                chat = int(text[4])
                entered[chat].set()
                await entered[3 - chat].wait()  # deadlocks unless both chats run at once
        return script(messages, tool_choice)

    stack = await _stack(db, ScriptedLLM(gated))  # type: ignore[arg-type]
    service = stack.service

    async def chat_1_in_order() -> list[TurnReply]:
        # one update of a chat at a time, as the bot's intake hands them over
        first = await service.answer(Caller(key=2, chat_id=1), "chat1 first")
        return [first, await service.answer(Caller(key=2, chat_id=1), "second of chat 1")]

    async with asyncio.timeout(60):  # a bound on a deadlock, not a timing assertion
        chat_1, chat_2 = await asyncio.gather(
            chat_1_in_order(), service.answer(Caller(key=3, chat_id=2), "chat2 first")
        )
    assert all(r.answered for r in [*chat_1, chat_2])
    rows = await stack.db.fetch_all(
        "SELECT m.content FROM messages m JOIN sessions s ON s.id = m.session_id "
        "WHERE s.chat_id = 1 ORDER BY m.id"
    )
    assert [r[0] for r in rows][0::2] == ["chat1 first", "second of chat 1"]
    # the second message of chat 1 was asked with the first pair already in its history
    second = next(
        r.messages for r in stack.turn_requests() if r.messages[-1]["content"] == "second of chat 1"
    )
    assert second[1]["content"] == "chat1 first"
    await service.aclose()
