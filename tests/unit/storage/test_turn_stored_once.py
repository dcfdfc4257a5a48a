"""A turn is stored once, even when its write is tried again or a second worker ran it.

PostgreSQL can lose the answer to a COMMIT that did commit (the connection dropped):
the storage retry then writes the same turn again. And with several instances, one
whose claim on a chat expired (a long pause) may finish an update that another instance
already answered. In both cases the unique keys refuse the copy; `save_turn` must read
that as "already stored", not as a failed turn (which would mark the update failed).
"""

from __future__ import annotations

from collections.abc import Sequence

import pytest

from storage.conversations import ConversationRepository
from storage.database import Database, is_unique_violation
from storage.records import (
    AuditRecord,
    HistoryPair,
    ModelCallRecord,
    TurnRecord,
    TurnRecorder,
)


class CountingObserver:
    def __init__(self) -> None:
        self.turns: list[str] = []

    def turn_saved(
        self,
        turn: TurnRecord,
        audit_records: Sequence[AuditRecord],
        model_calls: Sequence[ModelCallRecord],
    ) -> None:
        self.turns.append(turn.id)

    def model_call_saved(self, call: ModelCallRecord) -> None:
        pass


def _turn(session_id: int, **changes: object) -> TurnRecord:
    values: dict[str, object] = {
        "id": "turn-1",
        "session_id": session_id,
        "chat_id": 10,
        "user_id": 20,
        "started_at": 1000.0,
        "duration_ms": 12.5,
        "status": "answered",
        "stop_reason": "completed",
        "error_code": None,
        "model_steps": 1,
        "tool_calls": 0,
        "prompt_tokens": 10,
        "completion_tokens": 5,
        "total_tokens": 15,
        "prompt": "support_chat@1",
        "request_key": "telegram:7",
    }
    values.update(changes)
    return TurnRecord(**values)  # type: ignore[arg-type]


async def _counts(db: Database) -> tuple[int, int, int]:
    turns = await db.fetch_one("SELECT count(*) FROM turns")
    messages = await db.fetch_one("SELECT count(*) FROM messages")
    daily = await db.fetch_one("SELECT sum(turns) FROM turn_totals_daily")
    assert turns is not None and messages is not None and daily is not None
    return int(turns[0]), int(messages[0]), int(daily[0])


async def test_the_same_turn_written_twice_is_stored_once(db: Database) -> None:
    session = await ConversationRepository(db).open_session(10)
    observer = CountingObserver()
    recorder = TurnRecorder(db, observer=observer)
    pair = HistoryPair(user_text="where is my order?", assistant_text="on its way")

    assert await recorder.save_turn(_turn(session), history=pair) is True
    assert await recorder.save_turn(_turn(session), history=pair) is False

    assert await _counts(db) == (1, 2, 1)  # one turn, one pair, counted once for /stats
    assert observer.turns == ["turn-1"]  # the metrics count it once too


async def test_a_second_answer_to_the_same_request_keeps_the_first(db: Database) -> None:
    session = await ConversationRepository(db).open_session(10)
    recorder = TurnRecorder(db)
    first = HistoryPair(user_text="hi", assistant_text="first answer")
    second = HistoryPair(user_text="hi", assistant_text="second answer")
    await recorder.save_turn(_turn(session, id="turn-a"), history=first)

    stored = await recorder.save_turn(_turn(session, id="turn-b"), history=second)

    assert stored is False
    assert await _counts(db) == (1, 2, 1)
    answered = await recorder.answered_turn("telegram:7")
    assert answered is not None
    assert (answered.turn_id, answered.answer) == ("turn-a", "first answer")


async def test_a_failed_turn_does_not_block_the_answer_of_its_request(db: Database) -> None:
    """Only an *answered* turn owns its request key: a retry after a failure is stored."""
    session = await ConversationRepository(db).open_session(10)
    recorder = TurnRecorder(db)
    failed = _turn(session, id="turn-f", status="failed", stop_reason="error", error_code="x")
    assert await recorder.save_turn(failed) is True
    assert await recorder.save_turn(_turn(session, id="turn-ok")) is True


async def test_a_unique_violation_that_is_not_this_turns_is_raised(db: Database) -> None:
    """Another unique key refusing the turn is a bug, not a stored turn: it is raised and
    nothing of the turn is written."""
    session = await ConversationRepository(db).open_session(10)
    recorder = TurnRecorder(db)
    await recorder.save_turn(_turn(session, id="turn-a", request_key="telegram:1"))
    async with db.transaction() as tx:
        await tx.execute("CREATE UNIQUE INDEX test_one_prompt ON turns(prompt)")

    with pytest.raises(Exception) as raised:
        await recorder.save_turn(_turn(session, id="turn-b", request_key="telegram:2"))

    assert is_unique_violation(raised.value)
    assert await _counts(db) == (1, 0, 1)
