"""A storage fault while an update is handled: retried in the chat's worker (later
updates of the chat wait, other chats go on), bounded, then left pending in order.

The fault is real: a write to a second SQLite file whose write lock another connection
holds, with no busy timeout, raises exactly what a locked database raises.
"""

from __future__ import annotations

import asyncio
import logging
import sqlite3
from collections import Counter
from collections.abc import Iterator
from pathlib import Path

import pytest

from bot.runtime.intake import Intake
from storage.database import Database, StorageRetry, storage_fault
from storage.inbox import InboxRepository, InboxRow
from tests.unit.bot.test_intake import update
from tests.waits import OUTER_LIMIT_S

FAST = StorageRetry(first_delay_s=0.01, max_delay_s=0.01, give_up_after_s=60)


class LockedFile:
    """A file whose write lock is held; `write()` fails like a locked database."""

    def __init__(self, path: Path) -> None:
        setup = sqlite3.connect(path, isolation_level=None)
        setup.execute("CREATE TABLE t(x)")
        setup.close()
        self._holder = sqlite3.connect(path, isolation_level=None)
        self._holder.execute("BEGIN IMMEDIATE")
        self._writer = sqlite3.connect(path, timeout=0, isolation_level=None)

    def write(self) -> None:
        self._writer.execute("INSERT INTO t VALUES (1)")

    def close(self) -> None:
        self._holder.execute("ROLLBACK")
        self._holder.close()
        self._writer.close()


@pytest.fixture
def locked(tmp_path: Path) -> Iterator[LockedFile]:
    file = LockedFile(tmp_path / "locked.sqlite3")
    yield file
    file.close()


class Chat1Fails:
    """Processes rows; chat 1's updates meet the locked file until `healed` is set."""

    def __init__(self, inbox: InboxRepository, locked: LockedFile) -> None:
        self.inbox = inbox
        self.locked = locked
        self.healed = asyncio.Event()
        self.failed_once = asyncio.Event()
        self.attempts: Counter[int] = Counter()
        self.processed: list[int] = []
        self.done: dict[int, asyncio.Event] = {}

    async def process(self, row: InboxRow) -> None:
        self.attempts[row.update_id] += 1
        if row.chat_id == 1 and not self.healed.is_set():
            self.failed_once.set()
            self.locked.write()  # raises "database is locked"
        self.processed.append(row.update_id)
        await self.inbox.finish(row.update_id, "delivered")
        self.done.setdefault(row.update_id, asyncio.Event()).set()

    async def deliver(self, row: InboxRow) -> None:
        raise AssertionError("nothing is answered yet")

    async def wait_done(self, update_id: int) -> None:
        await asyncio.wait_for(self.done.setdefault(update_id, asyncio.Event()).wait(), 10)


def test_the_fault_is_what_sqlite_raises_for_a_locked_database(locked: LockedFile) -> None:
    with pytest.raises(sqlite3.OperationalError) as raised:
        locked.write()
    assert storage_fault(raised.value) == "locked"


async def test_a_storage_fault_is_retried_in_the_chats_worker_while_other_chats_go_on(
    db: Database, locked: LockedFile
) -> None:
    inbox = InboxRepository(db)
    handler = Chat1Fails(inbox, locked)
    intake = Intake(inbox, process=handler.process, deliver=handler.deliver, storage_retry=FAST)
    await intake.accept([update(1, 1, "first"), update(2, 1, "second"), update(3, 2)])

    await asyncio.wait_for(handler.failed_once.wait(), OUTER_LIMIT_S)
    await handler.wait_done(3)  # the other chat is served while chat 1 retries
    assert handler.processed == [3]
    row = await inbox.get(2)
    assert row is not None and row.status == "pending"  # waits behind update 1

    handler.healed.set()
    await handler.wait_done(2)
    assert await intake.drain(10)
    assert handler.processed == [3, 1, 2]
    assert handler.attempts[1] >= 2 and handler.attempts[2] == 1
    statuses = [(await inbox.get(i)).status for i in (1, 2, 3)]  # type: ignore[union-attr]
    assert statuses == ["delivered"] * 3


async def test_beyond_the_bound_the_update_and_its_chat_wait_for_the_next_start(
    db: Database, locked: LockedFile, caplog: pytest.LogCaptureFixture
) -> None:
    inbox = InboxRepository(db)
    handler = Chat1Fails(inbox, locked)
    bounded = StorageRetry(first_delay_s=0.01, max_delay_s=0.01, give_up_after_s=0.05)
    intake = Intake(inbox, process=handler.process, deliver=handler.deliver, storage_retry=bounded)
    caplog.set_level(logging.INFO)
    await intake.accept([update(1, 1, "first words"), update(2, 1), update(3, 2)])
    await handler.wait_done(3)
    await intake.join()
    # a later update of the stalled chat is recorded but not processed out of order
    await intake.accept([update(4, 1)])
    await intake.join()

    assert handler.processed == [3]
    statuses = [(await inbox.get(i)).status for i in (1, 2, 3, 4)]  # type: ignore[union-attr]
    assert statuses == ["pending", "pending", "delivered", "pending"]
    assert intake.stalled_chats == 1
    errors = [r for r in caplog.records if r.levelno >= logging.ERROR]
    assert len(errors) == 1
    assert "update 1 left pending for the next start" in errors[0].getMessage()
    assert "first words" not in caplog.text

    # the next start resumes the chat's updates in their order
    handler.healed.set()
    restarted = Intake(inbox, process=handler.process, deliver=handler.deliver)
    assert await restarted.resume() == 3
    await restarted.join()
    assert handler.processed == [3, 1, 2, 4]
