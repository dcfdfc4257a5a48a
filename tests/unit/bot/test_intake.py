"""The durable inbox: recorded before acknowledged, once per update id, in order per chat.

The intake is the one owner of per-chat ordering: the tests at the end drive the real
chat service and responder through it (/new waits for the running turn of its chat).
"""

from __future__ import annotations

import asyncio
import itertools
from collections import defaultdict
from collections.abc import AsyncIterator
from dataclasses import dataclass, field
from typing import Any

import pytest

from bot.runtime.intake import Intake, IntakeClosed, describe_update
from bot.runtime.responder import Responder
from bot.telegram.channel import TelegramChannel
from services.chat import ChatService, build_chat_service
from services.loop_types import LoopResult, LoopTrace, StopReason
from services.prompts import build_prompt_registry
from storage.conversations import ConversationRepository
from storage.database import Database
from storage.inbox import InboxRepository, InboxRow, StoredReply
from storage.shop import ShopRepository
from tests.doubles import ScriptedLLM, text_response
from tests.waits import OUTER_LIMIT_S
from tools.base import Caller


def update(update_id: int, chat_id: int, text: str = "hi") -> dict:
    return {
        "update_id": update_id,
        "message": {
            "message_id": update_id,
            "date": 0,
            "chat": {"id": chat_id, "type": "private"},
            "from": {"id": chat_id, "is_bot": False, "first_name": "A"},
            "text": text,
        },
    }


@dataclass
class Recorder:
    """Process/deliver callbacks that record calls and can be made to wait."""

    inbox: InboxRepository
    processed: list[int] = field(default_factory=list)
    delivered: list[int] = field(default_factory=list)
    gates: dict[int, asyncio.Event] = field(default_factory=dict)
    started: dict[int, asyncio.Event] = field(default_factory=dict)
    done: defaultdict[int, asyncio.Event] = field(
        default_factory=lambda: defaultdict(asyncio.Event)
    )

    def gate(self, update_id: int) -> asyncio.Event:
        self.started[update_id] = asyncio.Event()
        self.gates[update_id] = asyncio.Event()
        return self.gates[update_id]

    async def process(self, row: InboxRow) -> None:
        if row.update_id in self.started:
            self.started[row.update_id].set()
            await self.gates[row.update_id].wait()
        self.processed.append(row.update_id)
        self.done[row.update_id].set()
        await self.inbox.finish(row.update_id, "ignored", reason="test")

    async def deliver(self, row: InboxRow) -> None:
        self.delivered.append(row.update_id)
        await self.inbox.finish(row.update_id, "delivered")


@pytest.fixture
def inbox(db: Database) -> InboxRepository:
    return InboxRepository(db)


@pytest.fixture
def recorder(inbox: InboxRepository) -> Recorder:
    return Recorder(inbox)


@pytest.fixture
def intake(inbox: InboxRepository, recorder: Recorder) -> Intake:
    return Intake(inbox, process=recorder.process, deliver=recorder.deliver)


async def settle(intake: Intake) -> None:
    assert await intake.drain(10.0)


def test_describe_update_finds_chat_and_user_in_any_update_type() -> None:
    described = describe_update(update(7, 42))
    assert (described.update_id, described.chat_id, described.user_id) == (7, 42, 42)
    callback = {
        "update_id": 8,
        "callback_query": {"id": "x", "from": {"id": 5}, "message": {"chat": {"id": 9}}},
    }
    assert describe_update(callback).chat_id == 9
    assert describe_update({"update_id": 9, "poll": {"id": "p"}}).chat_id is None


async def test_accept_commits_before_returning(intake: Intake, inbox: InboxRepository) -> None:
    fresh = await intake.accept([update(1, 10), update(2, 11)])
    assert fresh == [1, 2]
    row = await inbox.get(1)
    assert row is not None and row.payload["message"]["text"] == "hi"
    await settle(intake)


