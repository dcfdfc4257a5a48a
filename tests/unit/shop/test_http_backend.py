"""The generic HTTP backend against the contract's reference fake (tests/fakes/shop_api.py)."""

from __future__ import annotations

import logging
import socket
from collections.abc import AsyncIterator
from datetime import date
from decimal import Decimal

import pytest
from pydantic import SecretStr

from tests.fakes.shop_api import TOKEN, FakeShopApi, order
from tools.shop.access import Visibility, may_see
from tools.shop.backend import ShopSetupError, ShopUnavailable
from tools.shop.backends.http import MAX_BODY_BYTES, HttpBackend
from tools.shop.rules import OrderStatus

OWNER = 7001
PHONE = "+79123456789"


@pytest.fixture
async def backend(fake_shop_api: FakeShopApi) -> AsyncIterator[HttpBackend]:
    client = HttpBackend(fake_shop_api.base_url, SecretStr(TOKEN), timeout_s=0.5, budget_s=2.0)
    try:
        yield client
    finally:
        await client.aclose()


async def test_an_order_with_every_part_and_its_identity_unfiltered(
    fake_shop_api: FakeShopApi, backend: HttpBackend
) -> None:
    fake_shop_api.put(
        order(
            "100234",
            "in_transit",
            phone="8 (912) 345-67-89",
            email="a@example.com",
            telegram_id=OWNER,
            items=[{"name": "Кофемашина", "quantity": 1, "sku": "ignored"}],
            delivery={"carrier": "СДЭК", "tracking_number": "TR1", "eta": "2026-12-04"},
            total={"amount": "12990.00", "currency": "RUB"},
            loyalty={"points": 5},  # unknown fields are ignored
        )
    )
    found = await backend.get_order("100234")
    assert found is not None
    assert found.status is OrderStatus.IN_TRANSIT
    assert found.customer_phone == PHONE  # the shop's spelling, normalised
    assert found.customer_telegram_id == OWNER and found.customer_email == "a@example.com"
    assert found.items[0].name == "Кофемашина" and found.items[0].quantity == 1
    assert found.delivery is not None and found.delivery.eta == date(2026, 12, 4)
    assert found.total is not None and found.total.amount == Decimal("12990.00")
    assert found.updated_at.utcoffset() is not None
    assert not found.public  # only the local backend sets it
    # the backend never decides: another customer is refused by the one rule
    seen = may_see(
        found,
        caller_user_id=OWNER + 1,
        verified_phone=None,
        private_chat=True,
        sender_is_chat=False,
    )
    assert seen is Visibility.HIDDEN


async def test_missing_is_none_and_an_order_without_identity_is_shown_to_nobody(
    fake_shop_api: FakeShopApi, backend: HttpBackend
) -> None:
    assert await backend.get_order("999999") is None
    fake_shop_api.put(order("555555", "delivered"))
    anonymous = await backend.get_order("555555")
    assert anonymous is not None and not anonymous.public
    for caller, phone in ((OWNER, PHONE), (OWNER, None)):
        seen = may_see(
            anonymous,
            caller_user_id=caller,
            verified_phone=phone,
            private_chat=True,
            sender_is_chat=False,
        )
        assert seen is Visibility.HIDDEN


async def test_the_number_is_one_path_segment_and_another_order_is_never_shown(
    fake_shop_api: FakeShopApi, backend: HttpBackend
) -> None:
    fake_shop_api.orders["AB-1"] = order("AB-2", telegram_id=OWNER)  # a broken shop
    with pytest.raises(ShopUnavailable) as caught:
        await backend.get_order("AB-1")
    assert caught.value.kind == "malformed"
    assert fake_shop_api.requests[-1][0] == "/api/orders/AB-1"


async def test_orders_for_a_phone(fake_shop_api: FakeShopApi, backend: HttpBackend) -> None:
    fake_shop_api.put(
        order("1", phone=PHONE, updated_at="2026-11-01T10:00:00Z"),
        order("2", phone=PHONE, updated_at="2026-11-20T10:00:00Z"),
        order("3", phone="+79990000000"),
    )
    mine = await backend.orders_for_phone(PHONE)
    assert [o.number for o in mine] == ["2", "1"]  # newest first
    assert fake_shop_api.requests[-1] == ("/api/orders", "phone=%2B79123456789")


