"""What the repositories rely on from a backend (storage/backend.py), on SQLite and PostgreSQL.

The same statements with `?` parameters, the same answers: row counts (upserts too), ids
at the 64-bit bounds, RETURNING, each dialect's fragments on real rows, rollback of a
failed or cancelled transaction.
"""

from __future__ import annotations

import asyncio
import json

import pytest

from storage.database import Database, is_data_error

INT64_MAX = 2**63 - 1
INT64_MIN = -(2**63)


async def add_update(db: Database, update_id: int, payload: object = None) -> None:
    await db.write(
        "INSERT INTO updates(update_id, chat_id, user_id, received_at, payload)"
        " VALUES (?, ?, ?, ?, ?)",
        (update_id, 7, 8, 1.0, json.dumps(payload or {"update_id": update_id})),
    )


async def test_ids_at_the_64_bit_bounds_round_trip(db: Database) -> None:
    for update_id in (INT64_MAX, INT64_MIN, -INT64_MAX):
        await add_update(db, update_id)
    rows = await db.fetch_all("SELECT update_id FROM updates ORDER BY update_id")
    assert [r[0] for r in rows] == [INT64_MIN, -INT64_MAX, INT64_MAX]
    row = await db.fetch_one("SELECT update_id FROM updates WHERE update_id = ?", (INT64_MAX,))
    assert row is not None and row["update_id"] == INT64_MAX
    # one beyond is refused as bad data (SQLite: OverflowError; asyncpg: DataError)
    with pytest.raises(Exception) as refused:
        await add_update(db, INT64_MAX + 1)
    assert isinstance(refused.value, OverflowError) or is_data_error(refused.value)


async def test_row_counts_of_inserts_updates_and_deletes(db: Database) -> None:
    insert = "INSERT INTO shop_texts(key, value) VALUES (?, ?)"
    assert await db.write(insert + " ON CONFLICT DO NOTHING", ("a", "1")) == 1
    assert await db.write(insert + " ON CONFLICT DO NOTHING", ("a", "2")) == 0
    upsert = insert + " ON CONFLICT(key) DO UPDATE SET value = excluded.value"
    assert await db.write(upsert, ("a", "3")) == 1
    async with db.transaction() as tx:
        unchanged = upsert + " WHERE shop_texts.value <> excluded.value"
        assert await tx.execute(unchanged, ("a", "3")) == 0
        assert await tx.execute(insert, ("b", "1")) == 1
        assert await tx.execute(insert, ("c", "1")) == 1
        assert await tx.execute("UPDATE shop_texts SET value = ?", ("9",)) == 3
        assert await tx.execute("DELETE FROM shop_texts WHERE key IN (?, ?)", ("b", "zz")) == 1
    assert await db.write("UPDATE shop_texts SET value = 'x' WHERE key = 'none'") == 0
    assert await db.write("DELETE FROM shop_texts") == 2


async def test_insert_returning_gives_the_new_id(db: Database) -> None:
    async with db.transaction() as tx:
        first = await tx.fetch_one(
            "INSERT INTO sessions(chat_id, opened_at) VALUES (?, ?) RETURNING id", (INT64_MIN, 1.5)
        )
        await tx.executemany(
            "INSERT INTO sessions(chat_id, opened_at, closed_at) VALUES (?, ?, ?)",
            [(2, 2.5, 3.0), (3, 3.5, 4.0)],
        )
        last = await tx.fetch_one(
            "INSERT INTO sessions(chat_id, opened_at) VALUES (?, ?) RETURNING id", (4, 4.5)
        )
    assert first is not None and last is not None and last["id"] > first["id"]
    row = await db.fetch_one("SELECT chat_id, opened_at FROM sessions WHERE id = ?", (first[0],))
    assert row is not None and tuple(row) == (INT64_MIN, 1.5)
    rows = await db.fetch_all("SELECT chat_id FROM sessions ORDER BY id")
    assert [r["chat_id"] for r in rows] == [INT64_MIN, 2, 3, 4]