async def test_a_redelivered_update_is_processed_once(intake: Intake, recorder: Recorder) -> None:
    await intake.accept([update(5, 10)])
    assert await intake.accept([update(5, 10)]) == []
    await settle(intake)
    assert recorder.processed == [5]


async def test_the_same_update_twice_in_one_batch_is_processed_once(
    intake: Intake, recorder: Recorder
) -> None:
    # concurrent webhook POSTs of one update can share a group commit
    assert await intake.accept([update(6, 10), update(6, 10)]) == [6]
    await settle(intake)
    assert recorder.processed == [6]


async def test_a_batch_larger_than_one_insert_is_recorded_whole(
    intake: Intake, recorder: Recorder, inbox: InboxRepository
) -> None:
    # the inbox inserts up to a hundred rows per statement: a redelivered id, a new one
    # and the same id twice must come out as they would one by one, in every chunk
    await intake.accept([update(n, 1000 + n) for n in range(1, 51)])
    batch = [update(n, 1000 + n) for n in range(1, 251)] + [update(250, 1250)]
    assert await intake.accept(batch) == list(range(51, 251))
    await settle(intake)
    assert sorted(recorder.processed) == list(range(1, 251))
    row = await inbox.get(250)
    assert row is not None and row.chat_id == 1250 and row.payload["message"]["text"] == "hi"


async def test_ids_need_not_increase(intake: Intake, recorder: Recorder) -> None:
    await intake.accept([update(900, 10)])
    await intake.accept([update(100, 11)])  # smaller id, new update: still processed
    await settle(intake)
    assert sorted(recorder.processed) == [100, 900]


async def test_one_chat_in_order_other_chats_concurrently(
    intake: Intake, recorder: Recorder
) -> None:
    first = recorder.gate(1)
    await intake.accept([update(1, 10), update(2, 10), update(3, 20)])
    await asyncio.wait_for(recorder.started[1].wait(), OUTER_LIMIT_S)
    # chat 20 is not blocked by chat 10's running turn
    await asyncio.wait_for(recorder.done[3].wait(), OUTER_LIMIT_S)
    assert 2 not in recorder.processed  # chat 10's second update waits for the first
    first.set()
    await settle(intake)
    assert recorder.processed.index(1) < recorder.processed.index(2)
    assert intake.busy_chats == 0


async def test_resume_processes_pending_and_delivers_stored_replies_without_processing(
    inbox: InboxRepository, recorder: Recorder, intake: Intake
) -> None:
    from storage.inbox import NewUpdate

    await inbox.record([NewUpdate(1, 10, 10, update(1, 10)), NewUpdate(2, 11, 11, update(2, 11))])
    await inbox.store_reply(2, [StoredReply("a", "a")])
    await inbox.record([NewUpdate(3, 12, 12, update(3, 12))])
    await inbox.finish(3, "delivered")
    assert await intake.resume() == 2
    await settle(intake)
    assert recorder.processed == [1]
    assert recorder.delivered == [2]


async def test_drain_refuses_new_updates_and_leaves_unfinished_ones_pending(
    intake: Intake, recorder: Recorder, inbox: InboxRepository
) -> None:
    recorder.gate(1)
    await intake.accept([update(1, 10)])
    await asyncio.wait_for(recorder.started[1].wait(), OUTER_LIMIT_S)
    assert await intake.drain(0.0) is False
    with pytest.raises(IntakeClosed):
        await intake.accept([update(2, 10)])
    row = await inbox.get(1)
    assert row is not None and row.status == "pending"
    assert await inbox.get(2) is None


@dataclass
class FakeResult:
    status: str
    message_id: int | None = None
    reason: str | None = None


class ScriptedSender:
    def __init__(self, *results: FakeResult) -> None:
        self.results = list(results)
        self.sent: list[tuple[int, str, str | None]] = []

    async def send_text(
        self,
        chat_id,
        text,
        *,
        parse_mode=None,
        plain_text=None,
        reply_to_message_id=None,
        reply_markup=None,
    ):  # type: ignore[no-untyped-def]
        self.sent.append((chat_id, text, plain_text))
        return self.results.pop(0)

    async def call(self, method):  # type: ignore[no-untyped-def]
        return True


