"""ShopDirectory: the cache, single flight, the circuit breaker and "malformed →
unavailable", over a scripted in-memory backend (counting what reaches the shop)."""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Sequence
from datetime import UTC, datetime

import pytest

from tools.shop.backend import ShopUnavailable
from tools.shop.directory import ShopDirectory
from tools.shop.orders import SHOP_WRITTEN, LiveOrder
from tools.shop.rules import OrderStatus

NOW = datetime(2026, 12, 1, tzinfo=UTC)


class Clock:
    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now


class ScriptedShop:
    """A backend whose answers a test sets; `requests` counts what reached it."""

    name = "scripted"
    number_rule = SHOP_WRITTEN
    reads_live = ("orders",)

    def __init__(self) -> None:
        self.orders: dict[str, LiveOrder] = {}
        self.requests = 0
        self.failure: Exception | None = None
        self.gate: asyncio.Event | None = None
        self.arrived = asyncio.Event()

    async def get_order(self, number: str) -> LiveOrder | None:
        self.requests += 1
        self.arrived.set()
        if self.gate is not None:
            await self.gate.wait()
        if self.failure is not None:
            raise self.failure
        return self.orders.get(number)

    async def orders_for_phone(self, phone: str) -> Sequence[LiveOrder]:
        self.requests += 1
        return [o for o in self.orders.values() if o.customer_phone == phone]

    async def check(self) -> None:
        pass

    async def aclose(self) -> None:
        pass


def live(number: str, status: OrderStatus = OrderStatus.PROCESSING) -> LiveOrder:
    return LiveOrder(number=number, status=status, updated_at=NOW, customer_telegram_id=1)


@pytest.fixture
def clock() -> Clock:
    return Clock()


@pytest.fixture
def shop() -> ScriptedShop:
    return ScriptedShop()


def directory(shop: ScriptedShop, clock: Clock, **options: float) -> ShopDirectory:
    return ShopDirectory(shop, clock=clock, wall_clock=clock, **options)  # type: ignore[arg-type]


async def test_found_orders_are_reused_for_the_ttl_then_read_again(
    shop: ScriptedShop, clock: Clock
) -> None:
    shop.orders["1001"] = live("1001")
    orders = directory(shop, clock, cache_ttl_s=30, miss_ttl_s=10)
    assert (await orders.get_order("1001")) == live("1001")
    shop.orders["1001"] = live("1001", OrderStatus.IN_TRANSIT)
    clock.now += 29
    assert (await orders.get_order("1001")).status is OrderStatus.PROCESSING  # type: ignore[union-attr]
    assert shop.requests == 1
    clock.now += 2
    assert (await orders.get_order("1001")).status is OrderStatus.IN_TRANSIT  # type: ignore[union-attr]
    assert shop.requests == 2
    assert orders.stats.cache_hits == 1


async def test_a_missing_order_is_remembered_for_the_shorter_ttl(
    shop: ScriptedShop, clock: Clock
) -> None:
    orders = directory(shop, clock, cache_ttl_s=30, miss_ttl_s=10)
    assert await orders.get_order("404") is None
    assert await orders.get_order("404") is None
    assert shop.requests == 1
    clock.now += 11
    shop.orders["404"] = live("404")
    assert await orders.get_order("404") is not None
    assert shop.requests == 2


async def test_concurrent_questions_about_one_order_are_one_request(
    shop: ScriptedShop, clock: Clock
) -> None:
    shop.orders["1001"] = live("1001")
    shop.gate = asyncio.Event()
    orders = directory(shop, clock)
    waiting = [asyncio.create_task(orders.get_order("1001")) for _ in range(20)]
    await shop.arrived.wait()  # every question was asked before the request ran
    shop.gate.set()
    assert all(order == live("1001") for order in await asyncio.gather(*waiting))
    assert shop.requests == 1


async def test_a_caller_that_gives_up_leaves_the_request_to_the_others(
    shop: ScriptedShop, clock: Clock
) -> None:
    shop.orders["1001"] = live("1001")
    shop.gate = asyncio.Event()
    orders = directory(shop, clock)
    first = asyncio.create_task(orders.get_order("1001"))
    second = asyncio.create_task(orders.get_order("1001"))
    await shop.arrived.wait()
    first.cancel()
    shop.gate.set()
    assert await second == live("1001")
    assert shop.requests == 1


async def test_errors_are_never_cached(shop: ScriptedShop, clock: Clock) -> None:
    shop.orders["1001"] = live("1001")
    shop.failure = ShopUnavailable("timeout")
    orders = directory(shop, clock)
    with pytest.raises(ShopUnavailable):
        await orders.get_order("1001")
    assert orders.state == "degraded"
    shop.failure = None
    assert await orders.get_order("1001") == live("1001")
    assert shop.requests == 2
    assert orders.state == "ok"


@pytest.mark.parametrize(
    "failure",
    [
        ValueError("unexpected shape"),
        AttributeError("'list' object has no attribute 'get'"),
        IndexError("list index out of range"),
        RecursionError("maximum recursion depth exceeded"),
        KeyError("id"),
        TypeError("string indices must be integers"),
    ],
    ids=lambda e: type(e).__name__,
)
async def test_an_answer_the_backend_cannot_read_is_unavailable_not_a_crash(
    shop: ScriptedShop, clock: Clock, failure: Exception, caplog: pytest.LogCaptureFixture
) -> None:
    """Whatever a backend's reading of a broken answer raises: "malformed", one WARNING
    line without a traceback, and the breaker counts it."""
    shop.failure = failure
    orders = directory(shop, clock, failures_to_open=2)
    for number in ("1001", "1002"):
        with pytest.raises(ShopUnavailable) as caught:
            await orders.get_order(number)
        assert caught.value.kind == "malformed"
    assert orders.stats.requests["malformed"] == 2
    assert orders.state == "open"
    warnings = [r for r in caplog.records if r.levelno >= logging.WARNING]
    assert not [r for r in warnings if r.exc_info]
    assert sum("could not be read" in r.getMessage() for r in warnings) == 2


async def test_the_breaker_opens_after_failures_in_a_row_and_probes_once_later(
    shop: ScriptedShop, clock: Clock
) -> None:
    shop.failure = ShopUnavailable("unavailable", "HTTP 503")
    orders = directory(shop, clock, failures_to_open=3, open_for_s=30)
    for number in ("1", "2", "3"):
        with pytest.raises(ShopUnavailable):
            await orders.get_order(number)
    assert orders.state == "open"
    asked = shop.requests
    for number in ("4", "5", "6", "7"):
        with pytest.raises(ShopUnavailable):
            await orders.get_order(number)
    assert shop.requests == asked  # open: no request reaches the shop
    assert orders.stats.rejected_while_open == 4

    clock.now += 31
    with pytest.raises(ShopUnavailable):  # the half-open probe fails: open again
        await orders.get_order("8")
    assert shop.requests == asked + 1
    assert orders.state == "open"

    clock.now += 31
    shop.failure = None
    shop.orders["9"] = live("9")
    assert await orders.get_order("9") == live("9")
    assert orders.state == "ok"
    assert orders.stats.last_ok_at == clock.now


async def test_a_missing_order_is_not_a_failure(shop: ScriptedShop, clock: Clock) -> None:
    orders = directory(shop, clock, failures_to_open=2, miss_ttl_s=0)
    for _ in range(5):
        assert await orders.get_order("404") is None
    assert orders.state == "ok"
    assert shop.requests == 5
