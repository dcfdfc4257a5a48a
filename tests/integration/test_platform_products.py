"""The platforms' catalogues against fakes built from their documented shapes (Shopify
Admin GraphQL 2026-07, WooCommerce REST v3): options, prices with the currency, stock
in the owner's terms, the product's page, every page read, a broken answer unavailable."""

from __future__ import annotations

from decimal import Decimal
from typing import Any

import pytest

from tests.fakes.shopify import TOKEN, FakeShopify
from tests.fakes.woocommerce import KEY, SECRET, FakeWoo
from tools.shop.backend import ShopUnavailable
from tools.shop.backends.shopify import ShopifyBackend
from tools.shop.backends.woocommerce import WooCommerceBackend
from tools.shop.orders import Money


def shopify_variant(
    product: str,
    size: str,
    *,
    quantity: int = 5,
    tracked: bool = True,
    policy: str = "DENY",
    status: str = "ACTIVE",
    available: bool = True,
) -> dict[str, Any]:
    return {
        "id": f"gid://shopify/ProductVariant/{product}-{size}",
        "title": size,
        "price": "5490.00",
        "inventoryQuantity": quantity,
        "inventoryPolicy": policy,
        "availableForSale": available,
        "selectedOptions": [{"name": "Size", "value": size}],
        "inventoryItem": {"tracked": tracked},
        "product": {
            "id": f"gid://shopify/Product/{product}",
            "title": f"Runner {product}",
            "description": "Running shoes",
            "onlineStoreUrl": f"https://test.myshopify.com/products/{product}",
            "status": status,
        },
    }


async def test_shopify_variants_become_products_with_stock_and_pages(
    fake_shopify: FakeShopify,
) -> None:
    fake_shopify.variants = [
        shopify_variant("a", "41"),
        shopify_variant("a", "42", quantity=0),
        shopify_variant("b", "40", tracked=False, available=True),
        shopify_variant("b", "41", quantity=-3, policy="CONTINUE", available=True),
        shopify_variant("c", "40", status="DRAFT"),
    ]
    fake_shopify.variants_page = 2
    shop = ShopifyBackend("test.myshopify.com", TOKEN, base_url=fake_shopify.url)
    try:
        a, b = await shop.catalogue()
    finally:
        await shop.aclose()
    assert (a.title, a.url) == ("Runner a", "https://test.myshopify.com/products/a")
    assert [(v.options, v.stock) for v in a.variants] == [
        ((("Size", "41"),), 5),
        ((("Size", "42"),), 0),
    ]
    assert a.variants[0].price == Money(Decimal("5490.00"), "RUB")
    assert [(v.stock, v.in_stock) for v in b.variants] == [(None, True), (None, True)]
    assert fake_shopify.requests.count("ProductVariants") == 3  # every page, then none


async def test_a_shopify_page_it_cannot_read_is_unavailable(fake_shopify: FakeShopify) -> None:
    fake_shopify.variants = [
        {"id": "gid://shopify/ProductVariant/1", "product": {"status": "ACTIVE"}}
    ]
    shop = ShopifyBackend("test.myshopify.com", TOKEN, base_url=fake_shopify.url)
    try:
        with pytest.raises(ShopUnavailable) as caught:
            await shop.catalogue()
    finally:
        await shop.aclose()
    assert caught.value.kind == "malformed"


async def test_woocommerce_products_with_their_variations(fake_woo: FakeWoo) -> None:
    fake_woo.products = [
        {
            "id": 10,
            "name": "Кроссовки Runner",
            "status": "publish",
            "permalink": "https://woo.example/product/runner/",
            "short_description": "<p>Лёгкие &amp; мягкие</p>",
            "type": "variable",
            "price": "5490",
            "variations": [11, 12],
        },
        {
            "id": 20,
            "name": "Чайник",
            "status": "publish",
            "permalink": "https://woo.example/product/kettle/",
            "description": "<b>1,7 л</b>",
            "type": "simple",
            "price": "2990",
            "manage_stock": False,
            "stock_status": "outofstock",
            "variations": [],
        },
        {"id": 30, "name": "Черновик", "status": "draft", "variations": []},
    ]
    fake_woo.variations[10] = [
        {
            "id": 11,
            "price": "5490",
            "manage_stock": True,
            "stock_quantity": 2,
            "stock_status": "instock",
            "attributes": [{"id": 1, "name": "Размер", "option": "42"}],
        },
        {
            "id": 12,
            "price": "5490",
            "manage_stock": True,
            "stock_quantity": 0,
            "stock_status": "onbackorder",
            "attributes": [{"id": 1, "name": "Размер", "option": "43"}],
        },
    ]
    shop = WooCommerceBackend(fake_woo.url, KEY, SECRET)
    try:
        runner, kettle = await shop.catalogue()
    finally:
        await shop.aclose()
    assert (runner.title, runner.url) == ("Кроссовки Runner", "https://woo.example/product/runner/")
    assert runner.description == "Лёгкие & мягкие"
    first, second = runner.variants
    assert (first.options, first.stock, first.price) == (
        (("Размер", "42"),),
        2,
        Money(Decimal("5490"), "RUB"),
    )
    assert (second.stock, second.in_stock) == (None, True)  # back orders: for sale
    (only,) = kettle.variants
    assert (only.options, only.stock, only.in_stock) == ((), None, False)
    assert kettle.description == "1,7 л"