async def stored_row(inbox: InboxRepository, update_id: int = 1) -> InboxRow:
    from storage.inbox import NewUpdate

    await inbox.record([NewUpdate(update_id, 10, 10, update(update_id, 10))])
    row = await inbox.get(update_id)
    assert row is not None
    return row


async def test_reply_is_stored_then_sent_and_message_ids_recorded(inbox: InboxRepository) -> None:
    sender = ScriptedSender(FakeResult("delivered", 71), FakeResult("delivered", 72))
    responder = Responder(inbox, TelegramChannel(sender))
    row = await stored_row(inbox)
    await responder.reply(row, [StoredReply("<b>a</b>", "a"), StoredReply("b", "b")], turn_id="t1")
    done = await inbox.get(1)
    assert done is not None
    assert (done.status, done.message_ids, done.turn_id) == ("delivered", (71, 72), "t1")
    assert [s[2] for s in sender.sent] == ["a", "b"]
    assert inbox.finished == {"delivered": 1}  # /metrics counts it once
    # a second reply to the same update is refused: never answered twice
    await responder.reply(row, [StoredReply("again", "again")])
    assert len(sender.sent) == 2


async def test_delivery_resumes_after_the_last_accepted_part(inbox: InboxRepository) -> None:
    row = await stored_row(inbox)
    await inbox.store_reply(1, [StoredReply("a", "a"), StoredReply("b", "b")])
    await inbox.add_message_id(1, 71)  # part one reached Telegram, then the process died
    sender = ScriptedSender(FakeResult("delivered", 72))
    stored = await inbox.get(row.update_id)
    assert stored is not None
    await Responder(inbox, TelegramChannel(sender)).deliver(stored)
    assert [s[1] for s in sender.sent] == ["b"]
    final = await inbox.get(1)
    assert final is not None and final.message_ids == (71, 72) and final.status == "delivered"


async def test_unknown_send_outcome_is_recorded_not_retried(inbox: InboxRepository) -> None:
    row = await stored_row(inbox)
    sender = ScriptedSender(FakeResult("unknown", None, "read_timeout"))
    await Responder(inbox, TelegramChannel(sender)).reply(
        row, [StoredReply("a", "a"), StoredReply("b", "b")]
    )
    final = await inbox.get(1)
    assert final is not None
    assert (final.status, final.reason) == ("unknown", "read_timeout")
    assert len(sender.sent) == 1
    assert await inbox.unfinished() == []  # not resent on the next start either


async def test_prune_removes_only_old_finished_rows(db: Database) -> None:
    from storage.inbox import NewUpdate

    now = [1_000_000.0]
    inbox = InboxRepository(db, clock=lambda: now[0])
    await inbox.record([NewUpdate(1, 10, 10, update(1, 10)), NewUpdate(2, 11, 11, update(2, 11))])
    await inbox.finish(1, "delivered")  # row 2 stays pending
    now[0] += 8 * 86_400
    assert await inbox.prune(older_than_s=7 * 86_400) == 1
    assert await inbox.get(1) is None
    assert await inbox.get(2) is not None  # unfinished work is never pruned


