"""Products through the real bot process (`python -m bot` against the fakes): the model
(scripted) calls search_products with the customer's words and the filters they named,
and answers from the result only. A customer who says "тёплая куртка на зиму" gets the
demo's Пуховик Arctic with its price, availability and page; a sold-out size is said to
be out of stock, with its restock date; an unknown product gets "not found" and nothing
invented. The same against the real Medusa engine (SHOP_BACKEND=medusa)."""

from __future__ import annotations

import json
from typing import Any

import pytest

from tests.e2e.chat_helpers import StartBot, ask, results_for, tool_messages, tool_step
from tests.fakes.openai_server import Body, FakeOpenAIServer, fake_call
from tests.fakes.telegram_server import FakeTelegramServer
from tests.shop_engine.medusa_engine import MedusaEngine

WORDS = {"in_stock": "в наличии", "few_left": "осталось немного", "out_of_stock": "нет в наличии"}
# what the customer asked → the filters the model names (the customer's own words)
FILTERS: dict[str, dict[str, Any]] = {
    "Есть тёплая куртка на зиму?": {},
    "Кроссовки 42 размера, чёрные, есть?": {"size": "42", "colour": "чёрный"},
    "А пуховик L есть?": {"size": "L"},
    "Продаёте айфоны?": {},
}


def search_for(text: str) -> list[Body]:
    query = text.rstrip("?").replace(" 42 размера", "").replace(" L есть", "")
    return [fake_call("search_products", {"query": query, **FILTERS.get(text, {})})]


def answer_from(body: Body) -> str:
    """A careful answer: only what the tool returned (prices, availability, the page)."""
    (result,) = tool_messages(body)
    data = result["data"]
    if not data["found"]:
        return "К сожалению, такого товара в магазине нет."
    lines = []
    for product in data["products"]:
        for variant in product["variants"]:
            options = ", ".join(f"{k} {v}" for k, v in variant["options"].items())
            price = variant["price"]
            back = f", поступит {variant['restock_date']}" if "restock_date" in variant else ""
            lines.append(
                f"{product['title']} ({options}): {price['amount']} {price['currency']}, "
                f"{WORDS[variant['availability']]}{back} — {product['url']}"
            )
    return "\n".join(lines)


def searched(openai: FakeOpenAIServer, question: str) -> dict[str, Any]:
    (result,) = results_for(openai, question)
    assert result["ok"] is True
    data: dict[str, Any] = result["data"]
    return data


async def test_a_customer_finds_a_product_in_other_words_with_price_stock_and_page(
    start_bot: StartBot, fake_telegram: FakeTelegramServer, fake_openai: FakeOpenAIServer
) -> None:
    fake_openai.handler = tool_step(search_for, answer_from)
    await start_bot(PRODUCTS_EMBEDDER="builtin")

    question = "Есть тёплая куртка на зиму?"
    reply = await ask(fake_telegram, 801, question)
    assert searched(fake_openai, question)["products"][0]["title"] == "Пуховик Arctic"
    assert "Пуховик Arctic (Размер S, Цвет чёрный): 12990 RUB, в наличии" in reply
    assert "Пуховик Arctic (Размер M, Цвет чёрный): 12990 RUB, осталось немного" in reply
    assert "https://shop.example/products/arctic-parka" in reply

    sold_out = "Кроссовки 42 размера, чёрные, есть?"
    reply = await ask(fake_telegram, 802, sold_out)
    (product,) = searched(fake_openai, sold_out)["products"]
    assert [v["variant_id"] for v in product["variants"]] == ["runner-42-black"]
    assert reply == (
        "Кроссовки Runner (Размер 42, Цвет чёрный): 5490 RUB, нет в наличии, поступит "
        "2026-12-15 — https://shop.example/products/runner-sneakers"
    )

    unknown = "Продаёте айфоны?"
    reply = await ask(fake_telegram, 803, unknown)
    data = searched(fake_openai, unknown)
    assert data["found"] is False and data["products"] == []
    assert reply == "К сожалению, такого товара в магазине нет."
    assert "RUB" not in reply and "₽" not in reply


@pytest.mark.medusa
@pytest.mark.timeout(900)
async def test_the_same_against_the_real_medusa_engine(
    start_bot: StartBot,
    fake_telegram: FakeTelegramServer,
    fake_openai: FakeOpenAIServer,
    medusa_engine: MedusaEngine,
) -> None:
    medusa_engine.add_product(
        "Пуховик Arctic",
        "arctic-parka",
        "Зимний пуховик до −30 °C, натуральный пух.",
        "Размер",
        {"M": 3, "L": 0, "XL": 12},
        12990,
    )
    fake_openai.handler = tool_step(search_for, answer_from)
    await start_bot(
        SHOP_BACKEND="medusa",
        SHOP_API_URL=medusa_engine.url,
        SHOP_API_TOKEN=medusa_engine.api_key,
        SHOP_TIMEOUT_S="4",
        SHOP_PRODUCT_URL="https://shop.example/products/{handle}",
        PRODUCTS_EMBEDDER="builtin",
    )

    question = "Есть тёплая куртка на зиму?"
    reply = await ask(fake_telegram, 811, question)
    assert searched(fake_openai, question)["products"][0]["title"] == "Пуховик Arctic"
    assert "Пуховик Arctic (Размер M): 12990 RUB, осталось немного" in reply
    assert "Пуховик Arctic (Размер XL): 12990 RUB, в наличии" in reply
    assert "https://shop.example/products/arctic-parka" in reply

    sold_out = "А пуховик L есть?"
    reply = await ask(fake_telegram, 812, sold_out)
    assert reply == (
        "Пуховик Arctic (Размер L): 12990 RUB, нет в наличии — "
        "https://shop.example/products/arctic-parka"
    )

    unknown = "Продаёте айфоны?"
    reply = await ask(fake_telegram, 813, unknown)
    assert searched(fake_openai, unknown)["found"] is False
    assert reply == "К сожалению, такого товара в магазине нет."
    assert medusa_engine.api_key not in json.dumps(fake_openai.chat_requests)
