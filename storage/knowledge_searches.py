"""The customers' searches of the shop's knowledge (storage/migrations/0021_knowledge_searches.sql).

One row per `search_knowledge` call in a customer's turn: when, in which chat and turn,
the query, how many relevant passages it found and the best one's source. /stats counts
searches and misses from it: how well the knowledge serves the searches made. What
customers asked that the bot could not answer is not read from here but from each
question's stored outcome (/gaps, storage/outcomes.py), the one owner of that: it holds
the customer's own words (a search's query is the model's) and every kind of "don't
know", the FAQ's and the model's own too. The owner's own checks (`support-bot knowledge
search`) are not customers' searches and are not recorded.
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
