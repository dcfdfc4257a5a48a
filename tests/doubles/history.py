"""Seeding a session's history in tests without running turns.

In the bot a history pair is only ever written together with its turn's records
(`TurnRecorder.save_turn`); tests of the history window and the summarizer just need
pairs, so they write them with the same `insert_pair` inside a transaction.
"""

from __future__ import annotations

import time

from storage.conversations import insert_pair
from storage.database import Database


async def append_pair(
    db: Database, session_id: int, *, user_text: str, assistant_text: str, turn_id: str | None
) -> tuple[int, int]:
    """Store one user/assistant pair; returns both message ids."""
    async with db.transaction() as conn:
        return await insert_pair(
            conn,
            session_id=session_id,
            user_text=user_text,
            assistant_text=assistant_text,
            turn_id=turn_id,
            created_at=time.time(),
        )
