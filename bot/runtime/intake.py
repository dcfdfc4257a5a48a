"""From "Telegram sent an update" to "the update was handled", crash-safe.

1. `accept()` records a batch of raw updates in one committed transaction. Only after
   it returns may the caller acknowledge them to Telegram (next `getUpdates` offset, or
   the webhook's 200). A failure of the store raises, so nothing is acknowledged. An
   update the store cannot take (a poison update: an id beyond SQLite's 64-bit integers,
   text that is not UTF-8) is quarantined instead — its id and a reason code, never its
   content — and acknowledged with the rest, so it cannot block intake.
2. New ids are scheduled on a per-chat queue: one worker per busy chat processes that
   chat's updates one at a time in arrival order; different chats run concurrently; a
   worker ends as soon as its queue is empty, so idle chats cost nothing. This is the
   ONE place per-chat ordering is decided: the worker awaits the whole handling of an
   update (the turn, storing the reply, delivering it, the /stats chart) before it takes
   the chat's next one, so `/new` waits for a running turn simply by being the next
   update, and nothing downstream (chat service, responder, sender) keeps a per-chat lock.
3. A worker reads the row again before acting: `pending` → process it (the dispatcher),
   `answered` → deliver the stored reply without calling the model, anything else →
   already done. That check is what makes a redelivered or replayed id a no-op.
4. Storage faults (the database locked beyond its busy timeout, a full disk) do not
   lose an update. The writes of a turn retry in place (`StorageRetry`, in the chat
   service and the responder); a storage fault that still reaches the worker makes it
   handle the same update again after a backoff (re-reading the row, so a stored answer
   is delivered, never asked for again). Either way the worker keeps its chat's later
   updates waiting behind the update, while other chats' workers go on. If the store
   stays unwritable beyond the bound, one ERROR line names the update, it stays
   `pending`, and the chat takes no more updates in this run (they stay in the inbox,
   in order, for the next start); `stalled_chats` reports how many chats that affects.
3a. Signals that cannot wait for their chat's queue: the `signals` (the features' —
   bot/telegram/features/: `Feature.on_stored`) see each new update right after it is stored,
   before it is queued. A stop press on a streamed answer (bot/telegram/features/streaming.py)
   must reach the turn that is running in the same chat — which the press would
   otherwise wait behind. A signal only sets a flag; the update itself is still handled
   in order like any other.
4a. `resume()` at start-up schedules every unfinished row left by a previous run.
5. `drain()` at shutdown refuses new updates and waits (bounded) for running work;
   whatever is cancelled stays unfinished in the inbox for the next start.

Who runs a chat's updates is the scheduler's decision (`ChatScheduler`, built by the
`scheduling` given): with one process (SQLite) `LocalScheduler` (the default) keeps the
per-chat queues in memory, as described above; with several instances on one PostgreSQL
database (bot/telegram/features/instances.py) `bot/runtime/claimed.py:ClaimedScheduler` runs a
chat only on the instance holding its claim and takes the chat's updates from the inbox
itself, in the same order. Recording, re-reading the row and handling it are the same.
"""

from __future__ import annotations

import asyncio
import logging
from collections import deque
from collections.abc import Awaitable, Callable, Sequence
from typing import Any, Protocol

from services.log_context import bound_update
from storage.database import StorageRetry, StorageUnavailable, storage_fault
from storage.inbox import (
    ANSWERED,
    DATA_ERRORS,
    FAILED,
    PENDING,
    InboxRepository,
    InboxRow,
    NewUpdate,
    unstorable_reason,
)

log = logging.getLogger(__name__)

RowHandler = Callable[[InboxRow], Awaitable[None]]
SignalHook = Callable[[dict[str, Any]], None]
ChatKey = tuple[str, int]
# handles one update to the end; False if the store stayed unwritable (left pending)
UpdateHandler = Callable[[int], Awaitable[bool]]


class IntakeClosed(Exception):
    """The bot is shutting down and takes no more updates (Telegram will redeliver)."""


def describe_update(raw: dict[str, Any]) -> NewUpdate:
    """Pick the update id, chat and user out of any update type, without validating it."""
    update_id = int(raw["update_id"])
    chat_id: int | None = None
    user_id: int | None = None
    for key, value in raw.items():
        if key == "update_id" or not isinstance(value, dict):
            continue
        chat = value.get("chat")
        if chat is None and isinstance(value.get("message"), dict):  # callback_query
            chat = value["message"].get("chat")
        sender = value.get("from") or value.get("user")
        if isinstance(chat, dict) and isinstance(chat.get("id"), int):
            chat_id = chat["id"]
        if isinstance(sender, dict) and isinstance(sender.get("id"), int):
            user_id = sender["id"]
        break
    return NewUpdate(update_id=update_id, chat_id=chat_id, user_id=user_id, payload=raw)


