"""The shop's push routes on a real aiohttp server and a real database: each platform's
signature (generic hex, Shopify's and WooCommerce's base64 HMAC-SHA256 of the raw body)
is checked before the body is parsed; an oversized body is refused unread; an order
nobody subscribed to is acknowledged and not kept; a subscribed one is stored before
the 200, once per event id. Shapes: Shopify Admin API 2026-07 webhooks (`orders/updated`,
`X-Shopify-Hmac-Sha256`, `X-Shopify-Event-Id`, the order's `name` "#1001"); WooCommerce
REST v3 webhooks (`order.updated`, `X-WC-Webhook-Signature`, `X-WC-Webhook-Delivery-ID`,
the order's `number`, and the `webhook_id=<n>` ping sent when a webhook is saved)."""

from __future__ import annotations

import json
import re
from collections.abc import AsyncIterator

import aiohttp
import pytest
from aiohttp import web
from aiohttp.test_utils import TestServer

from bot.runtime.shop_push import (
    PushSecrets,
    add_shop_push_routes,
    base64_signature,
    generic_signature,
)
from storage.database import Database
from storage.order_updates import OrderUpdateRepository
from tests.unit.shop.test_shop_api_contract import spec, validate
from tools.shop.orders import FOUR_DIGITS

pytestmark = pytest.mark.sqlite_only

GENERIC, SHOPIFY, WOO = "generic-secret", "shopify-secret", "woo-secret"


@pytest.fixture
async def server(db: Database) -> AsyncIterator[tuple[str, list[int], OrderUpdateRepository]]:
    repo = OrderUpdateRepository(db)
    await repo.subscribe(
        chat_id=1, user_id=1, order_number="1001", language="en", status="processing", updated_at=0
    )
    woken: list[int] = []
    app = web.Application()
    add_shop_push_routes(
        app,
        repo,
        PushSecrets(generic=GENERIC, shopify=SHOPIFY, woocommerce=WOO),
        max_bytes=4096,
        normalise=FOUR_DIGITS.normalise,
        stored=lambda: woken.append(1),
    )
    test_server = TestServer(app, host="127.0.0.1")
    await test_server.start_server()
    try:
        yield str(test_server.make_url("")), woken, repo
    finally:
        await test_server.close()


async def post(url: str, body: bytes, headers: dict[str, str]) -> tuple[int, dict[str, object]]:
    async with (
        aiohttp.ClientSession() as http,
        http.post(url, data=body, headers=headers) as response,
    ):
        return response.status, await response.json(content_type=None)


async def stored(db: Database) -> list[tuple[object, ...]]:
    rows = await db.fetch_all("SELECT source, event_key, order_number FROM shop_events", ())
    return [tuple(r) for r in rows]


async def test_shopify_orders_updated(
    server: tuple[str, list[int], OrderUpdateRepository], db: Database
) -> None:
    base, woken, _ = server
    body = json.dumps({"id": 450789469, "name": "#1001", "order_number": 1001}).encode()
    headers = {
        "X-Shopify-Topic": "orders/updated",
        "X-Shopify-Event-Id": "evt-a",
        "X-Shopify-Hmac-Sha256": base64_signature(SHOPIFY, body),
    }
    url = base + "/shop/events/shopify"
    assert await post(url, body, headers) == (200, {"ok": True, "stored": True})
    assert await post(url, body, headers) == (200, {"ok": True, "stored": True})  # redelivery
    assert await stored(db) == [("shopify", "evt-a", "1001")]
    assert woken == [1]
    # the generic secret, or the hex form, is not Shopify's signature
    for wrong in (base64_signature(GENERIC, body), generic_signature(SHOPIFY, body), ""):
        assert (await post(url, body, {**headers, "X-Shopify-Hmac-Sha256": wrong}))[0] == 401
    # signed, but one byte changed
    assert (await post(url, body.replace(b"1001", b"1002"), headers))[0] == 401


async def test_woocommerce_order_updated_and_its_ping(
    server: tuple[str, list[int], OrderUpdateRepository], db: Database
) -> None:
    base, _, _ = server
    url = base + "/shop/events/woocommerce"
    assert (await post(url, b"webhook_id=17", {}))[0] == 200  # the ping on creation
    body = json.dumps({"id": 73, "number": "1001", "status": "completed"}).encode()
    headers = {
        "X-WC-Webhook-Topic": "order.updated",
        "X-WC-Webhook-Delivery-ID": "d-1",
        "X-WC-Webhook-Signature": base64_signature(WOO, body),
    }
    assert await post(url, body, headers) == (200, {"ok": True, "stored": True})
    assert (await post(url, body, {**headers, "X-WC-Webhook-Signature": "x"}))[0] == 401
    assert await stored(db) == [("woocommerce", "d-1", "1001")]


async def test_generic_refusals_change_nothing(
    server: tuple[str, list[int], OrderUpdateRepository], db: Database
) -> None:
    base, woken, _ = server
    url = base + "/shop/events"

    def signed(body: bytes) -> dict[str, str]:
        return {"X-Shop-Signature": generic_signature(GENERIC, body)}

    big = json.dumps({"order": {"number": "1001"}, "pad": "a" * 5000}).encode()
    assert (await post(url, big, signed(big)))[0] == 413
    unsigned = json.dumps({"order": {"number": "1001"}}).encode()
    assert (await post(url, unsigned, {}))[0] == 401
    assert (await post(url, b"{not json", signed(b"{not json")))[0] == 400
    for bad in ({"order": {}}, {"order": {"number": "12345"}}, {"order": "1001"}, []):
        body = json.dumps(bad).encode()
        assert (await post(url, body, signed(body)))[0] == 400
    other = json.dumps({"id": "e", "order": {"number": "2002"}}).encode()
    assert await post(url, other, signed(other)) == (200, {"ok": True, "stored": False})
    assert await stored(db) == []
    assert woken == []
    # an event without an id is kept once by its body's digest
    plain = json.dumps({"order": {"number": "1001"}}).encode()
    assert (await post(url, plain, signed(plain)))[0] == 200
    assert (await post(url, plain, signed(plain)))[0] == 200
    assert len(await stored(db)) == 1


async def test_the_documented_event_is_accepted_as_the_document_says(
    server: tuple[str, list[int], OrderUpdateRepository], db: Database
) -> None:
    """docs/shop-api.openapi.yaml `webhooks.orderUpdated`: its example event validates
    against its schema, and the route keeps it when signed as the document says."""
    document = spec()
    webhook = document["webhooks"]["orderUpdated"]["post"]
    example = dict(document["components"]["schemas"]["OrderEvent"]["example"])
    validate(example, "OrderEvent")
    example["order"] = {"number": "1001"}  # the subscribed order
    validate(example, "OrderEvent")
    body = json.dumps(example).encode()
    [header] = webhook["parameters"]
    signature = generic_signature(GENERIC, body)
    assert re.fullmatch(header["schema"]["pattern"], signature)
    status, answer = await post(server[0] + "/shop/events", body, {header["name"]: signature})
    assert str(status) in webhook["responses"]
    assert (status, answer) == (200, {"ok": True, "stored": True})
    assert await stored(db) == [("http", example["id"], "1001")]
