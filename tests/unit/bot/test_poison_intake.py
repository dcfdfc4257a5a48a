"""Poison updates at the intake (real SQLite): stored what can be, the rest quarantined."""

from __future__ import annotations

import asyncio
from typing import Any

from bot.runtime.intake import Intake
from bot.telegram.webhook import GroupCommit
from storage.database import Database
from storage.inbox import IGNORED, InboxRepository, InboxRow

BIG = 2**63


def update(update_id: int, chat_id: int, text: str = "hi") -> dict[str, Any]:
    return {
        "update_id": update_id,
        "message": {
            "message_id": 1,
            "date": 0,
            "chat": {"id": chat_id, "type": "private"},
            "from": {"id": 1, "is_bot": False, "first_name": "A"},
            "text": text,
        },
    }


def build(db: Database) -> tuple[Intake, InboxRepository, list[int]]:
    inbox = InboxRepository(db)
    processed: list[int] = []

    async def process(row: InboxRow) -> None:
        processed.append(row.update_id)
        await inbox.finish(row.update_id, IGNORED, reason="test")

    return Intake(inbox, process=process, deliver=process), inbox, processed


async def quarantine(db: Database) -> dict[str, str]:
    rows = await db.fetch_all("SELECT update_id, reason FROM quarantined_updates")
    return {row[0]: row[1] for row in rows}


async def test_a_batch_with_poison_stores_the_rest_and_quarantines_the_poison(
    db: Database,
) -> None:
    intake, inbox, processed = build(db)
    batch = [
        update(1, 10),
        update(2, BIG),
        update(3, 11, "bad \ud800"),
        update(BIG, 12),
        update(4, 13),
    ]

    assert await intake.accept(batch) == [1, 4]
    assert await intake.drain(10)

    assert sorted(processed) == [1, 4]  # two chats: no order between them
    assert await quarantine(db) == {
        "2": "chat_id_out_of_range",
        "3": "not_storable_UnicodeEncodeError",
        str(BIG): "update_id_out_of_range",
    }
    assert await inbox.get(3) is None
    # a redelivery of the batch changes nothing and raises nothing
    intake2, _, processed2 = build(db)
    assert await intake2.accept(batch) == []
    assert processed2 == []


async def test_group_commit_with_a_poison_update_succeeds_for_every_post(db: Database) -> None:
    intake, _, processed = build(db)
    commits = GroupCommit(intake)
    updates = [update(i, 100 + i) for i in range(1, 6)]
    updates.insert(2, update(50, 150, "\udfff"))
    await asyncio.gather(*(commits.accept(u) for u in updates))
    assert await intake.drain(10)
    assert sorted(processed) == [1, 2, 3, 4, 5]
    assert await quarantine(db) == {"50": "not_storable_UnicodeEncodeError"}
