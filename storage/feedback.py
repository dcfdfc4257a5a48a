"""SQL for 👍/👎 feedback on answers (`answer_feedback`): look up an answer, upsert a rating.

One row per answer (its turn id is the key), so a second press replaces the first and an
answer counts once, as its latest rating. Only ids, the rating and times are stored.
"""

from __future__ import annotations

from dataclasses import dataclass

from storage.backend import Database


@dataclass(frozen=True, slots=True)
class RatableAnswer:
    """An answered turn as far as feedback needs it: where, whose, when."""

    turn_id: str
    chat_id: int
    user_id: int  # the sender of the question (Telegram id, or the chat's for a chat)
    started_at: float


class FeedbackRepository:
    def __init__(self, db: Database) -> None:
        self._db = db

    async def answer(self, turn_id: str) -> RatableAnswer | None:
        """The turn `turn_id` if the customer got the model's answer from it (complete or
        cut short); None otherwise — unknown, failed, refused or withheld: nothing to rate."""
        row = await self._db.fetch_one(
            "SELECT id, chat_id, user_id, started_at FROM turns"
            " WHERE id = ? AND status = 'answered' AND stop_reason IN ('completed', 'truncated')",
            (turn_id,),
        )
        if row is None:
            return None
        return RatableAnswer(str(row[0]), int(row[1]), int(row[2]), float(row[3]))

    async def record(
        self, answer: RatableAnswer, *, user_id: int, rating: int, rated_at: float
    ) -> None:
        """The answer's rating is `rating` (1 or -1) from now on; replaces an earlier one."""
        await self._db.write(
            "INSERT INTO answer_feedback"
            " (turn_id, chat_id, user_id, rating, answered_at, rated_at)"
            " VALUES (?, ?, ?, ?, ?, ?)"
            " ON CONFLICT(turn_id) DO UPDATE SET"
            " user_id = excluded.user_id, rating = excluded.rating, rated_at = excluded.rated_at",
            (answer.turn_id, answer.chat_id, user_id, rating, answer.started_at, rated_at),
        )

    async def rating_of(self, turn_id: str) -> int | None:
        """The answer's current rating (1, -1), or None if it was never rated."""
        row = await self._db.fetch_one(
            "SELECT rating FROM answer_feedback WHERE turn_id = ?", (turn_id,)
        )
        return None if row is None else int(row[0])


@dataclass(frozen=True, slots=True)
class DislikedConversation:
    """An answer rated 👎 with the conversation up to it (oldest first), for a scenario
    draft (`support-bot simulate --from-feedback`)."""

    turn_id: str
    rated_at: float
    messages: tuple[tuple[str, str], ...]  # (role, content): "user" | "assistant"


async def disliked_conversations(
    db: Database, *, limit: int = 20, messages_per_conversation: int = 20
) -> list[DislikedConversation]:
    """The newest 👎-rated answers whose conversation is still stored, each with at most
    `messages_per_conversation` messages up to and including the rated answer."""
    rows = await db.fetch_all(
        "SELECT f.turn_id, f.rated_at, t.session_id FROM answer_feedback f"
        " JOIN turns t ON t.id = f.turn_id WHERE f.rating = -1"
        " ORDER BY f.rated_at DESC LIMIT ?",
        (limit,),
    )
    found = []
    for turn_id, rated_at, session_id in rows:
        messages = await db.fetch_all(
            "SELECT role, content FROM messages WHERE session_id = ? AND id <="
            " (SELECT MAX(id) FROM messages WHERE turn_id = ?) ORDER BY id DESC LIMIT ?",
            (session_id, turn_id, messages_per_conversation),
        )
        if messages:
            pairs = tuple((str(role), str(content)) for role, content in reversed(messages))
            found.append(DislikedConversation(str(turn_id), float(rated_at), pairs))
    return found
