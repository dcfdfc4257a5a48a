"""/healthz checks: the delivery-threshold rule (a table), and each check on a real
database file: a stored answer waiting too long, a failing write, a file replaced or
deleted under the process, a write lock held by another connection."""

from __future__ import annotations

import os
import sqlite3
from dataclasses import dataclass
from pathlib import Path

import asyncpg
import pytest

from bot.runtime.health import Health, delivery_stalled
from bot.runtime.responder import Responder
from bot.telegram.channel import TelegramChannel
from storage.database import Database, open_database
from storage.inbox import InboxRepository, NewUpdate, StoredReply

THRESHOLD = 300.0
NOW = 10_000.0


@pytest.mark.parametrize(
    ("oldest_answered_at", "failing_since", "stalled"),
    [
        (None, None, False),  # nothing waits, nothing fails
        (NOW - 10, None, False),  # an answer being sent right now
        (NOW - THRESHOLD, None, False),  # exactly at the threshold: not yet
        (NOW - THRESHOLD - 1, None, True),  # waited longer than the threshold
        (None, NOW - 10, False),  # deliveries started failing a moment ago
        (None, NOW - THRESHOLD - 1, True),  # and have failed for longer than allowed
        (NOW - 5, NOW - THRESHOLD - 1, True),
        (NOW - THRESHOLD - 1, NOW - 5, True),
    ],
)
def test_delivery_threshold_rule(
    oldest_answered_at: float | None, failing_since: float | None, stalled: bool
) -> None:
    assert (
        delivery_stalled(
            now=NOW,
            threshold_s=THRESHOLD,
            oldest_answered_at=oldest_answered_at,
            failing_since=failing_since,
        )
        is stalled
    )


@dataclass
class Intake:
    stalled_chats: int = 0


@dataclass
class Delivery:
    failing_since: float | None = None


def health(db: Database, *, now: float = NOW, **kwargs: object) -> Health:
    return Health(
        db=db,
        inbox=InboxRepository(db),
        intake=kwargs.get("intake", Intake()),  # type: ignore[arg-type]
        delivery=kwargs.get("delivery", Delivery()),  # type: ignore[arg-type]
        delivery_threshold_s=THRESHOLD,
        cache_s=0,
        clock=lambda: now,
    )


async def store_answer(db: Database, *, at: float) -> None:
    inbox = InboxRepository(db, clock=lambda: at)
    await inbox.record([NewUpdate(update_id=1, chat_id=5, user_id=5, payload={"update_id": 1})])
    await inbox.store_reply(1, [StoredReply(html="a", plain="a")])


async def test_healthy(db: Database) -> None:
    report = await health(db).report()
    assert report.ok and report.failed == ()


async def test_a_stored_answer_waiting_beyond_the_threshold(db: Database) -> None:
    await store_answer(db, at=NOW - THRESHOLD - 1)
    assert (await health(db).report()).failed == ("delivery",)
    assert (await health(db, now=NOW - 60).report()).ok


async def test_deliveries_failing_beyond_the_threshold(db: Database) -> None:
    failing = Delivery(failing_since=NOW - THRESHOLD - 1)
    assert (await health(db, delivery=failing).report()).failed == ("delivery",)


async def test_stalled_chats_fail_the_intake_check(db: Database) -> None:
    assert (await health(db, intake=Intake(stalled_chats=1)).report()).failed == ("intake",)


@pytest.mark.sqlite_only  # PostgreSQL: the test below
async def test_a_failed_write_fails_until_a_write_succeeds(db: Database) -> None:
    row = await db.fetch_one("PRAGMA page_count")
    assert row is not None
    await db.fetch_one(f"PRAGMA max_page_count = {int(row[0])}")  # a full disk
    with pytest.raises(sqlite3.OperationalError):
        await db.write(
            "INSERT INTO updates(update_id, received_at, payload) VALUES (1, 0, ?)", ("x" * 20_000,)
        )
    # the probe writes nothing, so only the remembered failure shows a full disk
    assert (await health(db).report()).failed == ("storage_writes",)
    await db.fetch_one("PRAGMA max_page_count = 1073741823")
    await db.write("INSERT INTO updates(update_id, received_at, payload) VALUES (1, 0, 'x')")
    assert (await health(db).report()).ok


