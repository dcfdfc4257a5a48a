"""What the single SQLite writer gave the repositories for free, kept on PostgreSQL.

On SQLite every write transaction runs alone. On PostgreSQL several instances (and the
pool of one) run them side by side, so a repository that reads and then writes on what
it read takes `Tx.lock(key)`. Each test holds the key from a second session, starts two
callers, sees on the server that both wait for the key, lets go, and checks that the
outcome is the one a serial run gives — e.g. the per-user lookup bound is not exceeded.
Without the lock neither caller would wait and the test fails at the wait.
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Awaitable, Callable
from typing import Any, TypeVar

import asyncpg
import pytest

from storage.conversations import ConversationRepository
from storage.database import Database, open_database
from storage.handoffs import HandoffRepository
from storage.shop import OrderRecord, ReturnPolicyRecord, ShopRepository
from tests.pg import WAITING_ON_ADVISORY_LOCK, until_server_shows

pytestmark = pytest.mark.postgres

T = TypeVar("T")


@pytest.fixture
async def pg(pg_url: str) -> AsyncIterator[Database]:
    database = await open_database(pg_url)
    try:
        yield database
    finally:
        await database.close()


async def both_wait_for(
    url: str, key: str, first: Callable[[], Awaitable[T]], second: Callable[[], Awaitable[T]]
) -> list[T]:
    """Run both while another session holds `key`; release it once both wait for it."""
    holder: Any = await asyncpg.connect(url)
    try:
        await holder.execute("SELECT pg_advisory_lock(hashtextextended($1, 0))", key)
        tasks = [asyncio.create_task(first()), asyncio.create_task(second())]
        await until_server_shows(holder, f"SELECT ({WAITING_ON_ADVISORY_LOCK}) = 2")
        await holder.execute("SELECT pg_advisory_unlock(hashtextextended($1, 0))", key)
        return list(await asyncio.gather(*tasks))
    finally:
        await holder.close()


async def test_one_user_in_two_chats_cannot_pass_the_lookup_bound(
    pg: Database, pg_url: str
) -> None:
    shop = ShopRepository(pg)

    def lookup(order_id: str) -> Callable[[], Awaitable[bool]]:
        return lambda: shop.record_order_lookup(
            user_id=5, order_id=order_id, now=100.0, since=0.0, max_distinct=1
        )

    allowed = await both_wait_for(pg_url, "lookups:5", lookup("1001"), lookup("1002"))

    assert sorted(allowed) == [False, True]
    row = await pg.fetch_one("SELECT count(*) FROM order_lookups WHERE user_id = 5")
    assert row is not None and row[0] == 1


async def test_two_instances_seeding_at_once_seed_once(pg: Database, pg_url: str) -> None:
    shop = ShopRepository(pg)
    orders = [OrderRecord(order_id="1001", status="processing")]
    policies = [ReturnPolicyRecord("shoes", "Shoes", 14, "unworn", aliases=("boots",))]

    def seed() -> Awaitable[bool]:
        return shop.seed_demo(orders=orders, policies=policies)

    seeded = await both_wait_for(pg_url, "shop-data", seed, seed)

    assert sorted(seeded) == [False, True]  # and no primary key violation
    row = await pg.fetch_one("SELECT count(*) FROM return_policy_aliases")
    assert row is not None and row[0] == 1


async def test_a_chat_gets_one_session_when_two_writers_open_it(pg: Database, pg_url: str) -> None:
    conversations = ConversationRepository(pg)

    def open_session() -> Awaitable[int]:
        return conversations.open_session(77)

    first, second = await both_wait_for(pg_url, "chat:77", open_session, open_session)

    assert first == second  # the second found the first's session: no unique violation


async def test_history_from_a_handoff_and_a_turn_share_the_session(
    pg: Database, pg_url: str
) -> None:
    handoffs = HandoffRepository(pg)
    conversations = ConversationRepository(pg)

    async def add() -> int:
        await handoffs.add_history(77, role="user", content="hello", key="handoff:1")
        session = await conversations.current_session(77)
        assert session is not None
        return session

    def open_session() -> Awaitable[int]:
        return conversations.open_session(77)

    from_history, opened = await both_wait_for(pg_url, "chat:77", add, open_session)

    assert from_history == opened


async def test_one_open_handoff_when_two_open_it(pg: Database, pg_url: str) -> None:
    handoffs = HandoffRepository(pg)

    async def start() -> tuple[int, bool]:
        handoff, new = await handoffs.open(88, source="command", reason=None)
        return handoff.id, new

    (first_id, first_new), (second_id, second_new) = await both_wait_for(
        pg_url, "handoff:88", start, start
    )

    assert first_id == second_id
    assert sorted([first_new, second_new]) == [False, True]
