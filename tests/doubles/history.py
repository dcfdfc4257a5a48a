"""Seeding a session's history in tests without running turns.

In the bot a history pair is only ever written together with its turn's records
(`TurnRecorder.save_turn`); tests of the history window and the summarizer just need
pairs, so they write them with the same `pair_statements`, returning the new ids.
"""

from __future__ import annotations

import time

from storage.backend import Tx
from storage.conversations import pair_statements
from storage.database import Database


async def insert_pair(
    tx: Tx,
    *,
    session_id: int,
    user_text: str,
    assistant_text: str,
    turn_id: str | None,
    created_at: float,
) -> tuple[int, int]:
    """Insert one user/assistant pair inside the caller's transaction; returns both ids."""
    statements = pair_statements(
        session_id=session_id,
        user_text=user_text,
        assistant_text=assistant_text,
        turn_id=turn_id,
        created_at=created_at,
    )
    ids: list[int] = []
    for sql, params in statements:
        row = await tx.fetch_one(sql + " RETURNING id", params)
        assert row is not None
        ids.append(int(row[0]))
    return ids[0], ids[1]


async def append_pair(
    db: Database, session_id: int, *, user_text: str, assistant_text: str, turn_id: str | None
) -> tuple[int, int]:
    """Store one user/assistant pair now; returns both message ids."""
    async with db.transaction() as tx:
        return await insert_pair(
            tx,
            session_id=session_id,
            user_text=user_text,
            assistant_text=assistant_text,
            turn_id=turn_id,
            created_at=time.time(),
        )
