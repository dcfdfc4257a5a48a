"""The woocommerce backend against a fake REST API v3 (tests/fakes/woocommerce.py): orders
by id or by a plugin's number, phones written as free text, statuses (and the owner's map),
rejected keys, 429 with Retry-After, 5xx, time-outs, pagination, and cancel/return once
per operation id."""

from __future__ import annotations

from collections.abc import AsyncIterator

import pytest

from tests.fakes.woocommerce import KEY, SECRET, FakeWoo
from tools.shop.backend import (
    ActionDone,
    ActionRejected,
    ReturnLine,
    ShippingAddress,
    ShopSetupError,
    ShopUnavailable,
)
from tools.shop.backends.woocommerce import WooCommerceBackend
from tools.shop.rules import OrderStatus

ANNA = "+79123456789"


def backend(fake: FakeWoo, **options: object) -> WooCommerceBackend:
    secret = str(options.pop("secret", SECRET))
    timeout_s = float(options.pop("timeout_s", 5.0))  # type: ignore[arg-type]
    return WooCommerceBackend(fake.url, KEY, secret, timeout_s=timeout_s, **options)  # type: ignore[arg-type]


@pytest.fixture
async def shop(fake_woo: FakeWoo) -> AsyncIterator[WooCommerceBackend]:
    client = backend(fake_woo)
    try:
        yield client
    finally:
        await client.aclose()


async def test_an_order_by_id(shop: WooCommerceBackend, fake_woo: FakeWoo) -> None:
    tracking = [
        {"tracking_provider": "CDEK", "tracking_number": "TRK-5", "custom_tracking_link": ""}
    ]
    fake_woo.add_order(
        1234, meta_data=[{"id": 1, "key": "_wc_shipment_tracking_items", "value": tracking}]
    )
    order = await shop.get_order(shop.number_rule.normalise("#1234"))
    assert order is not None
    assert order.number == "1234"
    assert order.status == "processing"
    assert order.customer_phone == ANNA  # "+7 912 345-67-89" as the shop wrote it
    assert order.delivery is not None and order.delivery.tracking_number == "TRK-5"
    assert order.total is not None and order.total.currency == "RUB"
    assert order.public is False
    assert await shop.get_order("999") is None


@pytest.mark.parametrize(
    ("status", "expected"),
    [
        ("pending", "processing"),
        ("on-hold", "processing"),
        ("completed", "delivered"),
        ("cancelled", "cancelled"),
        ("refunded", "cancelled"),
        ("failed", "cancelled"),
        ("some-plugin-status", "processing"),
    ],
)
async def test_statuses(
    shop: WooCommerceBackend, fake_woo: FakeWoo, status: str, expected: str
) -> None:
    fake_woo.add_order(7, status=status)
    order = await shop.get_order("7")
    assert order is not None and order.status == expected


async def test_the_owners_status_map(fake_woo: FakeWoo) -> None:
    client = backend(fake_woo, status_map={"shipped": OrderStatus.IN_TRANSIT})
    fake_woo.add_order(7, status="shipped")
    try:
        order = await client.get_order("7")
        assert order is not None and order.status == "in_transit"
    finally:
        await client.aclose()


async def test_numbers_of_a_sequential_numbers_plugin(fake_woo: FakeWoo) -> None:
    """Numbers are not ids: the search's loose hits are never taken, only the exact number."""
    client = backend(fake_woo, number_is_id=False)
    fake_woo.add_order(11, number="2026-0015")
    fake_woo.add_order(12, number="2026-00150", phone="+79990001122")
    try:
        order = await client.get_order("2026-0015")
        assert order is not None and order.ref == "11"
        assert await client.get_order("2026-001") is None
    finally:
        await client.aclose()


async def test_orders_by_phone_across_pages(shop: WooCommerceBackend, fake_woo: FakeWoo) -> None:
    for order_id in range(1, 61):  # more than one page of 50
        fake_woo.add_order(
            order_id, phone="8 (912) 345-67-89" if order_id % 2 else "+7 912 345 67 89"
        )
    fake_woo.add_order(100, phone="+79990001122")
    orders = await shop.orders_for_phone(ANNA)
    assert len(orders) == 20  # the newest, bounded
    assert orders[0].number == "60"
    assert all(o.customer_phone == ANNA for o in orders)
    searches = [r for r in fake_woo.requests if r == "GET /orders"]
    assert len(searches) == 2
    assert await shop.orders_for_phone("+79000000000") == []


async def test_rejected_keys(fake_woo: FakeWoo) -> None:
    client = backend(fake_woo, secret="cs_wrong")
    try:
        with pytest.raises(ShopSetupError, match="were rejected") as error:
            await client.check()
        assert "cs_wrong" not in str(error.value)
        with pytest.raises(ShopUnavailable) as failure:
            await client.get_order("1")
        assert failure.value.kind == "auth"
    finally:
        await client.aclose()


async def test_check_with_the_right_keys(shop: WooCommerceBackend) -> None:
    await shop.check()


async def test_a_429_with_a_short_retry_after_is_waited_out(
    shop: WooCommerceBackend, fake_woo: FakeWoo
) -> None:
    fake_woo.add_order(1)
    fake_woo.fail_next("429")
    assert await shop.get_order("1") is not None
    fake_woo.fail_next("429_long")
    with pytest.raises(ShopUnavailable) as failure:
        await shop.get_order("1")
    assert failure.value.kind == "rate_limited"


