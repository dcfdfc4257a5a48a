"""Several instances on one PostgreSQL database: chat claims with a lease, and heartbeats.

Any instance may receive any update, but one chat's updates must be answered one at a
time, in order. The instance that owns a chat's *claim* (a row in `chat_claims`) is the
only one that works on it; a claim is a lease that its owner renews while it lives, so an
instance that dies loses its chats when the lease runs out and another one takes them.
Leases are rows, not advisory locks or `FOR UPDATE` row locks, because a turn lasts tens
of seconds (a lock would hold a pooled connection per busy chat for that long), and
because the inbox's own writes must be able to check the claim in SQL (`FENCE`): a
paused instance that outlived its lease can no longer move a row it does not own.

Every lease time is computed on the database's clock (`DB_NOW`), so the hosts' clocks
never need to agree. `instances` holds one heartbeat per live instance; the live count
divides Telegram's global send budget between them (bot/telegram/pacer.py).

PostgreSQL only: with SQLite there is one process and the intake keeps its chats in
memory (bot/runtime/intake.py).

Claim keys are `chat:<chat_id>`, or `update:<update_id>` for an update without a chat
(which needs no ordering) — the same split as the intake's queues.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass

from storage.backend import Database

ClaimKey = tuple[str, int]  # ("chat", chat_id) | ("update", update_id)

# The database's clock in unix seconds, as the lease columns store it.
DB_NOW = "CAST(EXTRACT(EPOCH FROM clock_timestamp()) AS DOUBLE PRECISION)"

# An unfinished row's claim key, written in SQL (must match `claim_text`).
_ROW_KEY = (
    "CASE WHEN {t}.chat_id IS NULL THEN 'update:' || {t}.update_id ELSE 'chat:' || {t}.chat_id END"
)

# Appended to the WHERE of an inbox transition (one `?`: the owner): the row moves only
# while this instance holds a live claim on its chat.
FENCE = (
    "AND EXISTS (SELECT 1 FROM chat_claims c WHERE c.owner = ? "
    f"AND c.claim_key = {_ROW_KEY.format(t='updates')} AND c.lease_until >= {DB_NOW})"
)


@dataclass(frozen=True, slots=True)
class InboxFence:
    """What the inbox's answer steps add to their WHERE (storage/inbox.py): nothing with
    one process (`UNFENCED`), this instance's live claim on the chat with several
    (`ClaimRepository.inbox_fence`)."""

    sql: str = ""
    params: tuple[str, ...] = ()


UNFENCED = InboxFence()

_CLAIM = (
    "INSERT INTO chat_claims (claim_key, owner, lease_until) "
    f"SELECT k, ?, {DB_NOW} + CAST(? AS DOUBLE PRECISION) FROM unnest(CAST(? AS TEXT[])) AS k "
    "ON CONFLICT (claim_key) DO UPDATE "
    "SET owner = excluded.owner, lease_until = excluded.lease_until "
    f"WHERE chat_claims.lease_until < {DB_NOW} OR chat_claims.owner = excluded.owner "
    "RETURNING claim_key"
)
_RENEW = (
    f"UPDATE chat_claims SET lease_until = {DB_NOW} + CAST(? AS DOUBLE PRECISION) "
    "WHERE owner = ? RETURNING claim_key"
)
_HEARTBEAT = (
    f"INSERT INTO instances (id, started_at, heartbeat_at) VALUES (?, {DB_NOW}, {DB_NOW}) "
    "ON CONFLICT (id) DO UPDATE SET heartbeat_at = excluded.heartbeat_at"
)
_LIVE = (
    f"SELECT count(*) FROM instances WHERE heartbeat_at > {DB_NOW} - CAST(? AS DOUBLE PRECISION)"
)
# instances that stopped heartbeating long ago (killed; a clean stop deletes its own row)
_FORGET_DEAD = f"DELETE FROM instances WHERE heartbeat_at < {DB_NOW} - CAST(? AS DOUBLE PRECISION)"
# release only when nothing of the chat is unfinished: a row committed by another
# instance before this runs keeps the claim here, so that row cannot be forgotten
_RELEASE_CHAT = (
    "DELETE FROM chat_claims WHERE claim_key = ? AND owner = ? AND NOT EXISTS "
    "(SELECT 1 FROM updates u WHERE u.status IN ('pending', 'answered') AND u.chat_id = ?)"
)
_RELEASE_UPDATE = (
    "DELETE FROM chat_claims WHERE claim_key = ? AND owner = ? AND NOT EXISTS "
    "(SELECT 1 FROM updates u WHERE u.status IN ('pending', 'answered') "
    "AND u.update_id = ? AND u.chat_id IS NULL)"
)
_UNCLAIMED = (
    f"SELECT DISTINCT {_ROW_KEY.format(t='u')} AS k FROM updates u "
    "WHERE u.status IN ('pending', 'answered') AND NOT EXISTS "
    f"(SELECT 1 FROM chat_claims c WHERE c.claim_key = {_ROW_KEY.format(t='u')} "
    f"AND c.lease_until >= {DB_NOW}) "
    "LIMIT ?"
)

# Rows of instances silent this long are deleted (they only matter for the live count).
FORGET_DEAD_AFTER_S = 86_400.0


def claim_text(key: ClaimKey) -> str:
    """The key as stored: `chat:<id>` or `update:<id>`."""
    kind, ident = key
    if kind not in ("chat", "update"):
        raise ValueError(f"not a claim kind: {kind}")
    return f"{kind}:{ident}"


def parse_claim(text: str) -> ClaimKey:
    kind, _, ident = text.partition(":")
    if kind not in ("chat", "update") or not ident:
        raise ValueError(f"not a claim key: {text!r}")
    return kind, int(ident)


@dataclass(frozen=True, slots=True)
class Heartbeat:
    """What one renewal learned: the claims still ours, and how many instances live."""

    held: frozenset[ClaimKey]
    live_instances: int


class ClaimRepository:
    """The claims and the heartbeat of ONE instance (`owner`), on PostgreSQL."""

    def __init__(self, db: Database, *, owner: str, lease_s: float) -> None:
        if lease_s <= 0:
            raise ValueError("lease_s must be positive")
        self._db = db
        self.owner = owner
        self.lease_s = lease_s

    @property
    def inbox_fence(self) -> InboxFence:
        """The inbox's answer steps move a row only while this instance holds its chat."""
        return InboxFence(f" {FENCE}", (self.owner,))

    async def claim(self, keys: Iterable[ClaimKey]) -> set[ClaimKey]:
        """Take the claims that are free, expired or already ours; return those we own now.

        One statement for the batch; keys are sorted so two instances claiming
        overlapping batches lock the rows in the same order.
        """
        texts = sorted({claim_text(key) for key in keys})
        if not texts:
            return set()
        async with self._db.transaction() as tx:
            rows = await tx.fetch_all(_CLAIM, (self.owner, self.lease_s, texts))
        return {parse_claim(str(row[0])) for row in rows}

    async def heartbeat(self, *, live_within_s: float) -> Heartbeat:
        """Renew every claim of ours and this instance's heartbeat, in one transaction.

        Returns the claims still ours (a claim another instance took after our lease ran
        out is not among them) and the instances that beat within `live_within_s`.
        """
        async with self._db.transaction() as tx:
            rows = await tx.fetch_all(_RENEW, (self.lease_s, self.owner))
            await tx.execute(_HEARTBEAT, (self.owner,))
            await tx.execute(_FORGET_DEAD, (FORGET_DEAD_AFTER_S,))
            live = await tx.fetch_one(_LIVE, (live_within_s,))
        count = int(live[0]) if live is not None else 1
        return Heartbeat(
            held=frozenset(parse_claim(str(row[0])) for row in rows),
            live_instances=max(1, count),
        )

    async def release(self, key: ClaimKey) -> bool:
        """Give up a claim of ours if the chat has nothing unfinished; True if released.

        False means new work arrived for the chat or the claim is no longer ours; a
        `claim` tells which.
        """
        kind, ident = key
        sql = _RELEASE_CHAT if kind == "chat" else _RELEASE_UPDATE
        return await self._db.write(sql, (claim_text(key), self.owner, ident)) == 1

    async def unclaimed(self, *, limit: int = 200) -> list[ClaimKey]:
        """Chats with unfinished updates whose claim is missing or expired (the sweeper)."""
        rows = await self._db.fetch_all(_UNCLAIMED, (limit,))
        return [parse_claim(str(row[0])) for row in rows]

    async def leave(self) -> None:
        """A clean stop: drop every claim of ours and our heartbeat, so the other
        instances take our chats and our share of the send budget at once."""
        async with self._db.transaction() as tx:
            await tx.execute("DELETE FROM chat_claims WHERE owner = ?", (self.owner,))
            await tx.execute("DELETE FROM instances WHERE id = ?", (self.owner,))
