"""Page-level damage in a real SQLite file: refused at start by the integrity check
(one line), let through when the check runs out of time on a big file, and then any
statement that meets the damage is remembered, so /healthz says so with the reason."""

from __future__ import annotations

import logging
import sqlite3
from dataclasses import dataclass
from pathlib import Path

import pytest

from bot.runtime.health import Health
from storage.database import DatabaseOpenError, corruption, open_database
from storage.inbox import InboxRepository
from storage.shop import ShopRepository
from tests.damage import corrupt_last_page, corrupt_table, fill_table


@dataclass
class Intake:
    stalled_chats: int = 0


@dataclass
class Delivery:
    failing_since: float | None = None


async def migrated(path: Path) -> None:
    db = await open_database(path)
    await db.close()


async def test_a_damaged_page_is_refused_at_start_with_one_line(tmp_path: Path) -> None:
    path = tmp_path / "bot.sqlite3"
    await migrated(path)
    corrupt_table(path, "updates")  # the inbox
    with pytest.raises(DatabaseOpenError) as refused:
        await open_database(path)
    message = str(refused.value)
    assert message.startswith("is corrupt (") and message.endswith("restore a backup")
    assert "\n" not in message


async def test_an_intact_file_passes_the_check(tmp_path: Path) -> None:
    path = tmp_path / "bot.sqlite3"
    await migrated(path)
    fill_table(path, 2_000)
    db = await open_database(path)
    assert db.corruption is None
    await db.close()


async def test_a_big_file_is_let_through_after_the_time_limit_and_damage_met_later_fails_health(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    path = tmp_path / "bot.sqlite3"
    await migrated(path)
    fill_table(path, 200_000)  # a check of some 100 ms
    corrupt_last_page(path)  # the page the check would reach last
    with caplog.at_level(logging.WARNING, logger="storage.sqlite"):
        db = await open_database(path, integrity_check_s=1e-6)
    try:
        assert any("integrity check not finished" in r.getMessage() for r in caplog.records)
        health = Health(
            db=db,
            inbox=InboxRepository(db),
            intake=Intake(),
            delivery=Delivery(),
            delivery_threshold_s=300,
            cache_s=0,
        )
        assert (await health.report()).ok  # nothing has met the damage yet
        assert await ShopRepository(db).get_order("8041") is None  # intact pages read
        assert (await health.report()).ok
        with pytest.raises(sqlite3.DatabaseError) as failed:
            await db.fetch_one("SELECT sum(length(pad)) FROM ballast")
        assert corruption(failed.value) is not None
        report = await health.report()
        assert "database_corrupt" in report.failed
        reasons = dict(report.reasons)
        assert "malformed" in reasons["database_corrupt"]
        assert reasons["database_corrupt"].endswith("restore a backup")
    finally:
        await db.close()
