"""The shopify backend against a fake Admin GraphQL API (2026-07 shapes, tests/fakes/shopify.py):
exact names through a fuzzy search, phones, statuses, a rejected token, THROTTLED (200 and
429), 5xx, time-outs, non-JSON, and cancel/return/address change once per operation id."""

from __future__ import annotations

from collections.abc import AsyncIterator

import pytest

from tests.fakes.shopify import CLIENT_ID, CLIENT_SECRET, TOKEN, FakeShopify
from tools.shop.backend import (
    ActionDone,
    ActionRejected,
    ReturnLine,
    ShippingAddress,
    ShopSetupError,
    ShopUnavailable,
)
from tools.shop.backends.shopify import ShopifyBackend
from tools.shop.backends.shopify_token import ClientCredentials

ANNA = "+79123456789"


def backend(fake: FakeShopify, token: str = TOKEN, timeout_s: float = 5.0) -> ShopifyBackend:
    return ShopifyBackend("test.myshopify.com", token, base_url=fake.url, timeout_s=timeout_s)


@pytest.fixture
async def shop(fake_shopify: FakeShopify) -> AsyncIterator[ShopifyBackend]:
    client = backend(fake_shopify)
    try:
        yield client
    finally:
        await client.aclose()


async def test_an_order_by_its_exact_name(shop: ShopifyBackend, fake_shopify: FakeShopify) -> None:
    fake_shopify.add_order(1001, fulfillment="IN_TRANSIT", tracking="TRK-9")
    fake_shopify.add_order(1011, phone="+79990001122")
    fake_shopify.add_order(10010)
    order = await shop.get_order(shop.number_rule.normalise("#1001"))
    assert order is not None
    assert order.number == "1001"
    assert order.status == "in_transit"
    assert order.customer_phone == ANNA
    assert order.delivery is not None and order.delivery.tracking_number == "TRK-9"
    assert order.delivery.carrier == "CDEK"
    assert order.total is not None and str(order.total.amount) == "1990.00"
    assert [(i.name, i.quantity) for i in order.items] == [("Mug", 2)]
    assert order.public is False
    other = await shop.get_order("1011")
    assert other is not None and other.customer_phone == "+79990001122"  # unfiltered
    assert await shop.get_order("1002") is None  # the fuzzy hits are never taken


@pytest.mark.parametrize(
    ("fulfillment", "cancelled", "status"),
    [
        (None, False, "processing"),
        ("CONFIRMED", False, "in_transit"),
        ("OUT_FOR_DELIVERY", False, "in_transit"),
        ("READY_FOR_PICKUP", False, "ready_for_pickup"),
        ("DELIVERED", False, "delivered"),
        ("SOMETHING_NEW", False, "processing"),
        (None, True, "cancelled"),
    ],
)
async def test_statuses(
    shop: ShopifyBackend,
    fake_shopify: FakeShopify,
    fulfillment: str | None,
    cancelled: bool,
    status: str,
) -> None:
    fake_shopify.add_order(2001, fulfillment=fulfillment, cancelled=cancelled)
    order = await shop.get_order("2001")
    assert order is not None and order.status == status


async def test_orders_by_phone(shop: ShopifyBackend, fake_shopify: FakeShopify) -> None:
    fake_shopify.add_order(1001)
    fake_shopify.add_order(1002, fulfillment="DELIVERED")
    fake_shopify.add_order(1003, phone="8 (912) 345-67-89")  # the shop's own spelling
    fake_shopify.add_order(1004, phone="+79990001122")
    orders = await shop.orders_for_phone(ANNA)
    assert [o.number for o in orders] == ["1003", "1002", "1001"]  # newest first
    assert await shop.orders_for_phone("+79000000000") == []


async def test_a_rejected_token(fake_shopify: FakeShopify) -> None:
    client = backend(fake_shopify, token="shpat_wrong")
    try:
        with pytest.raises(ShopSetupError, match="SHOP_API_TOKEN was rejected") as error:
            await client.check()
        assert "shpat_wrong" not in str(error.value)
        with pytest.raises(ShopUnavailable) as failure:
            await client.get_order("1001")
        assert failure.value.kind == "auth"
    finally:
        await client.aclose()


async def test_check_with_the_right_token(shop: ShopifyBackend) -> None:
    await shop.check()


@pytest.mark.parametrize("kind", ["throttled200", "throttled429"])
async def test_a_short_throttle_is_waited_out(
    shop: ShopifyBackend,
    fake_shopify: FakeShopify,
    kind: str,
) -> None:
    fake_shopify.add_order(1001)
    fake_shopify.fail_next(kind)
    order = await shop.get_order("1001")
    assert order is not None
    assert fake_shopify.requests == ["OrdersByName", "OrdersByName"]


