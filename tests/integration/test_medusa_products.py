"""The medusa backend's catalogue against the real Medusa v2 engine: a product the admin
made (options, RUB prices, inventory at the warehouse) read with its variants' stock as
the engine holds it, its page from SHOP_PRODUCT_URL, a stock change seen on the next read,
and the product tools over it: found by the customer's words, the sold-out size said so."""

from __future__ import annotations

import json
from decimal import Decimal

import pytest

from storage.database import Database
from storage.shop import ShopRepository
from tests.shop_engine.medusa_engine import MedusaEngine
from tools.base import Caller, ToolCall, ToolContext
from tools.executor import ToolExecutor
from tools.products import product_tools
from tools.registry import ToolRegistry
from tools.shop.backends.medusa import MedusaBackend
from tools.shop.catalog import ProductCatalog
from tools.shop.directory import ShopDirectory
from tools.shop.orders import Money
from tools.shop.products import StockWords

pytestmark = [pytest.mark.medusa, pytest.mark.timeout(900)]

PAGE = "https://shop.example/products/{handle}"


def seed(engine: MedusaEngine) -> str:
    return engine.add_product(
        "Пуховик Arctic",
        "arctic-parka",
        "Зимний пуховик до −30 °C, натуральный пух.",
        "Размер",
        {"M": 3, "L": 0, "XL": 12},
        12990,
    )


async def test_a_product_is_read_with_its_variants_stock_and_page(
    medusa_engine: MedusaEngine,
) -> None:
    product_id = seed(medusa_engine)
    backend = MedusaBackend(
        medusa_engine.url, medusa_engine.api_key, timeout_s=30, product_url=PAGE
    )
    try:
        (product,) = [p for p in await backend.catalogue() if p.product_id == product_id]
    finally:
        await backend.aclose()
    assert product.title == "Пуховик Arctic"
    assert product.url == "https://shop.example/products/arctic-parka"
    by_size = {dict(v.options)["Размер"]: v for v in product.variants}
    assert {size: v.stock for size, v in by_size.items()} == {"M": 3, "L": 0, "XL": 12}
    assert by_size["M"].price == Money(Decimal("12990"), "RUB")


async def test_the_tools_answer_from_the_live_engine(
    medusa_engine: MedusaEngine, db: Database
) -> None:
    seed(medusa_engine)
    directory = ShopDirectory(
        MedusaBackend(medusa_engine.url, medusa_engine.api_key, timeout_s=30, product_url=PAGE),
        products_ttl_s=0,
    )
    registry = ToolRegistry()
    for tool in product_tools(ProductCatalog(directory, StockWords())):
        registry.register(tool)
    context = ToolContext(
        caller=Caller(key=1, chat_id=1, private_chat=True), shop=ShopRepository(db)
    )

    async def ask(arguments: dict[str, object]) -> dict[str, object]:
        call = ToolCall("c", "search_products", json.dumps(arguments, ensure_ascii=False))
        body = json.loads((await ToolExecutor(registry).execute(call, context)).content)
        data: dict[str, object] = body["data"]
        return data

    try:
        found = await ask({"query": "пуховик", "size": "L"})
        (product,) = found["products"]  # type: ignore[misc]
        assert product["url"] == "https://shop.example/products/arctic-parka"
        (variant,) = product["variants"]
        assert variant["availability"] == "out_of_stock"
        assert variant["price"] == {"amount": "12990", "currency": "RUB"}
        few = await ask({"query": "пуховик", "size": "M"})
        assert few["products"][0]["variants"][0]["availability"] == "few_left"  # type: ignore[index]
        missing = await ask({"query": "айфон"})
        assert missing["found"] is False and missing["products"] == []
    finally:
        await directory.aclose()