async def test_answers_telegram_never_got_are_sent_on_the_next_start(db: Database) -> None:
    from bot.telegram.sender import RETRYABLE_FAILURES
    from storage.inbox import NewUpdate

    now = [1_000_000.0]
    inbox = InboxRepository(db, clock=lambda: now[0])
    # 1: Telegram was unreachable until the process stopped; 2: the user blocked the bot;
    # 3: unreachable too, but two days ago
    await inbox.record([NewUpdate(3, 12, 12, update(3, 12))])
    now[0] += 2 * 86_400
    await inbox.record([NewUpdate(i, 10 + i, 10 + i, update(i, 10 + i)) for i in (1, 2)])
    for update_id, reason in ((1, "network"), (2, "forbidden"), (3, "network")):
        await inbox.store_reply(update_id, [StoredReply("ответ", "ответ")])
        await inbox.finish(update_id, "failed", reason=reason)

    assert await inbox.reopen_failed(reasons=RETRYABLE_FAILURES, newer_than_s=86_400) == 1
    sender = ScriptedSender(FakeResult("delivered", 81))
    responder = Responder(inbox, TelegramChannel(sender))
    recorder = Recorder(inbox)
    intake = Intake(inbox, process=recorder.process, deliver=responder.deliver)
    assert await intake.resume() == 1
    await settle(intake)
    assert recorder.processed == []  # nothing handled again: no model call
    assert [s[1] for s in sender.sent] == ["ответ"]  # the stored answer, as stored
    statuses = {i: (await inbox.get(i)).status for i in (1, 2, 3)}  # type: ignore[union-attr]
    assert statuses == {1: "delivered", 2: "failed", 3: "failed"}


# --- the intake is the one owner of per-chat ordering ----------------------------------
# Downstream (the chat service, the responder, the sender) keeps no per-chat lock or
# queue: these tests drive the real ChatService and Responder through the intake.


class GatedLoop:
    """Stands in for the tool loop: answers "re: <text>", optionally held by a gate."""

    def __init__(self, events: list[str]) -> None:
        self.events = events
        self.requests: list[list[str]] = []
        self.held: dict[str, asyncio.Event] = {}
        self.entered: defaultdict[str, asyncio.Event] = defaultdict(asyncio.Event)
        self.in_flight = 0
        self.most_in_flight = 0

    async def run(
        self, messages: Any, context: Any, *, prompt_ref: str, language: str | None = None
    ) -> LoopResult:
        text = str(messages[-1]["content"])
        self.requests.append([str(m["content"]) for m in messages if m["role"] != "system"])
        self.in_flight += 1
        self.most_in_flight = max(self.most_in_flight, self.in_flight)
        self.events.append(f"turn {text}")
        self.entered[text].set()
        if text in self.held:
            await self.held[text].wait()
        await asyncio.sleep(0)  # a chance for anything that could overlap to run
        self.in_flight -= 1
        return LoopResult(
            text=f"re: {text}",
            stop_reason=StopReason.COMPLETED,
            trace=LoopTrace(model_steps=1),
            prompt_ref=prompt_ref,
        )


class DeliveringSender:
    """Accepts every message; records the send in the shared event list."""

    def __init__(self, events: list[str]) -> None:
        self.events = events
        self.ids = itertools.count(100)

    async def send_text(
        self,
        chat_id,
        text,
        *,
        parse_mode=None,
        plain_text=None,
        reply_to_message_id=None,
        reply_markup=None,
    ):  # type: ignore[no-untyped-def]
        await asyncio.sleep(0)
        self.events.append(f"sent {text}")
        return FakeResult("delivered", next(self.ids))

    async def call(self, method):  # type: ignore[no-untyped-def]
        return True


@dataclass
class Pipeline:
    """Intake -> (a miniature of the chat and command routers) -> ChatService -> Responder."""

    intake: Intake
    chat_service: ChatService
    loop: GatedLoop
    events: list[str]


@pytest.fixture
async def pipeline(db: Database, inbox: InboxRepository) -> AsyncIterator[Pipeline]:
    events: list[str] = []
    loop = GatedLoop(events)
    chat_service = build_chat_service(
        db=db,
        loop=loop,
        model=ScriptedLLM(lambda messages, tool_choice: text_response("summary")),
        prompts=build_prompt_registry(),
        shop=ShopRepository(db),
    )
    responder = Responder(inbox, TelegramChannel(DeliveringSender(events)))

    async def process(row: InboxRow) -> None:
        assert row.chat_id is not None and row.user_id is not None
        text = row.payload["message"]["text"]
        if text == "/new":
            await chat_service.reset(row.chat_id)
            events.append("reset")
            await responder.reply(row, [StoredReply("new session", "new session")])
            return
        reply = await chat_service.answer(
            Caller(key=row.user_id, chat_id=row.chat_id), text, request_key=str(row.update_id)
        )
        answer = reply.text or "error"
        await responder.reply(row, [StoredReply(answer, answer)], turn_id=reply.turn_id)

    intake = Intake(inbox, process=process, deliver=responder.deliver)
    yield Pipeline(intake, chat_service, loop, events)
    await chat_service.aclose()


