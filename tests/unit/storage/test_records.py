"""A turn's rows are written together; unknown token counts stay NULL."""

from __future__ import annotations

from dataclasses import replace

import pytest

from storage.conversations import ConversationRepository
from storage.database import Database
from storage.records import (
    AuditRecord,
    AuditStatus,
    HistoryPair,
    ModelCallRecord,
    TurnRecord,
    TurnRecorder,
)
from storage.stats import TOOL_STATUSES


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
        "model_steps": 2,
        "tool_calls": 1,
        "prompt_tokens": None,
        "completion_tokens": None,
        "total_tokens": None,
        "prompt": "support_chat@1",
    }
    values.update(changes)
    return TurnRecord(**values)  # type: ignore[arg-type]


def _audit() -> AuditRecord:
    return AuditRecord(
        call_id="call_1",
        tool_name="get_order_status",
        user_id=20,
        chat_id=10,
        turn_id="turn-1",
        session_id=None,
        started_at=1000.1,
        duration_ms=3.0,
        status=AuditStatus.BUSINESS_ERROR,
        error_code="not_found",
    )


def _model_call(**changes: object) -> ModelCallRecord:
    values: dict[str, object] = {
        "purpose": "chat",
        "requested_model": "primary",
        "model": "backup",
        "started_at": 1000.0,
        "latency_ms": 40.0,
        "status": "ok",
        "finish_reason": "tool_calls",
        "prompt_tokens": 100,
        "completion_tokens": None,
        "total_tokens": None,
        "response_id": "resp-1",
    }
    values.update(changes)
    return ModelCallRecord(**values)  # type: ignore[arg-type]


async def test_turn_with_audit_usage_and_history_in_one_go(db: Database) -> None:
    session = await ConversationRepository(db).open_session(10)
    await TurnRecorder(db).save_turn(
        _turn(session),
        audit_records=[_audit()],
        model_calls=[_model_call()],
        history=HistoryPair(user_text="Где заказ 8041?", assistant_text="В пути."),
    )

    turn = await db.fetch_one("SELECT * FROM turns WHERE id = 'turn-1'")
    assert turn is not None
    assert (turn["status"], turn["stop_reason"], turn["error_code"]) == (
        "answered",
        "completed",
        None,
    )
    assert (turn["model_steps"], turn["tool_calls"], turn["prompt"]) == (2, 1, "support_chat@1")
    assert turn["prompt_tokens"] is None and turn["total_tokens"] is None

    audit = await db.fetch_one("SELECT * FROM tool_calls")
    assert audit is not None
    assert (audit["turn_id"], audit["session_id"], audit["tool_name"]) == (
        "turn-1",
        session,
        "get_order_status",
    )
    assert (audit["status"], audit["error_code"]) == ("business_error", "not_found")

    usage = await db.fetch_one("SELECT * FROM llm_calls")
    assert usage is not None
    assert (usage["purpose"], usage["status"], usage["fallback"], usage["model"]) == (
        "chat",
        "ok",
        1,
        "backup",
    )
    assert usage["prompt_tokens"] == 100 and usage["completion_tokens"] is None

    messages = await db.fetch_all("SELECT role, content, turn_id FROM messages ORDER BY id")
    assert [(m["role"], m["content"], m["turn_id"]) for m in messages] == [
        ("user", "Где заказ 8041?", "turn-1"),
        ("assistant", "В пути.", "turn-1"),
    ]


async def test_a_failing_write_leaves_nothing_of_the_turn(db: Database) -> None:
    session = await ConversationRepository(db).open_session(10)
    bad_call = _model_call(purpose="not-a-purpose")  # violates the CHECK constraint
    with pytest.raises(Exception, match=r"(?i)check"):
        await TurnRecorder(db).save_turn(
            _turn(session),
            audit_records=[_audit()],
            model_calls=[bad_call],
            history=HistoryPair(user_text="q", assistant_text="a"),
        )
    for table in ("turns", "tool_calls", "llm_calls", "messages"):
        row = await db.fetch_one(f"SELECT COUNT(*) FROM {table}")
        assert row is not None and row[0] == 0, table


async def test_summary_call_recorded_without_turn(db: Database) -> None:
    session = await ConversationRepository(db).open_session(10)
    await TurnRecorder(db).save_model_call(
        _model_call(purpose="summary", model=None, status="error", error_code="timeout"),
        session_id=session,
    )
    usage = await db.fetch_one("SELECT * FROM llm_calls")
    assert usage is not None
    assert (usage["purpose"], usage["status"], usage["error_code"]) == (
        "summary",
        "error",
        "timeout",
    )
    assert usage["turn_id"] is None and usage["session_id"] == session
    assert usage["fallback"] == 0


async def test_every_audit_status_is_one_the_schema_accepts(db: Database) -> None:
    """`AuditStatus` is the single vocabulary of tool_calls.status (stats counts by it)."""
    assert TOOL_STATUSES == tuple(status.value for status in AuditStatus)
    session = await ConversationRepository(db).open_session(10)
    audits = [
        replace(_audit(), call_id=f"call_{status.value}", status=status) for status in AuditStatus
    ]
    await TurnRecorder(db).save_turn(_turn(session), audit_records=audits)
    rows = await db.fetch_all("SELECT status FROM tool_calls ORDER BY id")
    assert tuple(row["status"] for row in rows) == TOOL_STATUSES
