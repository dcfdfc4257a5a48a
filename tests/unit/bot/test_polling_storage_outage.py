"""Polling while the store cannot record a batch: the batch is not acknowledged and is
fetched again, with growing pauses, and the outage is one WARNING and one recovery line,
not a traceback per attempt.

Real parts: the real `Poller` and aiogram `Bot` against the fake Bot API over HTTP, the
real `Intake` over a real SQLite inbox whose write lock another connection holds (the
busy timeout shortened so each attempt fails at once, as on a full disk).
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import sqlite3
from pathlib import Path

import pytest
from aiogram import Bot
from aiogram.client.session.aiohttp import AiohttpSession
from aiogram.client.telegram import TelegramAPIServer

import storage.sqlite
from bot.runtime.intake import Intake
from bot.telegram.polling import BACKOFF_MAX_S, Poller, RecordOutage
from storage.database import open_database
from storage.inbox import InboxRepository, InboxRow
from tests.fakes.telegram_server import FakeTelegramServer, message_update
from tests.fakes.telegram_server import fake_telegram as fake_telegram
from tests.waits import OUTER_LIMIT_S


async def test_a_storage_outage_is_one_warning_and_one_recovery_line(
    fake_telegram: FakeTelegramServer,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    caplog: pytest.LogCaptureFixture,
) -> None:
    monkeypatch.setattr(storage.sqlite, "BUSY_TIMEOUT_MS", 1)
    path = tmp_path / "inbox.sqlite3"
    db = await open_database(path)
    inbox = InboxRepository(db)
    done = asyncio.Event()

    async def process(row: InboxRow) -> None:
        await inbox.finish(row.update_id, "ignored", reason="test")
        done.set()

    async def deliver(row: InboxRow) -> None:
        await inbox.finish(row.update_id, "delivered")

    holder = sqlite3.connect(path, isolation_level=None)
    holder.execute("BEGIN IMMEDIATE")  # the write lock: every INSERT of the inbox fails
    session = AiohttpSession(api=TelegramAPIServer.from_base(fake_telegram.client_url("A")))
    bot = Bot(fake_telegram.token, session=session)
    intake = Intake(inbox, process=process, deliver=deliver)
    poller = Poller(bot, intake, allowed_updates=["message"], record_backoff_s=0.01)
    caplog.set_level(logging.DEBUG, logger="bot.telegram.polling")
    task = asyncio.create_task(poller.run())
    try:
        fake_telegram.enqueue_update(message_update(10, text="hello"))
        # the same batch fetched again and again: not acknowledged while it is not stored
        await fake_telegram.wait_for_call(
            "getUpdates", lambda _c: len(fake_telegram.calls_of("getUpdates")) >= 6
        )
        holder.execute("ROLLBACK")
        await asyncio.wait_for(done.wait(), OUTER_LIMIT_S)
        await fake_telegram.wait_for_call(
            "getUpdates", lambda c: c.params.get("offset") is not None
        )
    finally:
        task.cancel()
        with contextlib.suppress(asyncio.CancelledError):
            await task
        await intake.drain(10.0)
        await bot.session.close()
        holder.close()
        await db.close()

    polling = [r for r in caplog.records if r.name == "bot.telegram.polling"]
    loud = [r for r in polling if r.levelno >= logging.WARNING]
    assert len(loud) == 1, [r.getMessage() for r in loud]
    assert "could not record 1 update(s)" in loud[0].getMessage()
    assert "storage locked" in loud[0].getMessage()
    assert loud[0].exc_info is None  # a known storage fault: no traceback
    assert not any(r.exc_info for r in polling if r.levelno >= logging.INFO)
    recovered = [r.getMessage() for r in polling if r.levelno == logging.INFO]
    assert len(recovered) == 1 and recovered[0].startswith("recording updates again")


def test_the_pause_between_attempts_doubles_up_to_the_maximum_and_resets() -> None:
    outage = RecordOutage(first_delay_s=1.0)
    fault = sqlite3.OperationalError("database or disk is full")
    delays = [outage.failed(fault, 1) for _ in range(8)]
    assert delays == [1.0, 2.0, 4.0, 8.0, 16.0, BACKOFF_MAX_S, BACKOFF_MAX_S, BACKOFF_MAX_S]
    outage.recorded()
    assert outage.failed(fault, 1) == 1.0  # a new outage starts from the first pause
