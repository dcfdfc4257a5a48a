"""`GET /healthz`: 200 when the bot can take, store and deliver messages, 503 otherwise.

Served by the webhook server in webhook mode, and in polling mode on WEB_HOST:WEB_PORT
when HEALTH_ENABLED is set (off by default: a polling bot needs no listening port, and
nothing should open one the operator did not ask for). The checks, each named in the
body when it fails (no paths, no internals):

- `database`: the file at DATABASE_PATH is still the one the process opened (not
  deleted or replaced under it), and it can be written now — a write probe that takes
  the write lock and gives it back (`BEGIN IMMEDIATE; ROLLBACK` on a second connection:
  nothing written, the file does not grow), waiting like the bot's own writes up to the
  busy timeout (5 s) for a lock. So a request can take up to 5 s while a lock is held.
  On PostgreSQL (DATABASE_URL) there is no file to check; the probe is a rolled-back
  write on a pooled connection, so a server that is down, read-only or out of
  connections fails it.
- `storage_writes`: the bot's last write failed with a storage fault (locked beyond the
  busy timeout, disk full, I/O error) and none has succeeded since. This covers what the
  probe cannot see — a full disk (the probe writes nothing) — and the intake failing to
  record updates (its inserts are such writes).
- `intake`: a chat's updates were left for the next start because the store stayed
  unwritable beyond STORAGE_RETRY_GIVE_UP_S (`Intake.stalled_chats`); only a restart
  resumes them, so this stays 503 until then.
- `database_corrupt`: a statement met damaged data ("database disk image is malformed",
  PostgreSQL's data or index corrupted); the body's `reasons` says what was found. It
  stays 503 until a restart, whose integrity check refuses the damaged file.
- `delivery`: a stored answer has waited longer than HEALTH_DELIVERY_THRESHOLD_S to be
  delivered, or every delivery has been failing for a reason worth retrying (Telegram
  unreachable, 5xx, flood control) for longer than that (`delivery_stalled`).

With a live shop backend (SHOP_BACKEND other than local) the body also has `shop`: the
backend, its state (`ok`, `degraded`: the last request failed, `open`: the circuit
breaker stopped asking it), when it last answered and how long its last request took.
A shop that is down does not make the bot unhealthy: it still answers other questions.

A result is reused for HEALTH_CACHE_S (1 s) and concurrent requests share one running
check, so a storm of probes costs at most one check per second. A check that has not
finished within HEALTH_DEADLINE_S (a lock held, a server that does not answer) is
answered 503 `database` at once — within Caddy's and Docker's health timeouts — while it
runs on and is shared by the next requests instead of being started again.
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import Callable
from dataclasses import dataclass

from aiohttp import web

from bot.runtime.intake import Intake
from bot.runtime.responder import Responder
from storage.database import Database
from storage.inbox import InboxRepository
from tools.shop.directory import ShopDirectory

log = logging.getLogger(__name__)

HEALTH_CACHE_S = 1.0
# Caddy's active health checks give up after 5 s, Docker's HEALTHCHECK client after 8 s
HEALTH_DEADLINE_S = 2.5


@dataclass(frozen=True, slots=True)
class HealthReport:
    failed: tuple[str, ...]
    reasons: tuple[tuple[str, str], ...] = ()  # (check, what was found), for the body

    @property
    def ok(self) -> bool:
        return not self.failed


def delivery_stalled(
    *,
    now: float,
    threshold_s: float,
    oldest_answered_at: float | None,
    failing_since: float | None,
) -> bool:
    """True when answers cannot be delivered: the oldest stored, undelivered answer has
    waited longer than `threshold_s`, or deliveries have failed for a retryable reason
    without one success for longer than that."""
    if oldest_answered_at is not None and now - oldest_answered_at > threshold_s:
        return True
    return failing_since is not None and now - failing_since > threshold_s


class Health:
    """Runs the checks (cached, one at a time) for the /healthz route."""

    def __init__(
        self,
        *,
        db: Database,
        inbox: InboxRepository,
        intake: Intake,
        delivery: Responder,
        delivery_threshold_s: float,
        cache_s: float = HEALTH_CACHE_S,
        deadline_s: float = HEALTH_DEADLINE_S,
        clock: Callable[[], float] = time.time,
        shop: ShopDirectory | None = None,
    ) -> None:
        self._db = db
        self.shop = shop if shop is not None and shop.backend_name != "local" else None
        self._inbox = inbox
        self._intake = intake
        self._delivery = delivery
        self._threshold_s = delivery_threshold_s
        self._cache_s = cache_s
        self._deadline_s = deadline_s
        self._clock = clock
        self._corruption_logged = False
        self._cached: tuple[float, HealthReport] | None = None
        self._running: asyncio.Task[HealthReport] | None = None

    async def report(self) -> HealthReport:
        now = time.monotonic()
        if self._cached is not None and now - self._cached[0] < self._cache_s:
            return self._cached[1]
        if self._running is None:
            self._running = asyncio.create_task(self._check(), name="health-check")
        running = self._running
        try:
            async with asyncio.timeout(self._deadline_s):
                report = await asyncio.shield(running)
        except TimeoutError:
            # the store is too slow to say; the check runs on and the next request
            # shares it (see the module docstring)
            report = HealthReport(failed=("database",))
            running.add_done_callback(_retrieve)
        finally:
            if running.done() and self._running is running:
                self._running = None
        self._cached = (time.monotonic(), report)
        return report

    def _damage(self) -> str | None:
        damage = self._db.corruption
        if damage is not None and not self._corruption_logged:
            self._corruption_logged = True
            log.error("the database is corrupt (%s): restore a backup", damage)
        return damage

    async def _check(self) -> HealthReport:
        failed: list[str] = []
        reasons: list[tuple[str, str]] = []
        damage = self._damage()
        if damage is not None:
            failed.append("database_corrupt")
            reasons.append(("database_corrupt", f"{damage}; restore a backup"))
        if self._db.file_problem() is not None or await self._probe() is not None:
            failed.append("database")
        if self._db.write_fault is not None:
            failed.append("storage_writes")
        if self._intake.stalled_chats:
            failed.append("intake")
        try:
            oldest = await self._inbox.oldest_answered_at()
        except Exception:  # a read failing is the database's problem, reported above
            oldest = None
            if "database" not in failed:
                failed.append("database")
        if delivery_stalled(
            now=self._clock(),
            threshold_s=self._threshold_s,
            oldest_answered_at=oldest,
            failing_since=self._delivery.failing_since,
        ):
            failed.append("delivery")
        return HealthReport(failed=tuple(failed), reasons=tuple(reasons))

    async def _probe(self) -> str | None:
        try:
            return await self._db.write_probe()
        except Exception:  # the check reports, it does not raise
            log.warning("the database write probe failed unexpectedly", exc_info=True)
            return "error"


def _retrieve(task: asyncio.Task[HealthReport]) -> None:
    """A check nobody awaited any more: its error, if any, is logged, not left unread."""
    if not task.cancelled() and task.exception() is not None:
        log.warning("the health check failed", exc_info=task.exception())


def shop_state(shop: ShopDirectory) -> dict[str, object]:
    """The shop backend's part of /healthz (no URL, no credentials)."""
    stats = shop.stats
    last_ok = stats.last_ok_at
    return {
        "backend": shop.backend_name,
        "state": shop.state,
        "last_ok_at": (
            None if last_ok is None else time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(last_ok))
        ),
        "last_request_ms": (
            None if stats.last_latency_s is None else round(stats.last_latency_s * 1000, 1)
        ),
    }


def add_health_route(app: web.Application, health: Health) -> None:
    async def healthz(_request: web.Request) -> web.Response:
        report = await health.report()
        body: dict[str, object]
        if report.ok:
            body = {"status": "ok"}
        else:
            body = {"status": "unhealthy", "failed": list(report.failed)}
            if report.reasons:
                body["reasons"] = dict(report.reasons)
        if health.shop is not None:
            body["shop"] = shop_state(health.shop)
        return web.json_response(body, status=200 if report.ok else 503)

    app.router.add_get("/healthz", healthz)


def build_health_app(health: Health) -> web.Application:
    """The polling mode's small server: /healthz only."""
    app = web.Application()
    add_health_route(app, health)
    return app
