"""The import document's `products`: the whole catalogue, validated record by record, each
bad one named with its product id and field; stored as the local backend reads it."""

from __future__ import annotations

from datetime import date
from decimal import Decimal

import pytest

from storage.database import Database
from storage.shop import ShopRepository
from tools.shop.backends.local import LocalBackend
from tools.shop.import_document import ShopDataError, plan_import
from tools.shop.orders import Money

PARKA = {
    "product_id": "arctic",
    "title": "  Пуховик Arctic ",
    "description": "Зимний",
    "url": "https://shop.example/arctic",
    "variants": [
        {
            "variant_id": "arctic-m",
            "options": {"Размер": "M", "Цвет": "чёрный"},
            "price": {"amount": "12990.00", "currency": "rub"},
            "stock": 0,
            "restock_date": "2026-12-20",
        },
        {"variant_id": "arctic-l", "in_stock": True},
    ],
}


async def test_products_are_stored_and_read_back_as_the_shop_wrote_them(db: Database) -> None:
    plan = plan_import({"products": [PARKA]})
    shop = ShopRepository(db)
    assert plan.products is not None
    counts = await shop.import_shop_data(orders=[], policies=[], texts={}, products=plan.products)
    assert counts.products_replaced == 1
    (product,) = await LocalBackend(shop).catalogue()
    assert product.title == "Пуховик Arctic" and product.url == "https://shop.example/arctic"
    first, second = product.variants
    assert first.options == (("Размер", "M"), ("Цвет", "чёрный"))
    assert first.price == Money(Decimal("12990.00"), "RUB")
    assert (first.stock, first.restock_date) == (0, date(2026, 12, 20))
    assert (second.price, second.stock, second.in_stock) == (None, None, True)


async def test_an_import_without_products_keeps_them_and_an_empty_list_removes_them(
    db: Database,
) -> None:
    shop = ShopRepository(db)
    plan = plan_import({"products": [PARKA]})
    assert plan.products is not None
    await shop.import_shop_data(orders=[], policies=[], texts={}, products=plan.products)
    assert plan_import({"faq": []}).products is None
    await shop.import_shop_data(orders=[], policies=[], texts={}, products=None)
    assert len(await LocalBackend(shop).catalogue()) == 1
    await shop.import_shop_data(orders=[], policies=[], texts={}, products=[])
    assert await LocalBackend(shop).catalogue() == ()


@pytest.mark.parametrize(
    ("change", "problem"),
    [
        ({"title": ""}, "products[0] (product_id 'arctic').title:"),
        ({"variants": []}, "products[0] (product_id 'arctic').variants:"),
        ({"url": "javascript:alert(1)"}, "products[0] (product_id 'arctic').url: must be an http"),
        (
            {"variants": [{"variant_id": "v", "price": {"amount": "-1", "currency": "RUB"}}]},
            "products[0] (product_id 'arctic').variants[0].price.amount:",
        ),
        (
            {"variants": [{"variant_id": "v", "stock": -2}]},
            "products[0] (product_id 'arctic').variants[0].stock:",
        ),
        (
            {"variants": [{"variant_id": "v", "colour": "red"}]},
            "products[0] (product_id 'arctic').variants[0].colour: unknown field",
        ),
        (
            {"variants": [{"variant_id": "v"}, {"variant_id": "v"}]},
            "products[0] (product_id 'arctic').variants[1].variant_id: duplicate of variants[0]",
        ),
    ],
)
def test_a_bad_product_is_named_with_its_field(change: dict[str, object], problem: str) -> None:
    with pytest.raises(ShopDataError) as caught:
        plan_import({"products": [{**PARKA, **change}]})
    assert any(line.startswith(problem) for line in caught.value.problems), caught.value.problems


def test_every_bad_product_is_listed_one_by_one() -> None:
    with pytest.raises(ShopDataError) as caught:
        plan_import({"products": [PARKA, {"product_id": "x"}, {**PARKA}]})
    assert caught.value.problems == [
        "products[1] (product_id 'x').title: required field is missing",
        "products[1] (product_id 'x').variants: required field is missing",
    ]
    with pytest.raises(ShopDataError) as again:
        plan_import({"products": [PARKA, {**PARKA}]})
    assert again.value.problems == [
        "products[1] (product_id 'arctic').product_id: duplicate of products[0]"
    ]
