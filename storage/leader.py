"""The polling leader lock: of several instances on one PostgreSQL database, one polls.

Telegram serves `getUpdates` to one client at a time (a second one gets 409 Conflict),
so instances in polling mode elect a leader: the holder of a session-level advisory lock
(`pg_try_advisory_lock`) on a connection of its own. Not a pooled connection: a session
lock belongs to the connection that took it, and a pool would hand that connection to
other work (and release it on return). The lock is freed by the server when that session
ends, so a dead leader cannot keep it:

- killed (SIGKILL, OOM, a crash): the socket closes and the lock is free at once;
- frozen or cut off (a stopped VM, a partition): TCP keepalives (over TCP) or
  `idle_session_timeout` (PostgreSQL >= 14; the leader pings far more often than that)
  end the session within about 15 s.

The leader learns it lost the lock when its ping fails (`ping`); it must then stop
polling at once: the server may already have given the lock to another instance.
"""

from __future__ import annotations

import asyncio
import logging

import asyncpg

log = logging.getLogger(__name__)

# the server ends a frozen leader's session after this much silence (PostgreSQL >= 14)
IDLE_SESSION_TIMEOUT_S = 15.0
# TCP keepalives from the server: a vanished peer is noticed after 5 + 3 x 2 s
KEEPALIVE_SETTINGS = {
    "tcp_keepalives_idle": "5",
    "tcp_keepalives_interval": "2",
    "tcp_keepalives_count": "3",
}
CONNECT_TIMEOUT_S = 5.0
FIRST_VERSION_WITH_IDLE_SESSION_TIMEOUT = 14


def polling_lock_name(bot_id: int) -> str:
    """One lock per bot: two bots sharing a database do not block each other."""
    return f"shop-support-bot:polling:{bot_id}"


class LeaderLock:
    """A session advisory lock named `name` on a dedicated connection to `url`.

    Not safe for concurrent use by several tasks: one owner (the poller's leadership
    loop) calls `try_acquire`, `ping` and `release` in turn.
    """

    def __init__(
        self,
        url: str,
        name: str,
        *,
        connect_timeout_s: float = CONNECT_TIMEOUT_S,
        idle_session_timeout_s: float = IDLE_SESSION_TIMEOUT_S,
    ) -> None:
        self._url = url
        self._name = name
        self._connect_timeout_s = connect_timeout_s
        self._idle_session_timeout_s = idle_session_timeout_s
        self._conn: asyncpg.Connection | None = None
        self._held = False

    @property
    def held(self) -> bool:
        """True between a successful `try_acquire` and the next failed ping or release."""
        return self._held

    async def try_acquire(self) -> bool:
        """Take the lock if it is free (never waits for it); False when another holds it.

        Raises the driver's or the network's error when the database cannot be reached;
        the connection is then dropped and the next call connects afresh.
        """
        if self._held:
            return True
        try:
            conn = await self._connection()
            got = await conn.fetchval(
                "SELECT pg_try_advisory_lock(hashtextextended($1, 0))", self._name
            )
        except BaseException:
            await self._drop()
            raise
        self._held = bool(got)
        return self._held

    async def ping(self, timeout_s: float) -> bool:
        """Is the lock still ours? False when the connection failed or did not answer in
        `timeout_s` — the server may then free the lock at any moment, so the caller must
        act as if it were lost (the connection is dropped, which frees it for certain)."""
        if not self._held or self._conn is None:
            return False
        try:
            # asyncio.timeout, not wait_for: Python 3.11's wait_for loses a cancellation
            # that arrives as the query completes, and the cancelled ping loop ran on
            # for ever (a poller that never stopped; seen as a hung test run)
            async with asyncio.timeout(timeout_s):
                held = await self._still_held(self._conn)
        except Exception as exc:  # timeout, connection lost, server gone
            log.warning("leader lock: the database did not answer (%s)", type(exc).__name__)
            held = False
        if not held:
            self._abandon()
        return held

    async def release(self) -> None:
        """Give the lock up (closing the connection frees it)."""
        await self._drop()

    async def _still_held(self, conn: asyncpg.Connection) -> bool:
        # the lock lives as long as the session; this also proves the session is alive
        found = await conn.fetchval(
            "SELECT EXISTS (SELECT 1 FROM pg_locks WHERE locktype = 'advisory'"
            " AND pid = pg_backend_pid() AND granted"
            " AND ((classid::bigint << 32) | objid::bigint) = hashtextextended($1, 0))",
            self._name,
        )
        return bool(found)

    async def _connection(self) -> asyncpg.Connection:
        if self._conn is not None and not self._conn.is_closed():
            return self._conn
        conn = await asyncpg.connect(
            self._url,
            timeout=self._connect_timeout_s,
            server_settings={**KEEPALIVE_SETTINGS, "application_name": "shop-support-bot leader"},
        )
        try:
            if conn.get_server_version().major >= FIRST_VERSION_WITH_IDLE_SESSION_TIMEOUT:
                timeout_ms = str(round(self._idle_session_timeout_s * 1000))
                await conn.execute(
                    "SELECT set_config('idle_session_timeout', $1, false)", timeout_ms
                )
        except BaseException:
            conn.terminate()
            raise
        self._conn = conn
        return conn

    def _abandon(self) -> None:
        """Drop the connection without a goodbye: the server may not be answering."""
        self._held = False
        conn, self._conn = self._conn, None
        if conn is not None:
            conn.terminate()

    async def _drop(self) -> None:
        """Close the connection (the server frees the lock); never raises."""
        self._held = False
        conn, self._conn = self._conn, None
        if conn is None or conn.is_closed():
            return
        try:
            async with asyncio.timeout(CONNECT_TIMEOUT_S):  # not wait_for: see `ping`
                await conn.close()
        except Exception:  # a broken connection: drop the socket
            conn.terminate()
        except BaseException:  # cancelled while closing: never leave the socket open
            conn.terminate()
            raise