async def test_a_long_throttle_is_rate_limited(
    shop: ShopifyBackend, fake_shopify: FakeShopify
) -> None:
    fake_shopify.add_order(1001)
    fake_shopify.fail_next("throttled_long")
    with pytest.raises(ShopUnavailable) as failure:
        await shop.get_order("1001")
    assert failure.value.kind == "rate_limited"
    assert len(fake_shopify.requests) == 1


async def test_a_5xx_is_tried_once_more(shop: ShopifyBackend, fake_shopify: FakeShopify) -> None:
    fake_shopify.add_order(1001)
    fake_shopify.fail_next("500")
    assert await shop.get_order("1001") is not None
    fake_shopify.fail_next("500", "500")
    with pytest.raises(ShopUnavailable) as failure:
        await shop.get_order("1001")
    assert failure.value.kind == "unavailable"


async def test_a_slow_shop_times_out(fake_shopify: FakeShopify) -> None:
    client = backend(fake_shopify, timeout_s=0.3)
    fake_shopify.add_order(1001)
    fake_shopify.fail_next("slow", "slow")
    try:
        with pytest.raises(ShopUnavailable) as failure:
            await client.get_order("1001")
        assert failure.value.kind == "timeout"
    finally:
        await client.aclose()


async def test_not_json_is_malformed(shop: ShopifyBackend, fake_shopify: FakeShopify) -> None:
    fake_shopify.fail_next("not_json")
    with pytest.raises(ShopUnavailable) as failure:
        await shop.get_order("1001")
    assert failure.value.kind == "malformed"


async def test_cancel_once(shop: ShopifyBackend, fake_shopify: FakeShopify) -> None:
    fake_shopify.add_order(1001)
    order = await shop.get_order("1001")
    assert order is not None
    assert await shop.cancel_order(order, "op-1") == ActionDone()
    assert fake_shopify.by_id(str(order.ref))["staffNote"] == "support-bot op op-1"  # type: ignore[index]
    assert await shop.cancel_order(order, "op-1") == ActionDone()
    assert fake_shopify.requests.count("Cancel") == 1


async def test_a_shipped_order_is_not_cancelled(
    shop: ShopifyBackend, fake_shopify: FakeShopify
) -> None:
    fake_shopify.add_order(1001, fulfillment="IN_TRANSIT")
    order = await shop.get_order("1001")
    assert order is not None
    assert await shop.cancel_order(order, "op-1") == ActionRejected("not_cancellable")
    assert "Cancel" not in fake_shopify.requests


NEW_ADDRESS = ShippingAddress(
    line1="Lenina 5", line2="apt. 12", city="Kazan", postal_code="420111", country_code="RU"
)


async def test_an_address_change_once_keeping_the_recipient(
    shop: ShopifyBackend, fake_shopify: FakeShopify
) -> None:
    fake_shopify.add_order(1001)
    order = await shop.get_order("1001")
    assert order is not None
    assert await shop.change_address(order, NEW_ADDRESS, "op-1") == ActionDone()
    stored = fake_shopify.by_id(str(order.ref))
    assert stored is not None
    assert stored["shippingAddress"] == {
        "firstName": "Anna",
        "lastName": "Petrova",
        "address1": "Lenina 5",
        "address2": "apt. 12",
        "city": "Kazan",
        "zip": "420111",
        "countryCode": "RU",
    }
    assert await shop.change_address(order, NEW_ADDRESS, "op-1") == ActionDone()
    assert fake_shopify.address_updates == 1  # the repeat found its mark


async def test_an_address_change_is_refused_once_shipped(
    shop: ShopifyBackend, fake_shopify: FakeShopify
) -> None:
    fake_shopify.add_order(1001, fulfillment="IN_TRANSIT")
    order = await shop.get_order("1001")
    assert order is not None
    assert await shop.change_address(order, NEW_ADDRESS, "op-1") == ActionRejected(
        "already_shipped"
    )
    assert "AddressUpdate" not in fake_shopify.requests


async def test_a_return_is_requested_once(shop: ShopifyBackend, fake_shopify: FakeShopify) -> None:
    fake_shopify.add_order(1001, fulfillment="DELIVERED")
    order = await shop.get_order("1001")
    assert order is not None
    line = ReturnLine(order.items[0], 1)
    first = await shop.request_return(order, [line], "too small", "op-r1")
    assert isinstance(first, ActionDone) and first.reference
    assert await shop.request_return(order, [line], "too small", "op-r1") == first
    assert fake_shopify.requests.count("ReturnRequest") == 1


async def test_an_unfulfilled_order_has_nothing_to_return(
    shop: ShopifyBackend,
    fake_shopify: FakeShopify,
) -> None:
    fake_shopify.add_order(1001)
    order = await shop.get_order("1001")
    assert order is not None
    result = await shop.request_return(order, [ReturnLine(order.items[0], 1)], "x", "op-r2")
    assert result == ActionRejected("not_returnable")


