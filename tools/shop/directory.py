"""`ShopDirectory`: the one object the tools read orders through, above the backend.

It is what keeps the bot well-behaved towards the shop, whichever backend is configured:

- a short-lived cache per instance: a found order for `cache_ttl_s`, a missing one for
  `miss_ttl_s`, the product catalogue (`products`) for `products_ttl_s` (0 turns any
  off; the local backend reads its own database and caches nothing). Errors are never
  cached: the next question asks the shop again. A catalogue past its time is still
  answered from (for at most `PRODUCTS_STALE_S` more) while one request reads it again
  in the background: a big catalogue takes seconds to read, and no customer should wait
  for that once a minute;
- single flight per key: N concurrent questions about one order are one request;
- a circuit breaker: after `failures_to_open` failures in a row (unavailable, timeout,
  rate-limited, rejected credentials, malformed answers; a missing order is not a
  failure) the shop is not asked for `open_for_s`, each question gets one fast
  `ShopUnavailable`; then one question probes it (half-open) and closes it on success;
- "malformed → unavailable": an answer the backend could not read (`UNREADABLE`: a
  ValueError, TypeError, KeyError, AttributeError, IndexError or RecursionError escaping
  it) becomes `ShopUnavailable("malformed")` and counts as a failure, with one WARNING
  line and never a crash or a traceback per lookup.

Other exceptions (a storage fault of the local backend) pass through unchanged, so the
tool's storage wait retries them as before. The directory keeps the counters that
/healthz and /metrics show (`ShopStats`); it never sees a credential.
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections import Counter
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass, field
from typing import Any, Literal, TypeVar

from tools.shop.backend import UNREADABLE, ShopBackend, ShopUnavailable
from tools.shop.orders import LiveOrder, OrderNumberRule
from tools.shop.products import Product, ProductSource

log = logging.getLogger("tools.shop")

T = TypeVar("T")
CircuitState = Literal["ok", "degraded", "open"]
# cache entries kept at most (expired ones are dropped first, then the oldest)
MAX_CACHE_ENTRIES = 10_000
# how long past its time a catalogue is still answered from while it is read again
PRODUCTS_STALE_S = 300.0


@dataclass(slots=True)
class ShopStats:
    """What the directory saw, for /healthz and /metrics (no customer data)."""

    requests: Counter[str] = field(default_factory=Counter)  # outcome -> count
    cache_hits: int = 0
    latency_sum_s: float = 0.0
    latency_count: int = 0
    last_latency_s: float | None = None
    last_ok_at: float | None = None  # wall clock
    last_failure: str | None = None  # the kind of the last failure
    rejected_while_open: int = 0


class ShopDirectory:
    """Orders through the configured backend (module docstring)."""

    def __init__(
        self,
        backend: ShopBackend,
        *,
        number_rule: OrderNumberRule | None = None,
        cache_ttl_s: float = 30.0,
        miss_ttl_s: float = 10.0,
        products_ttl_s: float = 60.0,
        failures_to_open: int = 5,
        open_for_s: float = 30.0,
        clock: Callable[[], float] = time.monotonic,
        wall_clock: Callable[[], float] = time.time,
    ) -> None:
        self.backend = backend
        self.number_rule = number_rule or backend.number_rule
        self._cache_ttl_s = cache_ttl_s
        self._miss_ttl_s = miss_ttl_s
        self._products_ttl_s = products_ttl_s
        self._last_products: tuple[float, tuple[Product, ...]] | None = None  # (read at, it)
        self._refresh: asyncio.Future[tuple[Product, ...]] | None = None
        self._failures_to_open = failures_to_open
        self._open_for_s = open_for_s
        self._clock = clock
        self._wall_clock = wall_clock
        self._cache: dict[tuple[str, str], tuple[float, object]] = {}
        self._inflight: dict[tuple[str, str], asyncio.Future[object]] = {}
        self._failures = 0
        self._open_until: float | None = None
        self._probing = False
        self.stats = ShopStats()

    @property
    def backend_name(self) -> str:
        return self.backend.name

    @property
    def reads_bot_storage(self) -> bool:
        """The backend reads the bot's own database (local): its faults are storage
        faults, which the tools wait out (`StorageWait`)."""
        return self.backend.name == "local"

    @property
    def state(self) -> CircuitState:
        """ok; degraded (the last request failed, the circuit is still closed); open."""
        if self._open_until is not None:
            return "open"
        return "degraded" if self._failures else "ok"

    async def get_order(self, number: str, *, fresh: bool = False) -> LiveOrder | None:
        """The order with this (already normalised) number; raises `ShopUnavailable`.
        `fresh`: not from the cache (an action's re-check on the customer's ✅)."""
        if fresh:
            self.forget_order(number)
        found = await self._read(("order", number), lambda: self.backend.get_order(number))
        assert found is None or isinstance(found, LiveOrder)
        return found

    def forget_order(self, number: str) -> None:
        """Drop the cached copy of an order an action just changed, so the next
        question reads the new state."""
        self._cache.pop(("order", number), None)

    async def orders_for_phone(self, phone: str) -> Sequence[LiveOrder]:
        """The orders of this E.164 phone, newest first; raises `ShopUnavailable`."""
        found = await self._read(
            ("phone", phone), lambda: _as_list(self.backend.orders_for_phone(phone))
        )
        assert isinstance(found, list)
        return found

    async def products(self) -> Sequence[Product]:
        """The shop's catalogue (one snapshot, the same object while cached); raises
        `ShopUnavailable`, and an empty one when the backend reads no catalogue."""
        source = self.backend
        if not isinstance(source, ProductSource):
            return ()
        key = ("products", "")
        last = self._last_products
        now = self._clock()
        cached = self._cache.get(key)
        fresh = cached is not None and cached[0] > now
        if last is not None and self._products_ttl_s > 0 and not fresh:
            if now - last[0] < self._products_ttl_s + PRODUCTS_STALE_S:
                if self._refresh is None or self._refresh.done():  # read again behind it
                    self._refresh = asyncio.ensure_future(self._read_products(source))
                    self._refresh.add_done_callback(_retrieved)
                return last[1]
        return await self._read_products(source)

    async def _read_products(self, source: ProductSource) -> tuple[Product, ...]:
        found = await self._read(
            ("products", ""), lambda: _as_tuple(source.catalogue()), ttl=self._products_ttl_s
        )
        assert isinstance(found, tuple)
        if self._last_products is None or self._last_products[1] is not found:
            self._last_products = (self._clock(), found)
        return found

    async def check(self) -> None:
        await self.backend.check()

    async def aclose(self) -> None:
        await self.backend.aclose()

    # -- internals ----------------------------------------------------------------

    async def _read(
        self,
        key: tuple[str, str],
        fetch: Callable[[], Awaitable[object]],
        ttl: float | None = None,
    ) -> object:
        now = self._clock()
        cached = self._cache.get(key)
        if cached is not None:
            if cached[0] > now:
                self.stats.cache_hits += 1
                return cached[1]
            del self._cache[key]
        flight = self._inflight.get(key)
        if flight is None:
            flight = asyncio.ensure_future(self._fetch(key, fetch, ttl))
            self._inflight[key] = flight
            flight.add_done_callback(lambda done: self._landed(key, done))
        # shielded: a caller that gives up (its turn's deadline) leaves the request to the
        # others waiting on it
        return await asyncio.shield(flight)

    def _landed(self, key: tuple[str, str], done: asyncio.Future[object]) -> None:
        if self._inflight.get(key) is done:
            del self._inflight[key]
        if not done.cancelled():
            done.exception()  # retrieved: every waiter may have given up

    async def _fetch(
        self, key: tuple[str, str], fetch: Callable[[], Awaitable[object]], ttl: float | None
    ) -> object:
        self._admit()
        started = self._clock()
        try:
            value = await fetch()
        except ShopUnavailable as exc:
            self._failed(exc.kind, started)
            raise
        except UNREADABLE as exc:
            self._failed("malformed", started)
            log.warning(
                "shop %s: an answer could not be read (%s)", self.backend.name, type(exc).__name__
            )
            log.debug("shop %s: the unreadable answer", self.backend.name, exc_info=True)
            raise ShopUnavailable("malformed", type(exc).__name__) from None
        except BaseException:
            self._probing = False
            raise
        self._succeeded(started, found=value is not None)
        if ttl is None:
            ttl = self._cache_ttl_s if value is not None else self._miss_ttl_s
        if ttl > 0:
            self._remember(key, value, ttl)
        return value

    def _admit(self) -> None:
        """Raise a fast `ShopUnavailable` while the circuit is open (one probe after)."""
        if self._open_until is None:
            return
        if self._clock() < self._open_until or self._probing:
            self.stats.rejected_while_open += 1
            raise ShopUnavailable("unavailable", "circuit open")
        self._probing = True  # half-open: this request is the probe

    def _failed(self, kind: str, started: float) -> None:
        self._measure(started)
        self.stats.requests[kind] += 1
        self.stats.last_failure = kind
        self._failures += 1
        self._probing = False
        if self._failures >= self._failures_to_open:
            if self._open_until is None:
                log.warning(
                    "shop %s: %d failures in a row (last: %s); not asking it for %.0f s",
                    self.backend.name,
                    self._failures,
                    kind,
                    self._open_for_s,
                )
            self._open_until = self._clock() + self._open_for_s

    def _succeeded(self, started: float, *, found: bool) -> None:
        self._measure(started)
        self.stats.requests["ok" if found else "not_found"] += 1
        self.stats.last_ok_at = self._wall_clock()
        if self._open_until is not None:
            log.info("shop %s answers again", self.backend.name)
        self._failures = 0
        self._open_until = None
        self._probing = False

    def _measure(self, started: float) -> None:
        elapsed = max(0.0, self._clock() - started)
        self.stats.last_latency_s = elapsed
        self.stats.latency_sum_s += elapsed
        self.stats.latency_count += 1

    def _remember(self, key: tuple[str, str], value: object, ttl: float) -> None:
        now = self._clock()
        if len(self._cache) >= MAX_CACHE_ENTRIES:
            for stale in [k for k, (expires, _) in self._cache.items() if expires <= now]:
                del self._cache[stale]
            while len(self._cache) >= MAX_CACHE_ENTRIES:
                del self._cache[next(iter(self._cache))]
        self._cache[key] = (now + ttl, value)


def _retrieved(done: asyncio.Future[Any]) -> None:
    if not done.cancelled():
        done.exception()  # a background read's failure is counted and logged already


async def _as_tuple(products: Awaitable[Sequence[Product]]) -> tuple[Product, ...]:
    found = await products
    return found if isinstance(found, tuple) else tuple(found)


async def _as_list(orders: Awaitable[Sequence[LiveOrder]]) -> list[LiveOrder]:
    return list(await orders)


def local_directory(
    backend: ShopBackend, number_rule: OrderNumberRule | None = None
) -> ShopDirectory:
    """A directory over a backend that reads the bot's own database: no cache (an import
    is seen at once); a storage fault passes through to the storage wait."""
    return ShopDirectory(
        backend, number_rule=number_rule, cache_ttl_s=0, miss_ttl_s=0, products_ttl_s=0
    )
