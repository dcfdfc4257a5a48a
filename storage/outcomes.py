"""SQL over the questions' outcomes (`turns.outcome`, `repeat_of`, migration 0022): the
resolution figures of /stats, the questions the bot could not answer (/gaps), a
conversation as an admin reads it, and the audit of those reads.

What the outcomes mean is services/outcomes.py's; here they are only counted and read.
A turn stored before the outcomes existed has none and is counted as "not recorded".
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field

from storage.backend import Database

_NO_LOWER_BOUND = float("-inf")


@dataclass(frozen=True, slots=True)
class OutcomeFigures:
    """Questions of a period by outcome, and how many were resolved (see
    services/outcomes.py for the rule) and what cost the others their resolution."""

    by_outcome: dict[str, int] = field(default_factory=dict)  # None outcome: key ""
    resolved: int = 0
    disliked: int = 0  # answered with facts or an action, then 👎
    handed_off_later: int = 0  # … then a handoff within the window
    repeated: int = 0  # … then the same question again within the window
    action_not_done: int = 0  # an action proposed and not carried out


@dataclass(frozen=True, slots=True)
class MissedQuestion:
    """A question the bot could not answer: its turn, chat, time and the words."""

    turn_id: str
    chat_id: int
    asked_at: float
    text: str


@dataclass(frozen=True, slots=True)
class ConversationLine:
    """One line of a conversation as an admin reads it: a message, or a tool call."""

    at: float
    kind: str  # "user" | "assistant" | "tool"
    text: str  # the message, or the tool's name
    status: str | None = None  # a tool call's audit status (and code)
    turn_id: str | None = None
    outcome: str | None = None  # the question's outcome, on the user's line


def _resolved_condition(window_s: float) -> str:
    """SQL that holds for a turn `t` that resolved its question (services/outcomes.py)."""
    return f"""
      (t.outcome = 'facts'
       OR (t.outcome = 'action' AND EXISTS (
             SELECT 1 FROM pending_actions AS a WHERE a.turn_id = t.id AND a.status = 'done')))
      AND NOT EXISTS (SELECT 1 FROM answer_feedback AS f WHERE f.turn_id = t.id AND f.rating = -1)
      AND NOT EXISTS (SELECT 1 FROM turns AS r WHERE r.repeat_of = t.id
                      AND r.started_at < t.started_at + {float(window_s)!r})
      AND NOT EXISTS (SELECT 1 FROM handoffs AS h WHERE h.chat_id = t.chat_id
                      AND h.started_at >= t.started_at
                      AND h.started_at < t.started_at + {float(window_s)!r})"""


class OutcomeRepository:
    """Read-only SQL over outcomes, and the audit of conversation reads."""

    def __init__(self, db: Database) -> None:
        self._db = db

    async def figures(self, since: float | None, until: float, window_s: float) -> OutcomeFigures:
        low = _NO_LOWER_BOUND if since is None else since
        rows = await self._db.fetch_all(
            "SELECT COALESCE(outcome, ''), COUNT(*) FROM turns"
            " WHERE started_at >= ? AND started_at < ? GROUP BY 1",
            (low, until),
        )
        by_outcome = {str(r[0]): int(r[1]) for r in rows}
        if not by_outcome:
            return OutcomeFigures()
        w = float(window_s)
        row = await self._db.fetch_one(
            f"""
            SELECT
              COUNT(*) FILTER (WHERE {_resolved_condition(w)}),
              COUNT(*) FILTER (WHERE EXISTS (SELECT 1 FROM answer_feedback AS f
                                WHERE f.turn_id = t.id AND f.rating = -1)),
              COUNT(*) FILTER (WHERE EXISTS (SELECT 1 FROM handoffs AS h
                                WHERE h.chat_id = t.chat_id AND h.started_at >= t.started_at
                                  AND h.started_at < t.started_at + {w!r})),
              COUNT(*) FILTER (WHERE EXISTS (SELECT 1 FROM turns AS r WHERE r.repeat_of = t.id
                                AND r.started_at < t.started_at + {w!r})),
              COUNT(*) FILTER (WHERE t.outcome = 'action' AND NOT EXISTS (
                                SELECT 1 FROM pending_actions AS a
                                WHERE a.turn_id = t.id AND a.status = 'done'))
            FROM turns AS t
            WHERE t.outcome IN ('facts', 'action') AND t.started_at >= ? AND t.started_at < ?
            """,
            (low, until),
        )
        assert row is not None
        return OutcomeFigures(
            by_outcome=by_outcome,
            resolved=int(row[0] or 0),
            disliked=int(row[1] or 0),
            handed_off_later=int(row[2] or 0),
            repeated=int(row[3] or 0),
            action_not_done=int(row[4] or 0),
        )

    async def missed(
        self,
        since: float | None,
        until: float,
        *,
        outcomes: Sequence[str],
        limit: int = 2000,
    ) -> list[MissedQuestion]:
        """The questions of the period with one of `outcomes` (oldest first, at most
        `limit`, the newest kept), with the customer's words from the history."""
        low = _NO_LOWER_BOUND if since is None else since
        marks = ", ".join("?" for _ in outcomes)
        rows = await self._db.fetch_all(
            f"""
            SELECT t.id, t.chat_id, t.started_at, m.content FROM turns AS t
            JOIN messages AS m ON m.turn_id = t.id AND m.role = 'user'
            WHERE t.outcome IN ({marks}) AND t.started_at >= ? AND t.started_at < ?
            ORDER BY t.started_at DESC, t.id LIMIT ?
            """,
            (*outcomes, low, until, limit),
        )
        found = [MissedQuestion(str(r[0]), int(r[1]), float(r[2]), str(r[3])) for r in rows]
        found.reverse()
        return found

    async def conversation(
        self, chat_id: int, *, before_id: int | None = None, limit: int = 20
    ) -> tuple[list[ConversationLine], int | None]:
        """The chat's last `limit` messages before message `before_id` (all sessions),
        oldest first, with the tool calls of their turns as lines of their own; and the
        id to page back from (None when nothing older is left)."""
        top = 2**62 if before_id is None else before_id
        rows = await self._db.fetch_all(
            """
            SELECT m.id, m.created_at, m.role, m.content, m.turn_id, t.outcome
            FROM messages AS m JOIN sessions AS s ON s.id = m.session_id
            LEFT JOIN turns AS t ON t.id = m.turn_id
            WHERE s.chat_id = ? AND m.id < ?
            ORDER BY m.id DESC LIMIT ?
            """,
            (chat_id, top, limit + 1),
        )
        older = int(rows[limit - 1][0]) if len(rows) > limit else None
        page = list(reversed(rows[:limit]))
        turn_ids = sorted({str(r[4]) for r in page if r[4] is not None})
        calls = await self._tool_calls(turn_ids)
        lines: list[ConversationLine] = []
        for _id, created_at, role, content, turn_id, outcome in page:
            tid = None if turn_id is None else str(turn_id)
            if role == "assistant" and tid is not None:
                lines.extend(calls.get(tid, ()))
            lines.append(
                ConversationLine(
                    at=float(created_at),
                    kind=str(role),
                    text=str(content),
                    turn_id=tid,
                    outcome=None if role != "user" or outcome is None else str(outcome),
                )
            )
        return lines, older

    async def question(self, turn_id: str) -> MissedQuestion | None:
        """One question by its turn, with the customer's words."""
        row = await self._db.fetch_one(
            "SELECT t.id, t.chat_id, t.started_at, m.content FROM turns AS t"
            " JOIN messages AS m ON m.turn_id = t.id AND m.role = 'user' WHERE t.id = ?",
            (turn_id,),
        )
        return (
            None
            if row is None
            else MissedQuestion(str(row[0]), int(row[1]), float(row[2]), str(row[3]))
        )

    async def _tool_calls(self, turn_ids: Sequence[str]) -> dict[str, list[ConversationLine]]:
        if not turn_ids:
            return {}
        marks = ", ".join("?" for _ in turn_ids)
        rows = await self._db.fetch_all(
            f"SELECT turn_id, started_at, tool_name, status, error_code FROM tool_calls"
            f" WHERE turn_id IN ({marks}) ORDER BY started_at, id",
            tuple(turn_ids),
        )
        calls: dict[str, list[ConversationLine]] = {}
        for turn_id, started_at, name, status, code in rows:
            shown = str(status) if code is None else f"{status}: {code}"
            calls.setdefault(str(turn_id), []).append(
                ConversationLine(float(started_at), "tool", str(name), shown, str(turn_id))
            )
        return calls

    async def chat_of_turn(self, turn_id: str) -> int | None:
        row = await self._db.fetch_one("SELECT chat_id FROM turns WHERE id = ?", (turn_id,))
        return None if row is None else int(row[0])

    async def known_chat(self, chat_id: int) -> bool:
        row = await self._db.fetch_one(
            "SELECT 1 FROM sessions WHERE chat_id = ? LIMIT 1", (chat_id,)
        )
        return row is not None

    async def await_answer(self, *, admin_id: int, turn_id: str, at: float) -> None:
        """The admin's next message answers the gap of `turn_id` (replaces a waiting one)."""
        await self._db.write(
            "INSERT INTO gap_answers(admin_id, turn_id, asked_at) VALUES (?, ?, ?)"
            " ON CONFLICT(admin_id) DO UPDATE SET turn_id = excluded.turn_id,"
            " asked_at = excluded.asked_at",
            (admin_id, turn_id, at),
        )

    async def awaited_answer(self, admin_id: int, *, since: float) -> str | None:
        """The turn whose gap the admin is answering (asked at or after `since`)."""
        row = await self._db.fetch_one(
            "SELECT turn_id FROM gap_answers WHERE admin_id = ? AND asked_at >= ?",
            (admin_id, since),
        )
        return None if row is None else str(row[0])

    async def drop_answer(self, admin_id: int, turn_id: str | None = None) -> bool:
        """No answer awaited from the admin any more (only `turn_id`'s, when given)."""
        if turn_id is None:
            changed = await self._db.write(
                "DELETE FROM gap_answers WHERE admin_id = ?", (admin_id,)
            )
        else:
            changed = await self._db.write(
                "DELETE FROM gap_answers WHERE admin_id = ? AND turn_id = ?", (admin_id, turn_id)
            )
        return changed > 0

    async def record_view(self, *, admin_id: int, chat_id: int, via: str, at: float) -> None:
        await self._db.write(
            "INSERT INTO conversation_views(admin_id, chat_id, via, viewed_at) VALUES (?, ?, ?, ?)",
            (admin_id, chat_id, via, at),
        )

    async def views(self, since: float | None = None) -> list[tuple[int, int, str, float]]:
        low = _NO_LOWER_BOUND if since is None else since
        rows = await self._db.fetch_all(
            "SELECT admin_id, chat_id, via, viewed_at FROM conversation_views"
            " WHERE viewed_at >= ? ORDER BY viewed_at, id",
            (low,),
        )
        return [(int(r[0]), int(r[1]), str(r[2]), float(r[3])) for r in rows]

    async def sessions_since(self, since: float) -> list[int]:
        """Sessions with a message at or after `since` (the export), oldest first."""
        rows = await self._db.fetch_all(
            "SELECT session_id FROM messages WHERE created_at >= ?"
            " GROUP BY session_id ORDER BY MIN(created_at), session_id",
            (since,),
        )
        return [int(r[0]) for r in rows]

    async def session_lines(self, session_id: int) -> tuple[int, list[ConversationLine]]:
        """One session's chat id and every message, oldest first, with tool calls."""
        chat = await self._db.fetch_one("SELECT chat_id FROM sessions WHERE id = ?", (session_id,))
        rows = await self._db.fetch_all(
            "SELECT m.created_at, m.role, m.content, m.turn_id, t.outcome FROM messages AS m"
            " LEFT JOIN turns AS t ON t.id = m.turn_id"
            " WHERE m.session_id = ? ORDER BY m.id",
            (session_id,),
        )
        turn_ids = sorted({str(r[3]) for r in rows if r[3] is not None})
        calls = await self._tool_calls(turn_ids)
        lines: list[ConversationLine] = []
        for created_at, role, content, turn_id, outcome in rows:
            tid = None if turn_id is None else str(turn_id)
            if role == "assistant" and tid is not None:
                lines.extend(calls.get(tid, ()))
            lines.append(
                ConversationLine(
                    float(created_at),
                    str(role),
                    str(content),
                    turn_id=tid,
                    outcome=None if role != "user" or outcome is None else str(outcome),
                )
            )
        return (int(chat[0]) if chat else 0), lines


async def claim_digest(db: Database, week: str, at: float) -> bool:
    """Claim the weekly digest of `week`; False when it was already sent (or claimed)."""
    changed = await db.write(
        "INSERT INTO gap_digests(week, sent_at) VALUES (?, ?) ON CONFLICT(week) DO NOTHING",
        (week, at),
    )
    return changed > 0