async def test_no_token_in_logs_or_errors(
    fake_shopify: FakeShopify, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level("DEBUG")
    client = backend(fake_shopify, token="shpat_secret_value", timeout_s=0.3)
    fake_shopify.fail_next("500", "500")
    try:
        for _ in range(2):
            with pytest.raises(ShopUnavailable) as failure:
                await client.get_order("1001")
            assert "shpat_secret_value" not in str(failure.value)
    finally:
        await client.aclose()
    assert "shpat_secret_value" not in caplog.text


# --- a Dev Dashboard app: short-lived tokens from the client credentials grant -----------


def dev_dashboard_app(
    fake: FakeShopify, secret: str = CLIENT_SECRET, clock: list[float] | None = None
) -> ShopifyBackend:
    client = ShopifyBackend(
        "test.myshopify.com",
        client_credentials=(CLIENT_ID, secret),
        base_url=fake.url,
        timeout_s=5.0,
    )
    if clock is not None:  # the token source's own clock, moved by the test
        tokens = client._tokens
        assert isinstance(tokens, ClientCredentials)
        tokens._clock = lambda: clock[0]
    return client


async def test_a_dev_dashboard_app_reads_with_a_token_it_asked_for(
    fake_shopify: FakeShopify,
) -> None:
    fake_shopify.add_order(1001, fulfillment="IN_TRANSIT")
    client = dev_dashboard_app(fake_shopify)
    try:
        await client.check()
        order = await client.get_order("1001")
        assert order is not None and order.status == "in_transit"
        assert await client.get_order("1001") is not None
    finally:
        await client.aclose()
    # one token for all three requests: it lasts 24 hours
    assert fake_shopify.requests == ["access_token", "shop", "OrdersByName", "OrdersByName"]


async def test_the_token_is_renewed_before_it_runs_out(fake_shopify: FakeShopify) -> None:
    fake_shopify.add_order(1001)
    clock = [1000.0]
    client = dev_dashboard_app(fake_shopify, clock=clock)
    try:
        assert await client.get_order("1001") is not None
        clock[0] += 86399 - 301  # within the last five minutes of its life: a new one
        assert await client.get_order("1001") is not None
        clock[0] += 60
        assert await client.get_order("1001") is not None
    finally:
        await client.aclose()
    assert fake_shopify.issued == ["shpat_issued_1", "shpat_issued_2"]
    assert fake_shopify.requests.count("access_token") == 2


async def test_a_token_shopify_refuses_is_replaced_once(fake_shopify: FakeShopify) -> None:
    """Revoked (or the secret rotated) before its time: one new token, the question
    answered; a store that refuses the new one too is `auth`, not a loop."""
    fake_shopify.add_order(1001)
    client = dev_dashboard_app(fake_shopify)
    try:
        assert await client.get_order("1001") is not None
        fake_shopify.expire_tokens()
        assert await client.get_order("1001") is not None
        assert len(fake_shopify.issued) == 2
        fake_shopify.fail_next("401", "401")
        with pytest.raises(ShopUnavailable) as refused:
            await client.get_order("1001")
        assert refused.value.kind == "auth"
    finally:
        await client.aclose()


async def test_a_wrong_client_secret_stops_the_start_naming_the_settings(
    fake_shopify: FakeShopify,
) -> None:
    client = dev_dashboard_app(fake_shopify, secret="shpss_wrong")
    try:
        with pytest.raises(ShopSetupError) as error:
            await client.check()
        message = str(error.value)
        assert message.startswith("SHOPIFY_CLIENT_ID with SHOPIFY_CLIENT_SECRET was rejected")
        assert "shpss_wrong" not in message and CLIENT_SECRET not in message
        with pytest.raises(ShopUnavailable) as failure:
            await client.get_order("1001")
        assert failure.value.kind == "auth"
    finally:
        await client.aclose()
    assert fake_shopify.issued == []


async def test_a_cancel_after_the_token_ran_out_is_carried_out_once(
    fake_shopify: FakeShopify,
) -> None:
    """A refused request did nothing: it goes again with a new token, and the order is
    cancelled exactly once."""
    fake_shopify.add_order(1001)
    client = dev_dashboard_app(fake_shopify)
    try:
        order = await client.get_order("1001")
        assert order is not None
        fake_shopify.expire_tokens()
        result = await client.cancel_order(order, "op-1")
        assert isinstance(result, ActionDone)
    finally:
        await client.aclose()
    assert fake_shopify.requests.count("Cancel") == 1
    assert len(fake_shopify.issued) == 2
    assert fake_shopify.orders[0]["cancelledAt"] is not None
