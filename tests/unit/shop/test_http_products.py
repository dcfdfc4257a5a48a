"""SHOP_BACKEND=http's catalogue (`GET /products`): read by the document's shapes, every
page followed, a shop without the route has no products, a broken answer is
`unavailable`; through the `ShopDirectory` one request serves every question of the
cache's time, one at a time for questions arriving together, a copy past its time still
answers while it is read again, and a failure is not kept."""

from __future__ import annotations

import asyncio
from datetime import date
from decimal import Decimal
from typing import Any

import aiohttp
import jsonschema
import pytest
from pydantic import SecretStr

from tests.fakes.shop_api import TOKEN, FakeShopApi
from tests.unit.shop.test_shop_api_contract import validate
from tools.shop.backend import ShopUnavailable
from tools.shop.backends.http import HttpBackend
from tools.shop.directory import PRODUCTS_STALE_S, ShopDirectory
from tools.shop.orders import Money


def product(i: int, **extra: Any) -> dict[str, Any]:
    return {
        "id": f"p{i}",
        "title": f"Кружка {i}",
        "url": f"https://shop.example/p{i}",
        "variants": [
            {
                "id": f"p{i}-red",
                "options": {"colour": "red"},
                "price": {"amount": "490.00", "currency": "rub"},
                "stock": 0,
                "restock_date": "2026-12-20",
            }
        ],
        **extra,
    }


async def test_every_page_is_read_as_the_document_says(fake_shop_api: FakeShopApi) -> None:
    fake_shop_api.products = [product(i) for i in range(7)]
    fake_shop_api.products_page = 3
    headers = {"Authorization": f"Bearer {TOKEN}"}
    async with aiohttp.ClientSession(headers=headers) as http:
        async with http.get(f"{fake_shop_api.base_url}/products") as response:
            validate(await response.json(), "ProductPage")
    with pytest.raises(jsonschema.ValidationError):
        validate({"products": [{"id": "x", "title": "X", "variants": []}]}, "ProductPage")
    fake_shop_api.requests.clear()
    backend = HttpBackend(fake_shop_api.base_url, SecretStr(TOKEN))
    try:
        read = await backend.catalogue()
    finally:
        await backend.aclose()
    assert [p.product_id for p in read] == [f"p{i}" for i in range(7)]
    variant = read[0].variants[0]
    assert variant.price == Money(Decimal("490.00"), "RUB")
    assert (variant.stock, variant.restock_date) == (0, date(2026, 12, 20))
    assert variant.options == (("colour", "red"),)
    pages = [q for path, q in fake_shop_api.requests if path.endswith("/products")]
    assert pages == ["", "after=3", "after=6"]


async def test_a_shop_without_products_has_none_and_a_broken_page_is_unavailable(
    fake_shop_api: FakeShopApi,
) -> None:
    backend = HttpBackend(fake_shop_api.base_url, SecretStr(TOKEN))
    try:
        assert await backend.catalogue() == ()
        fake_shop_api.products = [product(1, url="javascript:alert(1)"), {"id": "x"}]
        with pytest.raises(ShopUnavailable) as caught:
            await backend.catalogue()
        assert caught.value.kind == "malformed"
        fake_shop_api.products = [product(1, url="javascript:alert(1)")]
        (only,) = await backend.catalogue()
        assert only.url is None  # only an http(s) page is given to a customer
    finally:
        await backend.aclose()


async def _settled(directory: ShopDirectory) -> None:
    """Until the directory's background read has landed."""
    if directory._refresh is not None:
        await asyncio.wait({directory._refresh})


async def test_the_directory_asks_once_per_cache_time_and_keeps_no_failure(
    fake_shop_api: FakeShopApi,
) -> None:
    fake_shop_api.products = [product(1)]
    fake_shop_api.latency_ms = 50
    now = [0.0]
    directory = ShopDirectory(
        HttpBackend(fake_shop_api.base_url, SecretStr(TOKEN)),
        products_ttl_s=60,
        clock=lambda: now[0],
    )

    def asked() -> int:
        return sum(1 for path, _ in fake_shop_api.requests if path.endswith("/products"))

    try:
        together = await asyncio.gather(*(directory.products() for _ in range(20)))
        assert asked() == 1 and all(t is together[0] for t in together)
        assert await directory.products() is together[0]
        assert asked() == 1  # warm: no request
        now[0] = 61.0  # past its time: answered from the copy, read again behind it
        fake_shop_api.fail("500", times=2)  # that read fails (and its one retry)
        assert await directory.products() is together[0]
        await _settled(directory)
        assert asked() == 3
        fake_shop_api.fail(None)
        assert await directory.products() is together[0]  # the failure is not kept:
        await _settled(directory)  # asked again, and the new copy is used from now on
        assert asked() == 4
        fresh = await directory.products()
        assert fresh is not together[0] and fresh[0].product_id == "p1"
        now[0] = 61.0 + 60 + PRODUCTS_STALE_S + 1  # too old to answer from: wait for it
        fake_shop_api.fail("500", times=2)
        with pytest.raises(ShopUnavailable):
            await directory.products()
        assert (await directory.products())[0].product_id == "p1"  # asked again at once
    finally:
        await directory.aclose()
