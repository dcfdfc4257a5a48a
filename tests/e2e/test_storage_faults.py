"""Storage faults during a turn, through the real process: a second process holds the
SQLite write lock (a real connection, `BEGIN IMMEDIATE`) longer than the bot's busy
timeout while a turn wants to store its records.

The lock is taken from inside the fake model's answer, i.e. after the update was recorded
and while the turn runs, and released only once the bot has logged that it is retrying.
"""

from __future__ import annotations

import sqlite3
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.e2e.chat_helpers import finished_sql, last_user_text, query, wait_for_db
from tests.e2e.conftest import StartBot
from tests.fakes.openai_server import Body, FakeOpenAIServer, FakeReply, completion
from tests.fakes.telegram_server import FakeTelegramServer, message_update

CHAT = 4101
OTHER_CHAT = 4102
FIRST = "first question"
SECOND = "second question"
OTHER = "a question from another chat"


class WriteLock:
    """A second connection to the bot's file that can hold the write lock."""

    def __init__(self, database: Path) -> None:
        self._conn = sqlite3.connect(database, timeout=30, isolation_level=None)
        self.held = False

    def take(self) -> None:
        self._conn.execute("BEGIN IMMEDIATE")
        self.held = True

    def release(self) -> None:
        if self.held:
            self._conn.execute("ROLLBACK")
            self.held = False

    def close(self) -> None:
        self.release()
        self._conn.close()


@pytest.fixture
def write_lock(database_path: Path) -> Iterator[WriteLock]:
    database_path.parent.mkdir(parents=True, exist_ok=True)
    lock = WriteLock(database_path)
    yield lock
    lock.close()


def echo_locking_on(lock: WriteLock, text: str) -> object:
    """A model that answers "re: <text>" and takes the write lock when it sees `text`
    (once), so the turn's writes after the model call meet the lock."""

    def script(body: Body) -> FakeReply:
        if not body.get("tools"):
            return completion(text="summary")
        asked = last_user_text(body)
        if asked == text and not lock.held and not script.locked:  # type: ignore[attr-defined]
            script.locked = True  # type: ignore[attr-defined]
            lock.take()
        return completion(text=f"re: {asked}")

    script.locked = False  # type: ignore[attr-defined]
    return script


async def test_a_write_lock_during_a_turn_delays_the_answer_and_loses_nothing(
    start_bot: StartBot,
    fake_telegram: FakeTelegramServer,
    fake_openai: FakeOpenAIServer,
    database_path: Path,
    write_lock: WriteLock,
) -> None:
    fake_openai.handler = echo_locking_on(write_lock, FIRST)  # type: ignore[assignment]
    bot = await start_bot(STORAGE_RETRY_FIRST_DELAY_S="0.2")
    first = fake_telegram.enqueue_update(message_update(CHAT, text=FIRST))

    # storing the turn failed twice, each time after the 5 s busy timeout; still retrying
    await bot.wait_for_line("(attempt 2,")
    assert write_lock.held and fake_telegram.messages_to(CHAT) == []
    second = fake_telegram.enqueue_update(message_update(CHAT, text=SECOND))
    other = fake_telegram.enqueue_update(message_update(OTHER_CHAT, text=OTHER))
    write_lock.release()

    answers = await fake_telegram.wait_for_messages(CHAT, 2)
    [other_answer] = await fake_telegram.wait_for_messages(OTHER_CHAT, 1)
    await wait_for_db(
        database_path, finished_sql([first, second, other]), [(3,)], first, second, other
    )
    # exactly one answer per message, the chat's later message after the delayed one
    assert [m.plain_text for m in fake_telegram.messages_to(CHAT)] == [
        f"re: {FIRST}",
        f"re: {SECOND}",
    ]
    assert [m.plain_text for m in answers] == [f"re: {FIRST}", f"re: {SECOND}"]
    assert other_answer.plain_text == f"re: {OTHER}"
    # one model call for the delayed turn: its answer was kept, not asked for again
    asked = [last_user_text(b) for b in fake_openai.chat_requests]
    assert asked.count(FIRST) == 1
    # the turn record and its history pair were stored, once
    assert query(
        database_path,
        "SELECT status, stop_reason FROM turns WHERE request_key = ?",
        f"telegram:{first}",
    ) == [("answered", "completed")]
    assert query(
        database_path, "SELECT count(*) FROM messages WHERE content = ?", f"re: {FIRST}"
    ) == [(1,)]
    statuses = query(database_path, "SELECT status FROM updates ORDER BY update_id")
    assert statuses == [("delivered",)] * 3
    assert FIRST not in bot.output  # the retry log names the turn, not the message


async def test_a_store_locked_beyond_the_bound_leaves_the_update_for_the_next_start(
    start_bot: StartBot,
    fake_telegram: FakeTelegramServer,
    fake_openai: FakeOpenAIServer,
    database_path: Path,
    write_lock: WriteLock,
) -> None:
    fake_openai.handler = echo_locking_on(write_lock, FIRST)  # type: ignore[assignment]
    bot = await start_bot(STORAGE_RETRY_FIRST_DELAY_S="0.1", STORAGE_RETRY_GIVE_UP_S="1")
    first = fake_telegram.enqueue_update(message_update(CHAT, text=FIRST))

    line = await bot.wait_for_line("left pending for the next start")
    assert " ERROR " in line and f"update {first}" in line
    write_lock.release()
    assert query(database_path, "SELECT status FROM updates") == [("pending",)]
    assert fake_telegram.messages_to(CHAT) == []
    assert await bot.terminate() == 0

    await start_bot()
    await wait_for_db(database_path, finished_sql([first]), [(1,)], first)
    # the chat's /help is handled after the resumed turn: a duplicate would show by then
    fake_telegram.enqueue_update(message_update(CHAT, text="/help"))
    messages = await fake_telegram.wait_for_messages(CHAT, 2)
    assert len(messages) == 2 and messages[0].plain_text == f"re: {FIRST}"
    assert query(
        database_path, "SELECT count(*) FROM turns WHERE request_key = ?", f"telegram:{first}"
    ) == [(1,)]
