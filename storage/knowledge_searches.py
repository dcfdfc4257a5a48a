"""The customers' searches of the shop's knowledge (storage/migrations/0021_knowledge_searches.sql).

One row per `search_knowledge` call in a customer's turn: when, in which chat and turn,
the query, how many relevant passages it found and the best one's source. /stats counts
searches and misses from it; the misses (found = 0) are kept with their query, so a report
of what customers ask that the knowledge does not answer can be read from here. The
owner's own checks (`support-bot knowledge search`) are not customers' searches and are
not recorded.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass

from storage.backend import Database

Clock = Callable[[], float]


@dataclass(frozen=True, slots=True)
class KnowledgeSearchCounts:
    searches: int
    misses: int  # searches that found nothing relevant


@dataclass(frozen=True, slots=True)
class KnowledgeMiss:
    at: float
    chat_id: int | None
    turn_id: str | None
    query: str


class KnowledgeSearchLog:
    """Writes and counts the customers' knowledge searches."""

    def __init__(self, db: Database, *, clock: Clock = time.time) -> None:
        self._db = db
        self._clock = clock

    async def record(
        self,
        query: str,
        found: int,
        best: str | None = None,
        *,
        chat_id: int | None = None,
        turn_id: str | None = None,
    ) -> None:
        await self._db.write(
            "INSERT INTO knowledge_searches(at, chat_id, turn_id, query, found, best) "
            "VALUES (?, ?, ?, ?, ?, ?)",
            (self._clock(), chat_id, turn_id, query, found, best),
        )

    async def counts(
        self, since: float | None = None, until: float | None = None
    ) -> KnowledgeSearchCounts:
        row = await self._db.fetch_one(
            "SELECT COUNT(*), COALESCE(SUM(CASE WHEN found = 0 THEN 1 ELSE 0 END), 0) "
            "FROM knowledge_searches WHERE at >= ? AND at < ?",
            (since if since is not None else 0.0, until if until is not None else 1e18),
        )
        assert row is not None
        return KnowledgeSearchCounts(searches=int(row[0]), misses=int(row[1]))

    async def misses(
        self, since: float | None = None, until: float | None = None, *, limit: int = 100
    ) -> list[KnowledgeMiss]:
        """The searches that found nothing, newest first."""
        rows = await self._db.fetch_all(
            "SELECT at, chat_id, turn_id, query FROM knowledge_searches "
            "WHERE found = 0 AND at >= ? AND at < ? ORDER BY at DESC, id DESC LIMIT ?",
            (since if since is not None else 0.0, until if until is not None else 1e18, limit),
        )
        return [
            KnowledgeMiss(
                at=float(r[0]),
                chat_id=None if r[1] is None else int(r[1]),
                turn_id=None if r[2] is None else str(r[2]),
                query=str(r[3]),
            )
            for r in rows
        ]