@pytest.mark.postgres
async def test_a_lock_timeout_is_a_failed_write_until_one_succeeds(pg_url: str) -> None:
    """PostgreSQL: a write that waited too long for a lock (lock_timeout, SQLSTATE 55P03)."""
    db = await open_database(pg_url)
    holder = await asyncpg.connect(pg_url)
    try:
        async with holder.transaction():
            await holder.execute("LOCK TABLE shop_texts IN ACCESS EXCLUSIVE MODE")
            with pytest.raises(asyncpg.LockNotAvailableError):
                async with db.transaction() as tx:
                    await tx.execute("SET LOCAL lock_timeout = '20ms'")
                    await tx.execute("INSERT INTO shop_texts(key, value) VALUES ('k', 'v')")
            # the probe and the reads use other tables: only the remembered failure shows
            assert (await health(db).report()).failed == ("storage_writes",)
        await db.write("INSERT INTO shop_texts(key, value) VALUES ('k', 'v')")
        assert (await health(db).report()).ok
    finally:
        await holder.close()
        await db.close()


async def test_a_replaced_or_deleted_file(tmp_path: Path) -> None:
    path = tmp_path / "bot.sqlite3"
    db = await open_database(path)
    try:
        assert (await health(db).report()).ok
        other = tmp_path / "other.sqlite3"
        sqlite3.connect(other).close()
        os.replace(other, path)
        assert db.file_problem() == "replaced"
        assert (await health(db).report()).failed == ("database",)
        os.remove(path)
        assert db.file_problem() == "missing"
        assert (await health(db).report()).failed == ("database",)
        assert not path.exists()  # the probe never creates a file
    finally:
        await db.close()


async def test_a_write_lock_held_elsewhere_beyond_the_busy_timeout(tmp_path: Path) -> None:
    path = tmp_path / "bot.sqlite3"
    db = await open_database(path)
    holder = sqlite3.connect(path, isolation_level=None)
    try:
        holder.execute("BEGIN IMMEDIATE")
        assert await db.write_probe() == "locked"
        holder.execute("ROLLBACK")
        assert await db.write_probe() is None
        size = path.stat().st_size
        assert await db.write_probe() is None and path.stat().st_size == size
    finally:
        holder.close()
        await db.close()


class ScriptedSender:
    def __init__(self, *outcomes: tuple[str, str | None]) -> None:
        self.outcomes = list(outcomes)

    async def send_text(self, chat_id: int, text: str, **kwargs: object) -> object:
        status, reason = self.outcomes.pop(0)

        @dataclass
        class Result:
            status: str
            reason: str | None
            message_id: int | None

        return Result(status, reason, 1 if status == "delivered" else None)

    async def call(self, method: object) -> bool:
        return True


async def test_the_responder_tracks_since_when_deliveries_fail(db: Database) -> None:
    inbox = InboxRepository(db)
    clock = iter([100.0, 200.0])
    sender = ScriptedSender(("failed", "network"), ("failed", "network"), ("delivered", None))
    responder = Responder(
        inbox,
        TelegramChannel(sender),
        transient_failures=frozenset({"network"}),
        clock=lambda: next(clock),
    )
    for update_id in (1, 2, 3):
        await inbox.record(
            [NewUpdate(update_id=update_id, chat_id=5, user_id=5, payload={"update_id": 1})]
        )
        row = await inbox.get(update_id)
        assert row is not None
        await responder.reply(row, [StoredReply(html="a", plain="a")])
        if update_id < 3:
            assert responder.failing_since == 100.0  # the first failure of the run
    assert responder.failing_since is None  # a delivery went through