@pytest.mark.parametrize(
    ("mode", "kind", "requests"),
    [
        ("401", "auth", 1),
        ("500", "unavailable", 2),  # one retry
        ("timeout", "timeout", 1),
        ("malformed", "malformed", 1),
        ("wrong_shape", "malformed", 1),
    ],
)
async def test_failures_are_unavailable_of_their_kind(
    fake_shop_api: FakeShopApi, backend: HttpBackend, mode: str, kind: str, requests: int
) -> None:
    fake_shop_api.put(order("100234", telegram_id=OWNER))
    fake_shop_api.fail(mode)
    with pytest.raises(ShopUnavailable) as caught:
        await backend.get_order("100234")
    assert caught.value.kind == kind
    assert len(fake_shop_api.requests) == requests


async def test_a_5xx_once_is_retried(fake_shop_api: FakeShopApi, backend: HttpBackend) -> None:
    fake_shop_api.put(order("100234", telegram_id=OWNER))
    fake_shop_api.fail("503", times=1)
    assert await backend.get_order("100234") is not None
    assert len(fake_shop_api.requests) == 2


async def test_429_is_waited_out_when_retry_after_fits_else_rate_limited(
    fake_shop_api: FakeShopApi, backend: HttpBackend
) -> None:
    fake_shop_api.put(order("100234", telegram_id=OWNER))
    fake_shop_api.retry_after = "0"
    fake_shop_api.fail("429", times=1)
    assert await backend.get_order("100234") is not None
    assert len(fake_shop_api.requests) == 2

    fake_shop_api.retry_after = "120"
    fake_shop_api.fail("429", times=1)
    with pytest.raises(ShopUnavailable) as caught:
        await backend.get_order("100234")
    assert caught.value.kind == "rate_limited"
    assert len(fake_shop_api.requests) == 3  # not asked again within the budget


async def test_a_body_over_the_bound_is_malformed(
    fake_shop_api: FakeShopApi, backend: HttpBackend
) -> None:
    fake_shop_api.put(order("100234", telegram_id=OWNER, note="x" * (MAX_BODY_BYTES + 10)))
    with pytest.raises(ShopUnavailable) as caught:
        await backend.get_order("100234")
    assert caught.value.kind == "malformed"


async def test_the_start_up_check(fake_shop_api: FakeShopApi) -> None:
    good = HttpBackend(fake_shop_api.base_url, SecretStr(TOKEN))
    wrong_token = HttpBackend(fake_shop_api.base_url, SecretStr("nope"))
    not_the_api = HttpBackend(f"http://127.0.0.1:{fake_shop_api.port}/elsewhere", SecretStr(TOKEN))
    with socket.socket() as free:
        free.bind(("127.0.0.1", 0))
        closed_port = free.getsockname()[1]
    unreachable = HttpBackend(f"http://127.0.0.1:{closed_port}/api", SecretStr(TOKEN))
    try:
        await good.check()
        with pytest.raises(ShopSetupError, match="SHOP_API_TOKEN was rejected") as rejected:
            await wrong_token.check()
        assert "nope" not in str(rejected.value)
        with pytest.raises(ShopSetupError, match="does not answer like the shop API"):
            await not_the_api.check()
        fake_shop_api.fail("wrong_shape")
        with pytest.raises(ShopSetupError, match="does not answer like the shop API"):
            await good.check()
        with pytest.raises(ShopUnavailable):
            await unreachable.check()
    finally:
        for client in (good, wrong_token, not_the_api, unreachable):
            await client.aclose()


async def test_the_token_is_never_logged(
    fake_shop_api: FakeShopApi, backend: HttpBackend, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.DEBUG)
    fake_shop_api.put(order("100234", phone=PHONE))
    for mode in ("500", "429", "401", "malformed", None):
        fake_shop_api.fail(mode, times=1)
        try:
            await backend.get_order("100234")
            await backend.orders_for_phone(PHONE)
        except ShopUnavailable as exc:
            assert TOKEN not in str(exc)
    assert TOKEN not in caplog.text
    assert PHONE not in caplog.text and "79123456789" not in caplog.text
