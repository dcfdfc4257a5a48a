"""Fixtures for tool tests: a real shop repository on a SQLite file, caller contexts."""

from __future__ import annotations

from collections.abc import Callable

import pytest

from storage.database import Database
from storage.shop import ShopRepository
from tools.base import Caller, ToolContext
from tools.shop.demo import seed_demo_shop


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


@pytest.fixture
async def shop(db: Database) -> ShopRepository:
    repository = ShopRepository(db)
    await seed_demo_shop(repository)
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
