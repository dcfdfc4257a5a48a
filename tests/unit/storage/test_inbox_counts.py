"""What /metrics reads of the inbox: unfinished rows per status from their partial index
(the query refuses to run rather than scan the table), finished rows as this process
finishes them."""

from __future__ import annotations

from storage.database import Database
from storage.inbox import ANSWERED, DELIVERED, FAILED, InboxRepository, NewUpdate, StoredReply


def update(update_id: int) -> NewUpdate:
    return NewUpdate(update_id, 10, 10, {"update_id": update_id, "message": {"text": "x"}})


async def test_unfinished_counts_and_finished_counter(db: Database) -> None:
    inbox = InboxRepository(db)
    assert await inbox.count_unfinished() == {"pending": 0, "answered": 0}
    await inbox.record([update(i) for i in range(1, 6)])
    await inbox.store_reply(1, [StoredReply(html="a", plain="a")], turn_id=None)
    await inbox.store_reply(2, [StoredReply(html="b", plain="b")], turn_id=None)
    assert await inbox.finish(1, DELIVERED)
    assert await inbox.finish(3, FAILED, reason="internal_error")
    assert not await inbox.finish(3, FAILED)  # already final: not counted twice

    assert await inbox.count_unfinished() == {"pending": 2, "answered": 1}
    assert inbox.finished == {DELIVERED: 1, FAILED: 1}
    assert ANSWERED not in inbox.finished
