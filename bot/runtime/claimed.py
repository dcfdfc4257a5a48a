"""Several instances on one PostgreSQL database: a chat runs only where its claim is held.

The load balancer may hand any update to any instance. Each instance stores the update
(before its 200, as always) and then tries to *claim* the chat (storage/coordination.py);
the instance that holds the claim runs the chat's updates one at a time, taking them from
the inbox in the order they arrived (`received_at, update_id`), and gives the claim back
only when the chat has nothing unfinished. So the database, not an in-memory queue, is a
chat's queue, and it is the same queue whichever instance stored the update.

- **Renewal.** Every `tick_s` (at most a fifth of the lease) the instance renews all its
  claims and its heartbeat in one transaction. A claim missing from the answer was taken
  by another instance after our lease ran out: its worker is cancelled at once.
- **Sweeper.** On the same tick it claims chats that have unfinished updates and no live
  claim — a chat whose owner died (after the lease), a chat whose owner gave the claim
  back in the instant another instance stored its update, and at start-up everything a
  previous run left (`resume`).
- **Self-fencing** (`ClaimFence`). An instance that cannot renew (the database is
  unreachable, the process was paused) must assume its claims are gone before the
  database does: once a claim was last confirmed more than two thirds of the lease ago,
  its worker is stopped before any further Bot API request (the sender asks the fence
  before each one). The inbox's own writes are fenced in SQL too (storage/inbox.py), so
  a zombie can neither store a second reply nor finish a row it no longer owns.
- **Send budget.** The heartbeat also counts the live instances; `on_live` gets the
  count so the sender takes its share of Telegram's global rate (bot/telegram/pacer.py).

A clean stop gives every claim and the heartbeat back (`leave`), so the other instances
take the chats at once; after SIGKILL they wait for the lease (CLAIM_LEASE_S) instead.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import time
from collections import Counter
from collections.abc import Callable, Iterable
from contextvars import ContextVar

from bot.runtime.intake import ChatKey, SchedulerFactory, UpdateHandler, drain_workers
from storage.coordination import ClaimRepository
from storage.inbox import InboxRepository

log = logging.getLogger(__name__)

# The claim the current task works under (set in a chat worker; inherited by the tasks it
# starts, e.g. the typing indicator), so the fence knows which lease a request needs.
_working_claim: ContextVar[ChatKey | None] = ContextVar("working_claim", default=None)

SWEEP_EVERY_S = 2.0
# The same update handled this many times without its row moving on: stop the chat
# (keep its claim, report it stalled) rather than spin.
MAX_ATTEMPTS_PER_STEP = 3


class ClaimFence:
    """When each claim was last confirmed, and the check the sender makes before a request.

    Times are this host's monotonic clock, taken *before* the statement that confirmed
    the claim, so they are never later than the database's own lease start.
    """

    def __init__(self, *, lease_s: float, clock: Callable[[], float] = time.monotonic) -> None:
        self.stale_after_s = lease_s * 2 / 3
        self._clock = clock
        self._confirmed: dict[ChatKey, float] = {}
        self._workers: dict[ChatKey, asyncio.Task[None]] = {}

    def now(self) -> float:
        return self._clock()

    def confirm(self, keys: Iterable[ChatKey], at: float) -> None:
        for key in keys:
            self._confirmed[key] = max(at, self._confirmed.get(key, at))

    def forget(self, key: ChatKey) -> None:
        self._confirmed.pop(key, None)

    def confirmed_before(self, at: float) -> set[ChatKey]:
        return {key for key, when in self._confirmed.items() if when < at}

    def fresh(self, key: ChatKey) -> bool:
        confirmed = self._confirmed.get(key)
        return confirmed is not None and self._clock() - confirmed < self.stale_after_s

    def register(self, workers: dict[ChatKey, asyncio.Task[None]]) -> None:
        """The scheduler's workers, so a stale claim's worker can be cancelled."""
        self._workers = workers

    def check(self) -> None:
        """Before a Bot API request: raise CancelledError (and cancel the chat's worker)
        when the request belongs to a chat whose claim may already be another's."""
        key = _working_claim.get()
        if key is None or self.fresh(key):
            return
        log.warning("claim on %s:%s not renewed in time; stopping its work here", *key)
        worker = self._workers.get(key)
        if worker is not None:
            worker.cancel()
        raise asyncio.CancelledError


class ClaimedScheduler:
    """The `ChatScheduler` for several instances (see the module docstring)."""

    def __init__(
        self,
        handle: UpdateHandler,
        *,
        inbox: InboxRepository,
        claims: ClaimRepository,
        fence: ClaimFence,
        on_live: Callable[[int], None] | None = None,
        sweep_every_s: float = SWEEP_EVERY_S,
    ) -> None:
        self._handle = handle
        self._inbox = inbox
        self._claims = claims
        self._fence = fence
        self._on_live = on_live
        self.tick_s = min(sweep_every_s, claims.lease_s / 5)
        self._live_within_s = claims.lease_s
        self._workers: dict[ChatKey, asyncio.Task[None]] = {}
        fence.register(self._workers)
        self._stalled: set[ChatKey] = set()
        self._to_claim: set[ChatKey] = set()
        self._claimer: asyncio.Task[None] | None = None
        self._claiming = asyncio.Lock()
        self._ticker: asyncio.Task[None] | None = None
        self._closed = False
        self._renewal_failing = False

    @property
    def busy_chats(self) -> int:
        return len(self._workers)

    @property
    def stalled_chats(self) -> int:
        return len(self._stalled)

    def schedule(self, key: ChatKey, update_id: int) -> None:
        if self._closed:
            return
        if key in self._stalled:
            log.warning("update %s waits for the next start behind its chat's", update_id)
            return
        if key in self._workers:
            return  # its worker reads the inbox again before it gives the claim back
        self._to_claim.add(key)
        if self._claimer is None:
            self._claimer = asyncio.create_task(self._claim_waiting(), name="chat-claims")

    async def _claim_waiting(self) -> None:
        """Claim the chats of newly stored updates, in batches (one statement each)."""
        try:
            while self._to_claim:
                batch = self._to_claim - self._workers.keys()
                self._to_claim.clear()
                await self._claim_and_start(batch, "claiming new chats")
        finally:
            self._claimer = None

    async def _claim_and_start(self, keys: set[ChatKey], what: str) -> int:
        if not keys:
            return 0
        try:
            claimed = await self._claim(keys)
        except Exception as exc:  # the sweeper finds these chats again
            log.warning("%s failed (%s); the sweeper will retry", what, type(exc).__name__)
            return 0
        for key in claimed:
            self._start(key)
        return len(claimed)

    async def _claim(self, keys: set[ChatKey]) -> set[ChatKey]:
        """Claim and note the time; never while a renewal runs (see `_renew`)."""
        async with self._claiming:
            started = self._fence.now()
            claimed = await self._claims.claim(keys)
            self._fence.confirm(claimed, started)
            return claimed

    def _start(self, key: ChatKey) -> None:
        if self._closed or key in self._workers or key in self._stalled:
            return
        self._workers[key] = asyncio.create_task(
            self._work(key), name=f"chat-worker-{key[0]}-{key[1]}"
        )

    async def resume(self) -> int:
        """Beat, claim what nobody holds (a previous run's leftovers), then keep ticking."""
        await self._renew()
        claimed = await self._sweep()
        if claimed:
            log.info("resuming %d chat(s) with unfinished updates from the inbox", claimed)
        if self._ticker is None:
            self._ticker = asyncio.create_task(self._tick_forever(), name="chat-claims-tick")
        return claimed

    async def _tick_forever(self) -> None:
        while True:
            await asyncio.sleep(self.tick_s)
            try:
                await self.tick()
            except Exception:  # never stop renewing over one bad tick
                log.exception("chat claims tick failed")

    async def tick(self) -> None:
        """Renew our claims and heartbeat, then sweep (every `tick_s`; tests call it)."""
        await self._renew()
        if not self._closed:
            await self._sweep()

    async def _renew(self) -> None:
        """Renew; a claim confirmed before the renewal began and missing from its answer
        is another instance's now. Claims are never taken while a renewal runs, so every
        claim confirmed before it had committed before it — none is missing by accident."""
        async with self._claiming:
            started = self._fence.now()
            try:
                beat = await self._claims.heartbeat(live_within_s=self._live_within_s)
            except Exception as exc:
                self._renewal_failed(exc)
                return
            self._fence.confirm(beat.held, started)
            lost = self._fence.confirmed_before(started) - beat.held
        if self._renewal_failing:
            log.info("renewing the chat claims works again")
        self._renewal_failing = False
        for key in lost:
            self._lose(key)
        if self._on_live is not None:
            self._on_live(beat.live_instances)
        for key in beat.held:
            self._start(key)  # e.g. a worker stopped by a database error: try again

    def _renewal_failed(self, exc: Exception) -> None:
        if not self._renewal_failing:
            log.warning("renewing the chat claims failed (%s)", type(exc).__name__)
        self._renewal_failing = True
        self._stop_stale_workers()

    def _lose(self, key: ChatKey) -> None:
        self._fence.forget(key)
        self._stalled.discard(key)
        worker = self._workers.get(key)
        if worker is not None:
            log.warning("chat %s:%s was claimed by another instance; stopping here", *key)
            worker.cancel()

    def _stop_stale_workers(self) -> None:
        for key, worker in list(self._workers.items()):
            if not self._fence.fresh(key):
                log.warning("claim on %s:%s not renewed in time; stopping its work here", *key)
                worker.cancel()

    async def _sweep(self) -> int:
        try:
            orphans = await self._claims.unclaimed()
        except Exception as exc:
            log.warning("looking for unclaimed chats failed (%s)", type(exc).__name__)
            return 0
        wanted = set(orphans) - self._workers.keys() - self._stalled
        taken = await self._claim_and_start(wanted, "claiming unattended chats")
        if taken and self._ticker is not None:  # after start-up: another's chats
            log.info("took over %d chat(s) with unfinished updates and no live claim", taken)
        return taken

    async def _work(self, key: ChatKey) -> None:
        _working_claim.set(key)
        try:
            await self._run_chat(key)
        except Exception as exc:  # the claim stays ours; the next renewal starts it again
            log.warning("chat %s:%s paused after a database error (%s)", *key, type(exc).__name__)
        finally:
            self._workers.pop(key, None)

    async def _run_chat(self, key: ChatKey) -> None:
        """Handle the chat's unfinished updates in order until none is left, then give
        the claim back (unless new work arrived meanwhile, or the claim was lost)."""
        attempts: Counter[tuple[int, str]] = Counter()
        while self._fence.fresh(key):
            row = await self._inbox.next_unfinished(key[0], key[1])
            if row is None:
                if await self._claims.release(key):
                    self._fence.forget(key)
                    return
                if not await self._still_ours(key):
                    return
                continue
            step = (row.update_id, row.status)
            attempts[step] += 1
            # the row did not move on: our fenced writes were refused if the claim is gone
            if attempts[step] > 1 and not await self._still_ours(key):
                return
            if attempts[step] > MAX_ATTEMPTS_PER_STEP:
                log.error("update %s does not move on; its chat waits for a restart", step[0])
                self._stalled.add(key)
                return
            if not await self._handle(row.update_id):
                self._stalled.add(key)  # keeps the claim: nobody overtakes that update
                return
        log.warning("claim on %s:%s not renewed in time; stopping its work here", *key)

    async def _still_ours(self, key: ChatKey) -> bool:
        if key in await self._claim({key}):
            return True
        self._fence.forget(key)
        return False

    async def join(self) -> None:
        while self._workers or self._claimer is not None:
            waiting = list(self._workers.values())
            if self._claimer is not None:
                waiting.append(self._claimer)
            await asyncio.wait(waiting)

    async def drain(self, grace_s: float) -> bool:
        """No new chats; let running ones finish (renewing meanwhile); then give every
        claim and the heartbeat back so the other instances go on at once."""
        self._closed = True
        if self._claimer is not None:
            self._claimer.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await self._claimer
        finished = await drain_workers(self._workers, grace_s)
        if self._ticker is not None:
            self._ticker.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await self._ticker
        try:
            await self._claims.leave()
        except Exception as exc:  # the leases run out by themselves
            log.warning("giving the chat claims back failed (%s)", type(exc).__name__)
        return finished


class Coordination:
    """What a run on PostgreSQL adds, built once by bot/telegram/app.py: this instance's claims
    and fence, the claimed scheduler for the intake, and its share of the send budget."""

    def __init__(self, claims: ClaimRepository) -> None:
        self.claims = claims
        self.fence = ClaimFence(lease_s=claims.lease_s)
        self.scheduler: ClaimedScheduler | None = None

    def scheduling(self, *, on_live: Callable[[int], None]) -> SchedulerFactory:
        def build(handle: UpdateHandler, inbox: InboxRepository) -> ClaimedScheduler:
            self.scheduler = ClaimedScheduler(
                handle, inbox=inbox, claims=self.claims, fence=self.fence, on_live=on_live
            )
            return self.scheduler

        return build


def send_budget_share(
    set_rate: Callable[[float], None], total_per_second: float
) -> Callable[[int], None]:
    """`on_live` for the scheduler: this instance sends at total ÷ live instances."""
    current: list[float] = []

    def on_live(live_instances: int) -> None:
        rate = total_per_second / max(1, live_instances)
        if current and current[0] == rate:
            return
        log.info(
            "%d instance(s) live: this one sends at most %.1f requests/s", live_instances, rate
        )
        current[:] = [rate]
        set_rate(rate)

    return on_live