async def test_a_chats_updates_run_one_at_a_time_in_arrival_order(pipeline: Pipeline) -> None:
    release = pipeline.loop.held["one"] = asyncio.Event()
    # arrival order, not id order; three batches, as three getUpdates or webhook POSTs
    await pipeline.intake.accept([update(30, 10, "one")])
    await pipeline.intake.accept([update(10, 10, "two")])
    await pipeline.intake.accept([update(20, 10, "three")])
    await asyncio.wait_for(pipeline.loop.entered["one"].wait(), OUTER_LIMIT_S)
    release.set()
    await settle(pipeline.intake)

    assert pipeline.loop.most_in_flight == 1
    assert pipeline.events == [
        "turn one",
        "sent re: one",  # the whole handling, delivery included, before the next update
        "turn two",
        "sent re: two",
        "turn three",
        "sent re: three",
    ]
    # each turn was asked with the previous pairs already stored
    assert pipeline.loop.requests[2] == ["one", "re: one", "two", "re: two", "three"]


async def test_new_waits_for_the_running_turn_then_resets(pipeline: Pipeline, db: Database) -> None:
    conversations = ConversationRepository(db)
    release = pipeline.loop.held["old question"] = asyncio.Event()
    await pipeline.intake.accept([update(1, 10, "old question")])
    await asyncio.wait_for(pipeline.loop.entered["old question"].wait(), OUTER_LIMIT_S)
    old = await conversations.current_session(10)
    await pipeline.intake.accept([update(2, 10, "/new")])  # while the turn runs
    # another chat's whole turn, accepted after /new, gives /new every chance to run
    await pipeline.intake.accept([update(3, 20, "other chat")])
    async with asyncio.timeout(60):  # a bound on a deadlock, not a timing assertion
        while "sent re: other chat" not in pipeline.events:  # noqa: ASYNC110
            await asyncio.sleep(0)
    assert "reset" not in pipeline.events
    release.set()
    await settle(pipeline.intake)

    chat_10 = [e for e in pipeline.events if "other chat" not in e]
    assert chat_10 == ["turn old question", "sent re: old question", "reset", "sent new session"]
    assert old is not None
    pairs = await conversations.recent_messages(old, limit=10)
    assert [m.content for m in pairs] == ["old question", "re: old question"]
    new = await conversations.current_session(10)
    assert new is not None and new != old
    assert await conversations.recent_messages(new, limit=10) == []


async def test_other_chats_are_not_held_behind_a_running_turn(pipeline: Pipeline) -> None:
    release = pipeline.loop.held["slow"] = asyncio.Event()
    await pipeline.intake.accept([update(1, 10, "slow"), update(2, 20, "fast")])
    await asyncio.wait_for(pipeline.loop.entered["slow"].wait(), OUTER_LIMIT_S)
    await asyncio.wait_for(pipeline.loop.entered["fast"].wait(), OUTER_LIMIT_S)
    release.set()
    await settle(pipeline.intake)
    assert sorted(pipeline.events) == sorted(
        ["turn slow", "turn fast", "sent re: slow", "sent re: fast"]
    )


async def test_no_state_is_kept_for_idle_chats(pipeline: Pipeline) -> None:
    await pipeline.intake.accept([update(i, 1000 + i, "hi") for i in range(1, 51)])
    await pipeline.intake.accept([update(99, 1007, "/new")])
    await pipeline.intake.join()
    assert pipeline.intake.busy_chats == 0
    assert pipeline.events.count("sent re: hi") == 50 and "reset" in pipeline.events
