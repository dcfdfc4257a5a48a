"""`VoiceNoteRepository` on a real SQLite file: idempotent rows and the /stats counts."""

from __future__ import annotations

from storage.database import Database
from storage.voice import VoiceNoteRepository, VoiceStatusCount


class Clock:
    def __init__(self) -> None:
        self.now = 0.0

    def __call__(self) -> float:
        return self.now


async def test_a_second_receive_of_the_same_update_changes_nothing(db: Database) -> None:
    repo = VoiceNoteRepository(db)
    await repo.receive(7, chat_id=1, kind="voice", duration_s=5, status="received")
    await repo.finish(7, "transcribed", transcription_s=1.5, transcript="hi")
    await repo.receive(7, chat_id=1, kind="voice", duration_s=5, status="received")
    row = await repo.get(7)
    assert row is not None and row.status == "transcribed" and row.transcript == "hi"
    assert await repo.get(8) is None


async def test_status_counts_cover_the_period_only(db: Database) -> None:
    clock = Clock()
    repo = VoiceNoteRepository(db, clock=clock)
    for update_id, at, duration, status, code, seconds in [
        (1, 999.5, 10, "transcribed", None, 1.0),  # before the period
        (2, 1000.0, 7, "transcribed", None, 2.0),  # at the lower bound: counted
        (3, 1500.0, 5, "transcribed", None, 0.5),
        (4, 1600.0, 3, "failed", "timeout", 30.0),
        (5, 1700.0, 90, "too_long", None, None),
        (6, 2000.0, 4, "transcribed", None, 1.0),  # at the upper bound: not counted
    ]:
        clock.now = at
        await repo.receive(
            update_id, chat_id=1, kind="voice", duration_s=duration, status="received"
        )
        await repo.finish(update_id, status, error_code=code, transcription_s=seconds)
    counts = await repo.status_counts(1000.0, 2000.0)
    assert counts == [
        VoiceStatusCount("failed", "timeout", 1, 3, 30.0),
        VoiceStatusCount("too_long", None, 1, 90, 0.0),
        VoiceStatusCount("transcribed", None, 2, 12, 2.5),
    ]
    everything = await repo.status_counts(None, 2001.0)
    assert sum(c.notes for c in everything) == 6


async def test_leftover_transcripts_of_answered_updates_are_cleared(db: Database) -> None:
    async with db.transaction() as conn:
        await conn.executemany(
            "INSERT INTO updates(update_id, chat_id, received_at, payload, status) "
            "VALUES (?, 1, 0, '{}', ?)",
            [(1, "pending"), (2, "answered"), (3, "delivered")],
        )
    repo = VoiceNoteRepository(db)
    for update_id in (1, 2, 3, 4):  # 4: its update was pruned
        await repo.receive(update_id, chat_id=1, kind="voice", duration_s=1, status="received")
        await repo.finish(update_id, "transcribed", transcript=f"said {update_id}")
    assert await repo.forget_answered_transcripts() == 3
    kept = await db.fetch_all("SELECT update_id FROM voice_notes WHERE transcript IS NOT NULL")
    assert [r[0] for r in kept] == [1]  # still pending: needed after the restart
