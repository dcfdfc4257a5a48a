"""The published contract (docs/shop-api.openapi.yaml) is a valid document, the reference
fake and the standard-library example server (docs/shop-data.md) answer by it, and the bot's client
reads the example server's answers."""

from __future__ import annotations

import asyncio
import contextlib
import os
import socket
import sys
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import aiohttp
import jsonschema
import pytest
import yaml
from pydantic import SecretStr

from tests.fakes.shop_api import TOKEN, FakeShopApi, order
from tools.shop.backend import NOT_SUPPORTED, ActionDone, ActionRejected, ShippingAddress
from tools.shop.backends.http import HttpBackend

ROOT = Path(__file__).resolve().parents[3]
DOCUMENT = ROOT / "docs" / "shop-api.openapi.yaml"
EXAMPLE = ROOT / "docs" / "examples" / "shop_api_server.py"


def spec() -> dict[str, Any]:
    loaded = yaml.safe_load(DOCUMENT.read_text(encoding="utf-8"))
    assert isinstance(loaded, dict)
    return loaded


def validate(body: Any, schema_name: str) -> None:
    """`body` against components.schemas[schema_name], resolving the document's $refs."""
    document = spec()
    schema = {"$ref": f"#/components/schemas/{schema_name}", "components": document["components"]}
    jsonschema.Draft202012Validator(
        schema, format_checker=jsonschema.Draft202012Validator.FORMAT_CHECKER
    ).validate(body)


def test_the_document_is_openapi_3_1_with_valid_schemas_and_resolvable_refs() -> None:
    document = spec()
    assert document["openapi"].startswith("3.1.")
    assert set(document["paths"]) == {
        "/orders/{number}",
        "/orders",
        "/capabilities",  # actions
        "/products",  # products
        "/orders/{number}/cancel",
        "/orders/{number}/returns",
        "/orders/{number}/address",
    }
    for name, schema in document["components"]["schemas"].items():
        jsonschema.Draft202012Validator.check_schema(schema), name

    def refs(node: Any) -> list[str]:
        if isinstance(node, dict):
            found = [node["$ref"]] if "$ref" in node else []
            return found + [r for value in node.values() for r in refs(value)]
        if isinstance(node, list):
            return [r for value in node for r in refs(value)]
        return []

    for ref in refs(document):
        target: Any = document
        for part in ref.removeprefix("#/").split("/"):
            target = target[part]
        assert isinstance(target, dict), ref
    # what the document promises about an order is what the client requires
    order_schema = document["components"]["schemas"]["Order"]
    assert order_schema["required"] == ["number", "status", "updated_at"]
    assert order_schema["properties"]["status"]["enum"] == [
        "processing",
        "in_transit",
        "ready_for_pickup",
        "delivered",
        "cancelled",
    ]


async def test_the_reference_fake_answers_by_the_document(fake_shop_api: FakeShopApi) -> None:
    full = order(
        "100234",
        "ready_for_pickup",
        phone="+79123456789",
        email="a@example.com",
        telegram_id=42,
        items=[{"name": "Кофемашина", "quantity": 2}],
        delivery={"carrier": "СДЭК", "eta": "2026-12-04", "pickup_point": "ПВЗ"},
        total={"amount": "12990.00", "currency": "RUB"},
    )
    fake_shop_api.put(full, order("7", "cancelled"))
    headers = {"Authorization": f"Bearer {TOKEN}"}
    async with aiohttp.ClientSession(headers=headers) as http:
        async with http.get(f"{fake_shop_api.base_url}/orders/100234") as response:
            validate(await response.json(), "Order")
        async with http.get(f"{fake_shop_api.base_url}/orders/7") as response:
            validate(await response.json(), "Order")
        params = {"phone": "+79123456789"}
        async with http.get(f"{fake_shop_api.base_url}/orders", params=params) as response:
            listed = await response.json()
            validate(listed, "OrderList")
            assert [o["number"] for o in listed["orders"]] == ["100234"]
    with pytest.raises(jsonschema.ValidationError):
        validate(
            {"number": "1", "status": "shipped", "updated_at": "2026-12-01T10:00:00Z"}, "Order"
        )
    with pytest.raises(jsonschema.ValidationError):
        validate(
            {"number": "1", "status": "delivered", "updated_at": "2026-12-01T10:00:00"}, "Order"
        )


