"""bot/runtime/metrics.py through the real turn recorder (a real SQLite file): records count once
they are committed, label values stay bounded, a failed write or a failing callback
counts nothing and breaks nothing."""

from __future__ import annotations

from dataclasses import replace

import pytest
from prometheus_client.parser import text_string_to_metric_families

from bot.runtime.metrics import Metrics
from storage.conversations import ConversationRepository
from storage.database import Database
from storage.records import AuditStatus, TurnRecorder
from tests.unit.storage.test_records import _audit, _model_call, _turn

Samples = dict[tuple[str, frozenset[tuple[str, str]]], float]


async def samples(metrics: Metrics) -> Samples:
    found: Samples = {}
    for family in text_string_to_metric_families((await metrics.render()).decode()):
        for sample in family.samples:
            found[(sample.name, frozenset(sample.labels.items()))] = sample.value
    return found


def value(found: Samples, name: str, **labels: str) -> float:
    return found.get((name, frozenset(labels.items())), 0.0)


def metrics() -> Metrics:
    return Metrics(tool_names=["get_order_status"], model_names=["primary", "backup"])


async def test_a_stored_turn_counts_its_outcome_tools_and_model_calls(db: Database) -> None:
    observed = metrics()
    recorder = TurnRecorder(db, observer=observed)
    session = await ConversationRepository(db).open_session(10)
    invented = replace(_audit(), call_id="c2", tool_name="x" * 64, status=AuditStatus.REJECTED)
    await recorder.save_turn(
        _turn(session, duration_ms=1500.0),
        audit_records=[_audit(), invented],
        model_calls=[_model_call(), _model_call(requested_model="gpt-unknown")],
    )
    await recorder.save_turn(
        _turn(session, id="turn-2", status="failed", stop_reason="error", error_code="timeout"),
        model_calls=[_model_call(status="error", error_code="timeout", latency_ms=30_000.0)],
    )
    await recorder.save_model_call(_model_call(purpose="summary"), session_id=session)

    found = await samples(observed)
    turns = "support_bot_turn_duration_seconds"
    assert value(found, f"{turns}_count", outcome="completed") == 1
    assert value(found, f"{turns}_sum", outcome="completed") == 1.5
    assert value(found, f"{turns}_bucket", outcome="completed", le="1.0") == 0
    assert value(found, f"{turns}_bucket", outcome="completed", le="2.0") == 1
    assert value(found, f"{turns}_count", outcome="timeout") == 1
    tools = "support_bot_tool_calls_total"
    assert value(found, tools, tool="get_order_status", status="business_error") == 1
    assert value(found, tools, tool="unknown", status="rejected") == 1  # never the name
    calls = "support_bot_model_call_duration_seconds_count"
    assert value(found, calls, model="primary", purpose="chat") == 2
    assert value(found, calls, model="other", purpose="chat") == 1
    assert value(found, calls, model="primary", purpose="summary") == 1
    errors = "support_bot_model_call_errors_total"
    assert value(found, errors, model="primary", purpose="chat", error="timeout") == 1


async def test_a_failed_write_counts_nothing(db: Database) -> None:
    observed = metrics()
    session = await ConversationRepository(db).open_session(10)
    with pytest.raises(Exception, match=r"(?i)check"):
        await TurnRecorder(db, observer=observed).save_turn(
            _turn(session), model_calls=[_model_call(purpose="not-a-purpose")]
        )
    found = await samples(observed)
    assert value(found, "support_bot_turn_duration_seconds_count", outcome="completed") == 0


async def test_an_observer_that_fails_does_not_lose_the_turn(db: Database) -> None:
    class Broken:
        def turn_saved(self, *_args: object) -> None:
            raise RuntimeError("broken metrics")

        def model_call_saved(self, *_args: object) -> None:
            raise RuntimeError("broken metrics")

    session = await ConversationRepository(db).open_session(10)
    await TurnRecorder(db, observer=Broken()).save_turn(_turn(session))
    row = await db.fetch_one("SELECT count(*) FROM turns")
    assert row is not None and row[0] == 1


async def test_scrape_time_sources_sync_async_labelled_and_failing() -> None:
    observed = metrics()
    depth = [3]

    async def inbox() -> dict[str, int]:
        return {"pending": 2, "failed": 1}

    def broken() -> float:
        raise RuntimeError("cannot read")

    observed.register_gauge("support_bot_send_queue_depth", "queue", lambda: depth[0])
    observed.register_gauge("support_bot_inbox_updates", "inbox", inbox, label="status")
    observed.register_counter("support_bot_flood_control_waits", "waits", lambda: 4)
    observed.register_gauge("support_bot_broken", "broken", broken)
    with pytest.raises(ValueError, match="twice"):
        observed.register_gauge("support_bot_send_queue_depth", "again", lambda: 0)

    found = await samples(observed)
    assert value(found, "support_bot_send_queue_depth") == 3
    assert value(found, "support_bot_inbox_updates", status="pending") == 2
    assert value(found, "support_bot_inbox_updates", status="failed") == 1
    assert value(found, "support_bot_flood_control_waits_total") == 4
    assert not any(name == "support_bot_broken" for name, _ in found)
    depth[0] = 0
    assert value(await samples(observed), "support_bot_send_queue_depth") == 0
