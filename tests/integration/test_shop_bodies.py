"""A shop's answer is read to its end, within the byte limit, by every backend's reader.

On a real network an answer arrives in several reads; the bot's client must not take the
first of them for the whole body. Each test serves real answers over loopback: large ones
(up to the 1 MiB limit) and small ones written in parts with pauses between them
(tests/fakes/trickle.py), through the real `aiohttp` client of each backend.
"""

from __future__ import annotations

import json
from collections.abc import AsyncIterator

import pytest
from pydantic import SecretStr

from tests.fakes.shop_api import TOKEN, FakeShopApi, order
from tests.fakes.shopify import TOKEN as SHOPIFY_TOKEN
from tests.fakes.shopify import FakeShopify
from tests.fakes.trickle import trickling
from tests.fakes.woocommerce import KEY, SECRET, FakeWoo
from tools.shop.backend import ActionDone, ShopUnavailable
from tools.shop.backends.http import MAX_BODY_BYTES, HttpBackend
from tools.shop.backends.shopify import ShopifyBackend
from tools.shop.backends.woocommerce import WooCommerceBackend
from tools.shop.directory import ShopDirectory

OWNER = 7001
PHONE = "+79123456789"


def big_order(number: str, size: int) -> dict[str, object]:
    """An order of 200 items (the contract's largest) padded to about `size` bytes."""
    items = [{"name": f"Item {i} " + "ы" * 120, "quantity": 1} for i in range(200)]
    body = order(number, telegram_id=OWNER, phone=PHONE, items=items, note="")
    # an unknown field (ignored, but read) brings the answer as the fake writes it to `size`
    body["note"] = "x" * max(0, size - len(json.dumps(body)))
    return body


def http_backend(url: str) -> HttpBackend:
    return HttpBackend(url, SecretStr(TOKEN), timeout_s=3.0, budget_s=4.0)


@pytest.fixture
async def http_shop(fake_shop_api: FakeShopApi) -> AsyncIterator[HttpBackend]:
    backend = http_backend(fake_shop_api.base_url)
    try:
        yield backend
    finally:
        await backend.aclose()


