"""The platforms' catalogues against fakes built from their documented shapes (Shopify
Admin GraphQL 2026-07, WooCommerce REST v3): options, prices with the currency, stock
in the owner's terms, the product's page, every page read, a broken answer unavailable."""

from __future__ import annotations

from decimal import Decimal
from typing import Any

import pytest

from tests.fakes.shopify import TOKEN, FakeShopify
from tools.shop.backend import ShopUnavailable
from tools.shop.backends.shopify import ShopifyBackend
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
