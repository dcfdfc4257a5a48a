"""Rows of the drafts made from operators' answers (`answer_drafts`, migration 0022) and
the handoff exchanges they are made from. One draft per closed handoff (its unique
`handoff_id` is the claim, so several instances draft it once); every change of status
is one conditional update, so two admins' presses decide it once."""

from __future__ import annotations

from dataclasses import dataclass

from storage.backend import Database


@dataclass(frozen=True, slots=True)
class AnswerDraft:
    id: int
    handoff_id: int
    chat_id: int
    question: str | None
    answer: str | None
    status: str


@dataclass(frozen=True, slots=True)
class ClosedHandoff:
    id: int
    chat_id: int
    started_at: float
    closed_at: float


class AnswerDraftRepository:
    def __init__(self, db: Database) -> None:
        self._db = db

    async def undrafted(self, since: float, limit: int = 20) -> list[ClosedHandoff]:
        """Handoffs closed since `since` that have no draft yet, oldest first."""
        rows = await self._db.fetch_all(
            "SELECT h.id, h.chat_id, h.started_at, h.closed_at FROM handoffs AS h"
            " WHERE h.closed_at IS NOT NULL AND h.closed_at >= ?"
            " AND NOT EXISTS (SELECT 1 FROM answer_drafts AS d WHERE d.handoff_id = h.id)"
            " ORDER BY h.closed_at, h.id LIMIT ?",
            (since, limit),
        )
        return [ClosedHandoff(int(r[0]), int(r[1]), float(r[2]), float(r[3])) for r in rows]

    async def claim(self, handoff: ClosedHandoff, at: float) -> int | None:
        """The new draft's id, or None when another instance claimed this handoff."""
        changed = await self._db.write(
            "INSERT INTO answer_drafts(handoff_id, chat_id, status, created_at)"
            " VALUES (?, ?, 'drafting', ?) ON CONFLICT(handoff_id) DO NOTHING",
            (handoff.id, handoff.chat_id, at),
        )
        if not changed:
            return None
        row = await self._db.fetch_one(
            "SELECT id FROM answer_drafts WHERE handoff_id = ?", (handoff.id,)
        )
        return None if row is None else int(row[0])

    async def exchange(self, handoff: ClosedHandoff, before: int = 4) -> list[tuple[str, str]]:
        """(role, text) of the handoff: the customer's last `before` messages before it,
        then everything said during it, oldest first."""
        rows = await self._db.fetch_all(
            "SELECT m.role, m.content, m.created_at FROM messages AS m"
            " JOIN sessions AS s ON s.id = m.session_id"
            " WHERE s.chat_id = ? AND m.created_at <= ? ORDER BY m.id DESC LIMIT 60",
            (handoff.chat_id, handoff.closed_at),
        )
        during = [(str(r[0]), str(r[1])) for r in rows if float(r[2]) >= handoff.started_at]
        earlier = [(str(r[0]), str(r[1])) for r in rows if float(r[2]) < handoff.started_at]
        return list(reversed(earlier[:before])) + list(reversed(during))

    async def set_draft(self, draft_id: int, question: str | None, answer: str | None) -> None:
        status = "pending" if question and answer else "none"
        await self._db.write(
            "UPDATE answer_drafts SET question = ?, answer = ?, status = ?"
            " WHERE id = ? AND status = 'drafting'",
            (question, answer, status, draft_id),
        )

    async def get(self, draft_id: int) -> AnswerDraft | None:
        row = await self._db.fetch_one(
            "SELECT id, handoff_id, chat_id, question, answer, status FROM answer_drafts"
            " WHERE id = ?",
            (draft_id,),
        )
        if row is None:
            return None
        return AnswerDraft(int(row[0]), int(row[1]), int(row[2]), row[3], row[4], str(row[5]))

    async def decide(self, draft_id: int, status: str, *, by: int, at: float) -> bool:
        """pending -> `status` (added | skipped); False when it was decided already."""
        changed = await self._db.write(
            "UPDATE answer_drafts SET status = ?, decided_by = ?, decided_at = ?"
            " WHERE id = ? AND status = 'pending'",
            (status, by, at, draft_id),
        )
        return changed > 0

    async def reopen(self, draft_id: int) -> None:
        """An added draft whose entry could not be stored: pending again."""
        await self._db.write(
            "UPDATE answer_drafts SET status = 'pending', decided_by = NULL, decided_at = NULL"
            " WHERE id = ? AND status = 'added'",
            (draft_id,),
        )

    async def stale_drafting(self, before: float) -> None:
        """Drafts claimed by a process that died before finishing: given up (none)."""
        await self._db.write(
            "UPDATE answer_drafts SET status = 'none' WHERE status = 'drafting' AND created_at < ?",
            (before,),
        )