def chat_key(chat_id: int | None, update_id: int) -> ChatKey:
    """The unit of ordering: a chat, or the update itself when it has no chat (such
    updates need no ordering; each gets its own queue)."""
    return ("chat", chat_id) if chat_id is not None else ("update", update_id)


class ChatScheduler(Protocol):
    """Decides which worker runs a chat's updates, one at a time and in order."""

    @property
    def busy_chats(self) -> int: ...

    @property
    def stalled_chats(self) -> int: ...

    def schedule(self, key: ChatKey, update_id: int) -> None:
        """A new update of the chat was stored (called right after the commit)."""
        ...

    async def resume(self) -> int:
        """Schedule what is unfinished in the inbox at start-up; returns how many rows."""
        ...

    async def join(self) -> None: ...

    async def drain(self, grace_s: float) -> bool:
        """Wait up to `grace_s` for running work, cancel the rest; True if all finished."""
        ...


# builds the scheduler of an intake: (its update handler, its inbox) → the scheduler
SchedulerFactory = Callable[[UpdateHandler, InboxRepository], ChatScheduler]


def local_scheduling(handle: UpdateHandler, inbox: InboxRepository) -> ChatScheduler:
    """One process owns every chat (the default): `LocalScheduler`."""
    return LocalScheduler(handle, inbox)


class Intake:
    """The inbox's in-process side: record, schedule per chat, process once, drain."""

    def __init__(
        self,
        inbox: InboxRepository,
        *,
        process: RowHandler,
        deliver: RowHandler,
        storage_retry: StorageRetry | None = None,
        signals: Sequence[SignalHook] = (),
        scheduling: SchedulerFactory = local_scheduling,
    ) -> None:
        self._inbox = inbox
        self._signals = tuple(signals)
        self._process = process
        self._deliver = deliver
        self._retry = storage_retry or StorageRetry()
        self._scheduler: ChatScheduler = scheduling(self.handle, inbox)
        self._closed = False

    @property
    def busy_chats(self) -> int:
        """Chats with a worker right now; idle chats keep no state (tests, metrics)."""
        return self._scheduler.busy_chats

    @property
    def stalled_chats(self) -> int:
        """Chats whose updates wait for the next start (storage failed beyond the bound)."""
        return self._scheduler.stalled_chats

    async def accept(self, raw_updates: Sequence[dict[str, Any]]) -> list[int]:
        """Durably record the batch, then schedule the new ones; returns the new ids.

        Poison updates are quarantined (see the module docstring) and not returned.
        Raises `IntakeClosed` during shutdown and any error of the store as is: in both
        cases the caller must not acknowledge the batch. (Updates committed before the
        store failed are scheduled all the same; their redelivery is then a no-op.)
        """
        if self._closed:
            raise IntakeClosed
        described: list[NewUpdate] = []
        poison: list[tuple[int, str]] = []
        for raw in raw_updates:
            update = describe_update(raw)
            reason = unstorable_reason(update)
            if reason is None:
                described.append(update)
            else:
                poison.append((update.update_id, reason))
        fresh, store_error = await self._record(described, poison)
        scheduled: list[int] = []
        for update in described:
            if update.update_id in fresh:
                fresh.discard(update.update_id)  # the same id twice in one batch: once
                self._notify(update)
                self._scheduler.schedule(
                    chat_key(update.chat_id, update.update_id), update.update_id
                )
                scheduled.append(update.update_id)
            elif store_error is None:
                log.info("update %s was already recorded; not processed again", update.update_id)
        if store_error is not None:
            raise store_error
        if poison:
            await self._inbox.quarantine(poison)
            for update_id, reason in poison:
                log.warning(
                    "update %s quarantined (%s): acknowledged, not processed", update_id, reason
                )
        return scheduled

    def _notify(self, update: NewUpdate) -> None:
        for signal in self._signals:
            try:
                signal(update.payload)
            except Exception:  # best effort; the update is handled in order anyway
                log.exception("signal hook failed on update %s", update.update_id)

    async def _record(
        self, updates: list[NewUpdate], poison: list[tuple[int, str]]
    ) -> tuple[set[int], Exception | None]:
        """Insert the batch; if one update's data breaks it, insert them one by one.

        Updates the store rejects for their data are added to `poison`. Returns the new
        ids and the store's own error, if one stopped the inserts.
        """
        try:
            return set(await self._inbox.record(updates)), None
        except DATA_ERRORS:
            pass  # one update's data (the batch was rolled back): find which below
        fresh: set[int] = set()
        for update in updates:
            try:
                fresh.update(await self._inbox.record([update]))
            except DATA_ERRORS as exc:
                poison.append((update.update_id, f"not_storable_{type(exc).__name__}"))
            except Exception as exc:
                return fresh, exc
        return fresh, None

    async def resume(self) -> int:
        """Schedule what a previous run left unfinished; returns how many rows."""
        return await self._scheduler.resume()

    async def handle(self, update_id: int) -> bool:
        """Handle one update to the end; False if the store stayed unwritable (left pending)."""
        try:
            await self._retry.run(
                f"handling update {update_id}", lambda: self._handle_once(update_id)
            )
        except StorageUnavailable as exc:
            log.error(
                "update %s left pending for the next start: the database stayed %s for "
                "%.0f s (%s); its chat waits for a restart",
                update_id,
                exc.kind,
                exc.waited_s,
                exc.what,
            )
            return False
        return True

    async def _handle_once(self, update_id: int) -> None:
        row = await self._inbox.get(update_id)
        if row is None:
            return
        with bound_update(update_id, row.chat_id):  # ids for the JSON log lines
            await self._act(row)

    async def _act(self, row: InboxRow) -> None:
        update_id = row.update_id
        try:
            if row.status == PENDING:
                await self._process(row)
            elif row.status == ANSWERED:
                await self._deliver(row)
        except StorageUnavailable:
            raise
        except Exception as exc:
            if storage_fault(exc) is not None:
                raise  # handled again by `handle` after a backoff
            log.exception("update %s could not be handled", update_id)
            await self._retry.run(
                f"finishing update {update_id}",
                lambda: self._inbox.finish(update_id, FAILED, reason="internal_error"),
            )

    async def join(self) -> None:
        """Wait until every scheduled update has been handled (tests, benchmarks)."""
        await self._scheduler.join()

    async def drain(self, grace_s: float) -> bool:
        """Stop accepting; wait up to `grace_s` for running work. True if all finished."""
        self._closed = True
        return await self._scheduler.drain(grace_s)


