"""Sessions, history pairs and summaries as stored rows."""

from __future__ import annotations

import pytest

from storage.conversations import ConversationRepository
from storage.database import Database, is_unique_violation
from tests.doubles.history import append_pair


async def test_one_open_session_per_chat_reused_until_reset(db: Database) -> None:
    repo = ConversationRepository(db)
    first = await repo.open_session(100)
    assert await repo.open_session(100) == first
    assert await repo.open_session(200) != first

    second = await repo.reset(100)
    assert second != first
    assert await repo.current_session(100) == second
    closed = await db.fetch_one(
        "SELECT closed_at, close_reason FROM sessions WHERE id = ?", (first,)
    )
    assert closed is not None and closed["closed_at"] is not None
    assert closed["close_reason"] == "reset"


async def test_database_refuses_a_second_open_session(db: Database) -> None:
    repo = ConversationRepository(db)
    await repo.open_session(1)
    with pytest.raises(Exception) as refused:
        async with db.transaction() as conn:
            await conn.execute("INSERT INTO sessions(chat_id, opened_at) VALUES (1, 0)")
    assert is_unique_violation(refused.value)


async def test_reset_of_a_chat_without_session_just_opens_one(db: Database) -> None:
    repo = ConversationRepository(db)
    session = await repo.reset(7)
    assert await repo.current_session(7) == session


async def test_pairs_are_ordered_and_read_newest_first_limited(db: Database) -> None:
    repo = ConversationRepository(db)
    session = await repo.open_session(1)
    for i in range(5):
        await append_pair(db, session, user_text=f"q{i}", assistant_text=f"a{i}", turn_id=f"t{i}")

    newest = await repo.recent_messages(session, limit=4)
    assert [m.content for m in newest] == ["q3", "a3", "q4", "a4"]
    assert [m.role for m in newest] == ["user", "assistant", "user", "assistant"]
    assert newest[0].turn_id == "t3"

    after = await repo.recent_messages(session, limit=100, after_id=newest[1].id)
    assert [m.content for m in after] == ["q4", "a4"]

    middle = await repo.messages_between(session, after_id=0, before_id=newest[0].id, limit=3)
    assert [m.content for m in middle] == ["q0", "a0", "q1"]


async def test_messages_of_another_session_are_never_read(db: Database) -> None:
    repo = ConversationRepository(db)
    old = await repo.open_session(1)
    await append_pair(db, old, user_text="old q", assistant_text="old a", turn_id=None)
    new = await repo.reset(1)
    assert await repo.recent_messages(new, limit=10) == []
    assert len(await repo.recent_messages(old, limit=10)) == 2


async def test_summary_upsert_never_moves_backwards(db: Database) -> None:
    repo = ConversationRepository(db)
    session = await repo.open_session(1)
    assert await repo.summary(session) is None

    assert await repo.save_summary(
        session, content="first", covers_message_id=4, prompt_ref="conversation_summary@1"
    )
    assert await repo.save_summary(
        session, content="second", covers_message_id=8, prompt_ref="conversation_summary@1"
    )
    assert not await repo.save_summary(
        session, content="stale", covers_message_id=6, prompt_ref="conversation_summary@1"
    )
    summary = await repo.summary(session)
    assert summary is not None
    assert (summary.content, summary.covers_message_id) == ("second", 8)
    assert summary.prompt == "conversation_summary@1"