@contextlib.asynccontextmanager
async def _serving(**extra: str) -> AsyncIterator[str]:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    env = {**os.environ, "SHOP_API_TOKEN": "example-token", "PORT": str(port), **extra}
    process = await asyncio.create_subprocess_exec(sys.executable, str(EXAMPLE), env=env)
    try:
        async with asyncio.timeout(120):  # an outer limit on a process's start
            while True:  # until it listens
                try:
                    _, writer = await asyncio.open_connection("127.0.0.1", port)
                except OSError:
                    assert process.returncode is None, "the example server exited"
                    await asyncio.sleep(0.05)
                    continue
                writer.close()
                await writer.wait_closed()
                break
        yield f"http://127.0.0.1:{port}"
    finally:
        process.terminate()
        await process.wait()


@pytest.fixture
async def example_server() -> AsyncIterator[str]:
    async with _serving() as url:
        yield url


async def test_the_readme_example_server_answers_by_the_document_and_the_bot_reads_it(
    example_server: str,
) -> None:
    async with aiohttp.ClientSession() as http:
        async with http.get(f"{example_server}/orders/100234") as response:
            assert response.status == 401
        headers = {"Authorization": "Bearer example-token"}
        async with http.get(f"{example_server}/orders/100234", headers=headers) as response:
            validate(await response.json(), "Order")
        async with http.get(f"{example_server}/orders/1", headers=headers) as response:
            assert response.status == 404
        async with http.get(f"{example_server}/products", headers=headers) as response:
            validate(await response.json(), "ProductPage")
    client = HttpBackend(example_server, SecretStr("example-token"))
    try:
        await client.check()
        found = await client.get_order("100234")
        assert found is not None and found.customer_phone == "+79123456789"
        mine = {o.number for o in await client.orders_for_phone("+79123456789")}
        assert mine == {"100234", "100235"}
        assert await client.get_order("999") is None
        assert await client.supported_actions() == frozenset()  # it declares no action
        (product,) = await client.catalogue()
        assert product.url == "https://shop.example/products/barista"
        assert [v.stock for v in product.variants] == [4, 0]
    finally:
        await client.aclose()


async def test_the_example_server_changes_an_address_once_as_the_document_says() -> None:
    """The bot's client against the example server declaring change_address: the address
    reaches the shop (read back), once per operation id; a shipped order is refused; a
    server that does not declare it answers 501 (not supported, nothing done)."""
    address = ShippingAddress(
        line1="Lenina 5", line2="apt. 12", city="Kazan", postal_code="420111", country_code="RU"
    )
    headers = {"Authorization": "Bearer example-token"}
    async with _serving(SHOP_API_ACTIONS="change_address") as url:
        client = HttpBackend(url, SecretStr("example-token"))
        try:
            assert await client.supported_actions() == frozenset({"change_address"})
            order = await client.get_order("100235")
            assert order is not None
            assert await client.change_address(order, address, "op-1") == ActionDone()
            async with aiohttp.ClientSession() as http:
                async with http.get(f"{url}/orders/100235", headers=headers) as response:
                    stored = await response.json()
            validate(stored, "Order")  # an extra field is allowed
            assert stored["shipping_address"] == {
                "line1": "Lenina 5",
                "line2": "apt. 12",
                "city": "Kazan",
                "postal_code": "420111",
                "country_code": "RU",
                "region": None,
            }
            validate(stored["shipping_address"], "AddressChange")
            assert await client.change_address(order, address, "op-1") == ActionDone()
            shipped = await client.get_order("100234")
            assert shipped is not None
            refused = await client.change_address(shipped, address, "op-2")
            assert refused == ActionRejected("already_shipped")
        finally:
            await client.aclose()
    async with _serving() as url:
        client = HttpBackend(url, SecretStr("example-token"))
        try:
            order = await client.get_order("100235")
            assert order is not None
            refused = await client.change_address(order, address, "op-3")
            assert refused == ActionRejected(NOT_SUPPORTED)
        finally:
            await client.aclose()


def test_the_docs_show_the_example_server_as_it_is_tested() -> None:
    page = (ROOT / "docs" / "shop-data.md").read_text(encoding="utf-8")
    assert EXAMPLE.read_text(encoding="utf-8").strip() in page