@pytest.mark.parametrize("size", [332_000, 600_000, MAX_BODY_BYTES - 2_000])
async def test_http_a_large_answer_is_read_whole(
    fake_shop_api: FakeShopApi, http_shop: HttpBackend, size: int
) -> None:
    fake_shop_api.put(big_order("100234", size))
    found = await http_shop.get_order("100234")
    assert found is not None and len(found.items) == 200
    # a list of two such orders within the same limit
    fake_shop_api.put(big_order("100234", size // 2 - 100), big_order("100235", size // 2 - 100))
    mine = await http_shop.orders_for_phone(PHONE)
    assert {o.number for o in mine} == {"100234", "100235"}


@pytest.mark.parametrize("chunked", [False, True])
async def test_http_a_small_answer_written_in_parts_is_read_whole(
    fake_shop_api: FakeShopApi, chunked: bool
) -> None:
    fake_shop_api.put(order("100234", "in_transit", telegram_id=OWNER, phone=PHONE))
    async with trickling(fake_shop_api.base_url, parts=4, pause_s=0.15, chunked=chunked) as proxy:
        backend = http_backend(proxy.url)
        try:
            found = await backend.get_order("100234")
            mine = await backend.orders_for_phone(PHONE)
        finally:
            await backend.aclose()
    assert found is not None and found.status == "in_transit"
    assert [o.number for o in mine] == ["100234"]
    assert proxy.answers == 2


async def test_http_a_cancel_answered_in_parts_is_done(fake_shop_api: FakeShopApi) -> None:
    fake_shop_api.put(order("100234", telegram_id=OWNER, phone=PHONE))
    async with trickling(fake_shop_api.base_url, parts=2, pause_s=0.2) as proxy:
        backend = http_backend(proxy.url)
        try:
            found = await backend.get_order("100234")
            assert found is not None
            outcome = await backend.cancel_order(found, "op-1")
        finally:
            await backend.aclose()
    assert isinstance(outcome, ActionDone)
    assert fake_shop_api.cancellations == ["100234"]


@pytest.mark.parametrize("chunked", [False, True])
async def test_http_an_answer_over_the_limit_is_too_large_not_broken_json(
    fake_shop_api: FakeShopApi, chunked: bool
) -> None:
    fake_shop_api.put(order("100234", telegram_id=OWNER))
    async with trickling(fake_shop_api.base_url, parts=5, pause_s=0.05, chunked=chunked) as proxy:
        proxy.body = b'{"number": "100234", "pad": "' + b"x" * MAX_BODY_BYTES + b'"}'
        backend = http_backend(proxy.url)
        try:
            with pytest.raises(ShopUnavailable) as caught:
                await backend.get_order("100234")
        finally:
            await backend.aclose()
    assert caught.value.kind == "malformed"
    assert "larger than" in caught.value.detail


async def test_deep_nesting_is_malformed_and_feeds_the_breaker(
    fake_shop_api: FakeShopApi, caplog: pytest.LogCaptureFixture
) -> None:
    """A RecursionError from the JSON decoder is "malformed" like any broken answer: one
    failure per lookup, no traceback, counted by the breaker."""
    fake_shop_api.put(order("100234", telegram_id=OWNER))
    async with trickling(fake_shop_api.base_url, parts=1) as proxy:
        proxy.body = b"[" * 200_000 + b"]" * 200_000
        backend = http_backend(proxy.url)
        directory = ShopDirectory(backend, failures_to_open=2, open_for_s=60)
        try:
            for _ in range(2):
                with pytest.raises(ShopUnavailable) as caught:
                    await directory.get_order("100234")
                assert caught.value.kind == "malformed"
            with pytest.raises(ShopUnavailable) as caught:
                await directory.get_order("100234")
        finally:
            await backend.aclose()
    assert directory.state == "open"
    assert caught.value.detail == "circuit open"
    assert proxy.answers == 2
    assert not [r for r in caplog.records if r.exc_info]


async def test_shopify_answers_written_in_parts_and_large(fake_shopify: FakeShopify) -> None:
    fake_shopify.add_order(1001, fulfillment="IN_TRANSIT", tracking="TRK-9")
    fake_shopify.add_order(1002)
    async with trickling(fake_shopify.url, parts=4, pause_s=0.15) as proxy:
        backend = ShopifyBackend(
            "test.myshopify.com", SHOPIFY_TOKEN, base_url=proxy.url, timeout_s=3.0
        )
        try:
            found = await backend.get_order("1001")
            mine = await backend.orders_for_phone(PHONE)
            # the same answer, padded to ~0.9 MiB (a field the backend does not read)
            fake_shopify.orders[0]["note"] = "x" * (MAX_BODY_BYTES - 100_000)
            large = await backend.get_order("1001")
        finally:
            await backend.aclose()
    assert found is not None and found.delivery is not None
    assert found.delivery.tracking_number == "TRK-9"
    assert {o.number for o in mine} == {"1001", "1002"}
    assert large is not None and large.number == "1001"


async def test_woocommerce_answers_written_in_parts_and_large(fake_woo: FakeWoo) -> None:
    fake_woo.add_order(501, status="processing")
    async with trickling(fake_woo.url, parts=4, pause_s=0.15) as proxy:
        backend = WooCommerceBackend(proxy.url, KEY, SECRET, timeout_s=3.0)
        try:
            found = await backend.get_order("501")
            fake_woo.orders[501]["customer_note"] = "x" * (MAX_BODY_BYTES - 100_000)
            large = await backend.get_order("501")
        finally:
            await backend.aclose()
    assert found is not None and found.status == "processing"
    assert large is not None and large.number == "501"


async def test_a_wrong_shape_is_malformed_for_reads_and_actions(fake_woo: FakeWoo) -> None:
    """JSON of a shape the backend does not expect: the ordinary "malformed", for a read
    and for a confirmed action (whose press asks again with its id), never a crash."""
    order = fake_woo.add_order(501, status="processing")
    async with trickling(fake_woo.url, parts=1) as proxy:
        backend = WooCommerceBackend(proxy.url, KEY, SECRET, timeout_s=3.0)
        try:
            found = await backend.get_order("501")
            assert found is not None
            # a quantity that is not a number (ValueError while reading the order)
            bad_item = {**order, "line_items": [{"id": 1, "name": "Mug", "quantity": "many"}]}
            proxy.body = json.dumps(bad_item).encode()
            with pytest.raises(ShopUnavailable) as read:
                await backend.get_order("501")
            proxy.body = b'{"status": "processing"}'  # an order without its id (KeyError)
            with pytest.raises(ShopUnavailable) as acted:
                await backend.cancel_order(found, "op-1")
        finally:
            await backend.aclose()
    assert read.value.kind == acted.value.kind == "malformed"
    assert order["status"] == "processing"