class LocalScheduler:
    """One process owns every chat: a queue per busy chat in memory (see the module
    docstring, points 2, 4 and 5)."""

    def __init__(self, handle: UpdateHandler, inbox: InboxRepository) -> None:
        self._handle = handle
        self._inbox = inbox
        self._queues: dict[ChatKey, deque[int]] = {}
        self._workers: dict[ChatKey, asyncio.Task[None]] = {}
        # chats whose update could not be stored beyond the retry bound: their updates
        # wait in the inbox for the next start, so their order is kept
        self._stalled: set[ChatKey] = set()

    @property
    def busy_chats(self) -> int:
        return len(self._workers)

    @property
    def stalled_chats(self) -> int:
        return len(self._stalled)

    async def resume(self) -> int:
        rows = await self._inbox.unfinished()
        for row in rows:
            self.schedule(chat_key(row.chat_id, row.update_id), row.update_id)
        if rows:
            log.info("resuming %d unfinished update(s) from the inbox", len(rows))
        return len(rows)

    def schedule(self, key: ChatKey, update_id: int) -> None:
        if key in self._stalled:
            log.warning("update %s waits for the next start behind its chat's", update_id)
            return
        queue = self._queues.setdefault(key, deque())
        queue.append(update_id)
        if key not in self._workers:
            self._workers[key] = asyncio.create_task(
                self._work(key, queue), name=f"chat-worker-{key[0]}-{key[1]}"
            )

    async def _work(self, key: ChatKey, queue: deque[int]) -> None:
        try:
            while queue:
                if not await self._handle(queue[0]):
                    self._stalled.add(key)
                    return  # the rest of the queue stays pending in the inbox, in order
                queue.popleft()
        finally:
            # no await since the last `while` check: a new update for this chat either
            # joined this queue in time or will start a fresh worker. If the worker was
            # cancelled, the rest of its queue is still unfinished in the inbox.
            self._workers.pop(key, None)
            self._queues.pop(key, None)

    async def join(self) -> None:
        while self._workers:
            await asyncio.wait(list(self._workers.values()))

    async def drain(self, grace_s: float) -> bool:
        return await drain_workers(self._workers, grace_s)


async def drain_workers(workers: dict[ChatKey, asyncio.Task[None]], grace_s: float) -> bool:
    """Wait up to `grace_s` for the workers, cancel the rest; True if all finished.

    Whatever is cancelled stays unfinished in the inbox (the next start, or another
    instance, handles it).
    """
    deadline = asyncio.get_running_loop().time() + grace_s
    while workers:
        remaining = deadline - asyncio.get_running_loop().time()
        if remaining <= 0:
            break
        await asyncio.wait(list(workers.values()), timeout=remaining)
    unfinished = list(workers.values())
    for task in unfinished:
        task.cancel()
    if unfinished:
        await asyncio.gather(*unfinished, return_exceptions=True)
        log.warning(
            "shutdown grace period over: %d chat(s) left unfinished in the inbox",
            len(unfinished),
        )
    return not unfinished
