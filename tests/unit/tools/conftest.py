"""Fixtures for tool tests: a real shop repository on a SQLite file, caller contexts."""

from __future__ import annotations

from collections.abc import Callable
from datetime import UTC, datetime

import pytest

from storage.database import Database
from storage.shop import ORDER_COLUMNS, OrderUpsert, ReturnPolicyUpsert, ShopRepository
from tools.base import Caller, ToolContext
from tools.shop.demo import DEMO_FAQ, DEMO_RETURN_POLICIES, demo_orders


class FakeClock:
    """Wall-clock seconds that only move when a test says so."""

    def __init__(self, start: float = 1_800_000_000.0) -> None:
        self.now = start

    def __call__(self) -> float:
        return self.now

    def advance(self, seconds: float) -> None:
        self.now += seconds


@pytest.fixture
def clock() -> FakeClock:
    return FakeClock()


async def import_demo_as_own_data(shop: ShopRepository) -> None:
    """The demo's orders, policies and FAQ imported as the shop's own, so a test can add
    its own orders (an import) next to them; an import would remove seeded demo rows."""
    await shop.import_shop_data(
        orders=[
            OrderUpsert(
                order_id=order.order_id,
                values={
                    column: getattr(order, column)
                    for column in ORDER_COLUMNS
                    if getattr(order, column) is not None
                },
            )
            for order in demo_orders(datetime.now(UTC))
        ],
        policies=[
            ReturnPolicyUpsert(
                product=p.product,
                display_name=p.display_name,
                return_days=p.return_days,
                conditions=p.conditions,
                aliases=p.aliases,
            )
            for p in DEMO_RETURN_POLICIES
        ],
        texts={},
        faq=DEMO_FAQ,
    )


@pytest.fixture
async def shop(db: Database) -> ShopRepository:
    repository = ShopRepository(db)
    await import_demo_as_own_data(repository)
    return repository


@pytest.fixture
def context_for(shop: ShopRepository) -> Callable[..., ToolContext]:
    def make(
        user_id: int = 1001, chat_id: int | None = None, *, sender_is_chat: bool = False
    ) -> ToolContext:
        """A caller in their private chat with the bot, or in the chat `chat_id` (a group)."""
        chat = user_id if chat_id is None else chat_id
        caller = Caller(
            key=user_id,
            chat_id=chat,
            is_chat=sender_is_chat,
            private_chat=chat == user_id and not sender_is_chat,
        )
        return ToolContext(caller=caller, shop=shop, turn_id="turn-1", session_id=7)

    return make
