"""Rows come back in the same order on SQLite and PostgreSQL.

SQLite compares text byte by byte and sorts NULL first; PostgreSQL compares by the
database's collation (often en_US: case and punctuation ignored at first) and sorts NULL
last. Where the order reaches a person or the model, the repositories ask for SQLite's.
"""

from __future__ import annotations

from storage.database import Database
from storage.inbox import InboxRepository, NewUpdate
from storage.shop import ReturnPolicyRecord, ShopRepository
from storage.voice import VoiceNoteRepository

INT64_MAX = 2**63 - 1
INT64_MIN = -(2**63)


async def test_aliases_are_in_byte_order(db: Database) -> None:
    shop = ShopRepository(db)
    aliases = ("boots", "Boots", "_worn", "ankle-boots", "ankleboots", "Ёлка", "ёлка", "Zip")
    await shop.seed_demo(
        orders=[], policies=[ReturnPolicyRecord("shoes", "Shoes", 14, "unworn", aliases=aliases)]
    )

    policy = await shop.find_return_policy("shoes")

    assert policy is not None
    assert list(policy.aliases) == sorted(aliases, key=lambda a: a.encode("utf-8"))


async def test_voice_counts_list_no_error_code_first(db: Database) -> None:
    voice = VoiceNoteRepository(db, clock=lambda: 1000.0)
    for update_id, code in [(1, "timeout"), (2, None), (3, "bad_audio"), (4, "Timeout")]:
        await voice.receive(update_id, chat_id=1, kind="voice", duration_s=5, status="received")
        await voice.finish(update_id, "failed", error_code=code)

    counts = await voice.status_counts(None, 2000.0)

    assert [c.error_code for c in counts] == [None, "Timeout", "bad_audio", "timeout"]


async def test_ids_at_the_64_bit_bounds_are_stored_and_read_back(db: Database) -> None:
    inbox = InboxRepository(db, clock=lambda: 5.0)
    updates = [
        NewUpdate(INT64_MAX, INT64_MIN, INT64_MAX, {"update_id": INT64_MAX}),
        NewUpdate(INT64_MIN, INT64_MAX, INT64_MIN, {"update_id": INT64_MIN}),
    ]

    assert await inbox.record(updates) == [INT64_MAX, INT64_MIN]
    assert await inbox.record(updates) == []  # a redelivery: nothing new

    row = await inbox.get(INT64_MAX)
    assert row is not None and (row.chat_id, row.user_id) == (INT64_MIN, INT64_MAX)
    assert await inbox.store_reply(INT64_MAX, [])
    await inbox.add_message_id(INT64_MAX, INT64_MAX)
    await inbox.add_message_id(INT64_MAX, 1)
    row = await inbox.get(INT64_MAX)
    assert row is not None and row.message_ids == (INT64_MAX, 1)