async def test_a_5xx_then_the_answer(shop: WooCommerceBackend, fake_woo: FakeWoo) -> None:
    fake_woo.add_order(1)
    fake_woo.fail_next("500")
    assert await shop.get_order("1") is not None
    fake_woo.fail_next("500", "500")
    with pytest.raises(ShopUnavailable) as failure:
        await shop.get_order("1")
    assert failure.value.kind == "unavailable"


async def test_a_slow_shop_times_out(fake_woo: FakeWoo) -> None:
    client = backend(fake_woo, timeout_s=0.3)
    fake_woo.add_order(1)
    fake_woo.fail_next("slow", "slow")
    try:
        with pytest.raises(ShopUnavailable) as failure:
            await client.get_order("1")
        assert failure.value.kind == "timeout"
    finally:
        await client.aclose()


async def test_a_maintenance_page_is_malformed(shop: WooCommerceBackend, fake_woo: FakeWoo) -> None:
    fake_woo.fail_next("not_json")
    with pytest.raises(ShopUnavailable) as failure:
        await shop.get_order("1")
    assert failure.value.kind == "malformed"


async def test_cancel_once(shop: WooCommerceBackend, fake_woo: FakeWoo) -> None:
    fake_woo.add_order(5)
    order = await shop.get_order("5")
    assert order is not None
    assert await shop.cancel_order(order, "op-1") == ActionDone()
    assert fake_woo.orders[5]["status"] == "cancelled"
    assert await shop.cancel_order(order, "op-1") == ActionDone()
    assert fake_woo.requests.count("PUT /orders/5") == 1
    assert len(fake_woo.notes[5]) == 1
    assert await shop.cancel_order(order, "op-2") == ActionRejected("already_cancelled")


async def test_a_completed_order_is_not_cancelled(
    shop: WooCommerceBackend, fake_woo: FakeWoo
) -> None:
    fake_woo.add_order(5, status="completed")
    order = await shop.get_order("5")
    assert order is not None
    assert await shop.cancel_order(order, "op-1") == ActionRejected("not_cancellable")
    assert "PUT /orders/5" not in fake_woo.requests


NEW_ADDRESS = ShippingAddress(
    line1="Lenina 5",
    line2="apt. 12",
    city="Kazan",
    postal_code="420111",
    country_code="RU",
    region="Tatarstan",
)


async def test_an_address_change_once_keeping_the_recipient(
    shop: WooCommerceBackend, fake_woo: FakeWoo
) -> None:
    fake_woo.add_order(5)
    order = await shop.get_order("5")
    assert order is not None
    assert await shop.change_address(order, NEW_ADDRESS, "op-1") == ActionDone()
    assert fake_woo.orders[5]["shipping"] == {
        "first_name": "Anna",
        "last_name": "Petrova",
        "address_1": "Lenina 5",
        "address_2": "apt. 12",
        "city": "Kazan",
        "state": "Tatarstan",
        "postcode": "420111",
        "country": "RU",
    }
    [note] = fake_woo.notes[5]
    assert "Lenina" not in note["note"]  # the note names the operation, not the address
    assert await shop.change_address(order, NEW_ADDRESS, "op-1") == ActionDone()
    assert fake_woo.requests.count("PUT /orders/5") == 1
    assert len(fake_woo.notes[5]) == 1


async def test_an_address_change_is_refused_once_completed(
    shop: WooCommerceBackend, fake_woo: FakeWoo
) -> None:
    fake_woo.add_order(5, status="completed")
    order = await shop.get_order("5")
    assert order is not None
    refused = await shop.change_address(order, NEW_ADDRESS, "op-1")
    assert refused == ActionRejected("already_shipped")
    assert "PUT /orders/5" not in fake_woo.requests


async def test_a_return_request_is_one_private_note(
    shop: WooCommerceBackend, fake_woo: FakeWoo
) -> None:
    fake_woo.add_order(5, status="completed")
    order = await shop.get_order("5")
    assert order is not None
    line = ReturnLine(order.items[0], 1)
    first = await shop.request_return(order, [line], "too small", "op-r1")
    assert isinstance(first, ActionDone) and first.reference
    assert await shop.request_return(order, [line], "too small", "op-r1") == first
    assert len(fake_woo.notes[5]) == 1
    note = fake_woo.notes[5][0]
    assert note["customer_note"] is False
    assert "Mug × 1" in note["note"] and "op-r1" in note["note"]


async def test_no_credential_in_logs_or_errors(
    fake_woo: FakeWoo, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level("DEBUG")
    client = backend(fake_woo, secret="cs_wrong_secret_value", timeout_s=0.3)
    fake_woo.fail_next("500", "500")
    try:
        for _ in range(2):
            with pytest.raises(ShopUnavailable) as failure:
                await client.get_order("1")
            assert "cs_wrong_secret_value" not in str(failure.value)
            assert KEY not in str(failure.value)
    finally:
        await client.aclose()
    assert "cs_wrong_secret_value" not in caplog.text and KEY not in caplog.text
