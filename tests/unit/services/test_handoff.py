"""Handoff decisions on a real SQLite file: idempotent open/close, history once per update,
the brief, working hours and the /stats numbers."""

from __future__ import annotations

from datetime import UTC, datetime

import pytest

from services.handoff import OPERATOR_PREFIX, HandoffService, OperatorHours
from services.stats import handoff_stats
from storage.conversations import ConversationRepository
from storage.database import Database
from storage.handoffs import HandoffCounts, HandoffRepository
from tests.doubles.history import insert_pair

CHAT = 501


class Clock:
    def __init__(self) -> None:
        self.now = 1_800_000_000.0

    def __call__(self) -> float:
        return self.now


@pytest.fixture
def clock() -> Clock:
    return Clock()


@pytest.fixture
def service(db: Database, clock: Clock) -> HandoffService:
    return HandoffService(
        HandoffRepository(db, clock=clock), ConversationRepository(db, clock=clock), clock=clock
    )


async def test_opening_twice_keeps_one_open_handoff_and_closing_twice_closes_once(
    service: HandoffService, db: Database
) -> None:
    first = await service.start(CHAT, source="command")
    again = await service.start(CHAT, source="button")
    assert first.new and not again.new and again.handoff.id == first.handoff.id
    assert not await service.request_from_model(CHAT, "asks for a person")
    assert await service.close(CHAT, reason="command")
    assert not await service.close(CHAT, reason="topic_closed")  # Telegram's service message
    assert await service.current(CHAT) is None
    rows = await db.fetch_all("SELECT source, close_reason FROM handoffs")
    assert [tuple(r) for r in rows] == [("command", "command")]


async def test_what_was_said_enters_the_history_once_per_update(
    service: HandoffService, db: Database
) -> None:
    started = await service.start(CHAT, source="command")
    for _ in range(2):  # the same update handled again after a crash
        await service.customer_said(CHAT, update_id=10, text="where is my refund?")
        await service.operator_said(started.handoff, update_id=11, text="tomorrow")
    rows = await db.fetch_all("SELECT role, content FROM messages ORDER BY id")
    assert [tuple(r) for r in rows] == [
        ("user", "where is my refund?"),
        ("assistant", OPERATOR_PREFIX + "tomorrow"),
    ]
    current = await service.current(CHAT)
    assert current is not None and current.first_reply_at is not None


async def test_the_brief_has_the_reason_and_the_last_exchanges(
    service: HandoffService, db: Database
) -> None:
    session = await ConversationRepository(db).open_session(CHAT)
    for index in range(5):
        async with db.transaction() as conn:
            await insert_pair(
                conn,
                session_id=session,
                user_text=f"q{index}",
                assistant_text=f"a{index}",
                turn_id=None,
                created_at=0.0,
            )
    assert await service.request_from_model(CHAT, "cannot help")
    handoff = await service.current(CHAT)
    assert handoff is not None
    brief = await service.brief(handoff)
    assert (brief.source, brief.reason) == ("model", "cannot help")
    assert [(e.customer, e.answer) for e in brief.exchanges] == [
        ("q2", "a2"),
        ("q3", "a3"),
        ("q4", "a4"),
    ]


def _at(hour: int, minute: int = 0) -> float:
    return datetime(2026, 11, 30, hour, minute, tzinfo=UTC).timestamp()


def test_working_hours_at_an_offset_and_across_midnight() -> None:
    day = OperatorHours.parse("09:00-18:00", utc_offset_h=3)
    assert day.is_open(_at(6)) and day.is_open(_at(14, 59))  # 09:00 and 17:59 at UTC+3
    assert not day.is_open(_at(5, 59)) and not day.is_open(_at(15))
    assert day.label == "09:00–18:00 (UTC+3)"
    night = OperatorHours.parse("22:00-06:00")
    assert night.is_open(_at(23)) and night.is_open(_at(5)) and not night.is_open(_at(12))
    assert OperatorHours.parse("00:00-24:00").is_open(_at(23, 59))


@pytest.mark.parametrize("text", ["9-18", "09:00-09:00", "25:00-26:00", "09:60-10:00", ""])
def test_bad_working_hours_are_refused(text: str) -> None:
    with pytest.raises(ValueError):
        OperatorHours.parse(text)


def test_stats_median_of_first_replies() -> None:
    counts = HandoffCounts(
        started={"command": 2, "button": 1, "model": 3},
        open_now=2,
        closed=4,
        first_reply_delays_s=(10.0, 30.0, 50.0, 600.0),
    )
    stats = handoff_stats(counts)
    assert (stats.started, stats.by_model, stats.first_reply_median_s) == (6, 3, 40.0)
    assert (
        handoff_stats(
            HandoffCounts(started={}, open_now=0, closed=0, first_reply_delays_s=())
        ).first_reply_median_s
        is None
    )
