"""A full disk while a turn stores its records: the answer the model gave is kept and
stored once space is back — one model call, one turns row, one history pair.

The fault is real: `PRAGMA max_page_count` caps the bot's own SQLite file at its current
size, so the turn's insert fails with SQLITE_FULL ("database or disk is full").
"""

from __future__ import annotations

import pytest

from services.chat import ChatService
from services.llm.types import Message
from services.prompts import build_prompt_registry
from services.summarizer import ConversationSummarizer
from storage.conversations import ConversationRepository
from storage.database import Database, StorageRetry, StorageUnavailable
from storage.records import TurnRecorder
from storage.shop import ShopRepository
from tests.unit.services.test_chat import FakeLoop, _summary_llm
from tools.base import Caller, ToolContext

LONG_ANSWER = "Ваш заказ в пути. " * 1500  # needs new pages: cannot fit a full file
FAST = StorageRetry(first_delay_s=0.01, max_delay_s=0.01, give_up_after_s=60)
UNLIMITED_PAGES = 1_073_741_823

# the fault is SQLite's own; PostgreSQL's write faults: tests/unit/storage/test_postgres.py
pytestmark = pytest.mark.sqlite_only


async def fill_the_disk(db: Database) -> None:
    row = await db.fetch_one("PRAGMA page_count")
    assert row is not None
    await db.fetch_one(f"PRAGMA max_page_count = {int(row[0])}")


async def free_the_disk(db: Database) -> None:
    await db.fetch_one(f"PRAGMA max_page_count = {UNLIMITED_PAGES}")


class SpaceFreedAfter(TurnRecorder):
    """The real recorder; the operator frees space after `failures` failed saves."""

    def __init__(self, db: Database, failures: int) -> None:
        super().__init__(db)
        self.db = db
        self.failures = failures
        self.errors: list[str] = []

    async def save_turn(self, *args: object, **kwargs: object) -> None:
        try:
            await super().save_turn(*args, **kwargs)  # type: ignore[arg-type]
        except Exception as exc:
            self.errors.append(str(exc))
            if len(self.errors) >= self.failures:
                await free_the_disk(self.db)
            raise


def service_with(db: Database, loop: FakeLoop, recorder: TurnRecorder, retry: StorageRetry):
    prompts = build_prompt_registry()
    conversations = ConversationRepository(db)
    return ChatService(
        loop=loop,
        conversations=conversations,
        recorder=recorder,
        summarizer=ConversationSummarizer(
            model=_summary_llm(),
            prompts=prompts,
            conversations=conversations,
            recorder=recorder,
            history_token_budget=2000,
            summary_max_tokens=100,
        ),
        shop=ShopRepository(db),
        storage_retry=retry,
    )


def answer_after_the_disk_fills(db: Database) -> FakeLoop:
    async def answer(messages: list[Message], context: ToolContext) -> str:
        await fill_the_disk(db)  # the disk fills while the model is thinking
        return LONG_ANSWER

    return FakeLoop(answer=answer)


async def test_a_full_disk_while_storing_a_turn_is_retried_until_space_is_back(
    db: Database,
) -> None:
    loop = answer_after_the_disk_fills(db)
    recorder = SpaceFreedAfter(db, failures=2)
    service = service_with(db, loop, recorder, FAST)
    await ConversationRepository(db).open_session(1)

    reply = await service.answer(Caller(key=5, chat_id=1), "где заказ?", request_key="t:1")

    assert reply.text == LONG_ANSWER and reply.error_code is None
    assert recorder.errors == ["database or disk is full"] * 2
    assert len(loop.requests) == 1  # the answer was kept, the model not asked again
    turns = await db.fetch_all("SELECT status, request_key FROM turns")
    assert [tuple(t) for t in turns] == [("answered", "t:1")]
    pairs = await db.fetch_all("SELECT role FROM messages ORDER BY id")
    assert [p[0] for p in pairs] == ["user", "assistant"]
    assert db.write_fault is None  # the successful write cleared it


async def test_a_disk_full_beyond_the_bound_raises_and_stores_nothing(db: Database) -> None:
    loop = answer_after_the_disk_fills(db)
    bounded = StorageRetry(first_delay_s=0.01, max_delay_s=0.01, give_up_after_s=0.05)
    service = service_with(db, loop, TurnRecorder(db), bounded)
    await ConversationRepository(db).open_session(1)

    with pytest.raises(StorageUnavailable) as raised:
        await service.answer(Caller(key=5, chat_id=1), "где заказ?", request_key="t:1")

    assert raised.value.kind == "full"
    assert db.write_fault == "full"  # /healthz sees it
    await free_the_disk(db)
    assert await db.fetch_all("SELECT id FROM turns") == []
    assert await db.fetch_all("SELECT id FROM messages") == []