async def test_json_fragments_edit_the_stored_text(db: Database) -> None:
    payload = {
        "update_id": 1,
        "message": {"text": "hi", "contact": {"phone_number": "+100"}, "chat": {"id": 7}},
    }
    await add_update(db, 1, payload)
    dialect = db.dialect
    changed = await db.write(
        f"UPDATE updates SET payload = {dialect.json_drop_contact('payload')} WHERE update_id = ?",
        (1,),
    )
    assert changed == 1
    for message_id in (5, INT64_MAX):
        await db.write(
            f"UPDATE updates SET message_ids = {dialect.json_append_id('message_ids')}"
            " WHERE update_id = ?",
            (message_id, 1),
        )
    row = await db.fetch_one("SELECT payload, message_ids FROM updates WHERE update_id = 1")
    assert row is not None
    assert json.loads(row["payload"]) == {
        "update_id": 1,
        "message": {"text": "hi", "chat": {"id": 7}},
    }
    assert json.loads(row["message_ids"]) == [5, INT64_MAX]


async def test_scalar_fragments(db: Database) -> None:
    d = db.dialect
    row = await db.fetch_one(
        f"SELECT {d.greatest}({d.float_param}, {d.float_param}),"
        f" {d.least}({d.float_param}, {d.float_param}),"
        f" NULL {d.is_distinct} 'completed', 'completed' {d.is_distinct} 'completed'",
        (1.5, 2, 1.5, 2),
    )
    assert row is not None
    assert (row[0], row[1], bool(row[2]), bool(row[3])) == (2.0, 1.5, True, False)
    for key in ("b", "B", "a", "_"):
        await db.write("INSERT INTO shop_texts(key, value) VALUES (?, '')", (key,))
    rows = await db.fetch_all(f"SELECT key FROM shop_texts ORDER BY key{d.collate_binary}")
    assert [r[0] for r in rows] == ["B", "_", "a", "b"]  # byte order, whatever the collation
    await db.write("INSERT INTO sessions(chat_id, opened_at) VALUES (1, 0)")
    hinted = await db.fetch_one(
        f"SELECT count(*) FROM sessions {d.indexed_by('sessions_open_per_chat')}"
        " WHERE chat_id = ? AND closed_at IS NULL",
        (1,),
    )
    assert hinted is not None and hinted[0] == 1


async def test_a_failing_block_rolls_back(db: Database) -> None:
    with pytest.raises(RuntimeError):
        async with db.transaction() as tx:
            await tx.execute("INSERT INTO shop_texts(key, value) VALUES ('x', 'y')")
            raise RuntimeError("boom")
    with pytest.raises(Exception, match=r"(?i)unique"):
        async with db.transaction() as tx:
            await tx.execute("INSERT INTO shop_texts(key, value) VALUES ('z', 'y')")
            await tx.execute("INSERT INTO shop_texts(key, value) VALUES ('z', 'y')")
    assert await db.fetch_all("SELECT key FROM shop_texts") == []
    assert await db.write("INSERT INTO shop_texts(key, value) VALUES ('x', 'y')") == 1


async def test_cancelled_between_statements_rolls_back(db: Database) -> None:
    inserted = asyncio.Event()

    async def block() -> None:
        async with db.transaction() as tx:
            await tx.execute("INSERT INTO shop_texts(key, value) VALUES ('c', '')")
            inserted.set()
            await asyncio.Event().wait()  # e.g. a tool's timeout cancels the turn here

    task = asyncio.create_task(block())
    await inserted.wait()
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await task
    assert await db.fetch_one("SELECT 1 FROM shop_texts WHERE key = 'c'") is None
    async with db.transaction() as tx:
        assert await tx.execute("INSERT INTO shop_texts(key, value) VALUES ('c', '')") == 1
