"""The demo shop never mixes with the shop's own data: marked demo rows, removed by the
shop's first import, never seeded next to or after the shop's own data."""

from __future__ import annotations

from pathlib import Path

import aiosqlite
import pytest

from storage.database import Database, open_database
from storage.migrations import apply_migrations, load_migrations
from storage.shop import OrderUpsert, ShopRepository
from tools.shop.demo import DEMO_ORDER_IDS, DemoChange, seed_demo_shop, settle_demo_shop


async def counts(db: Database) -> tuple[int, int, int]:
    rows = []
    for table in ("orders", "return_policies", "faq_entries"):
        row = await db.fetch_one(f"SELECT COUNT(*) FROM {table}")
        rows.append(int(row[0]) if row else 0)
    return rows[0], rows[1], rows[2]


async def test_an_import_removes_the_demo_and_it_is_never_seeded_again(db: Database) -> None:
    shop = ShopRepository(db)
    assert await seed_demo_shop(shop) is True
    counted = await shop.import_shop_data(
        orders=[OrderUpsert("1234", {"status": "processing"})], policies=[], texts={}
    )
    assert (counted.demo_removed.orders, counted.demo_removed.policies) == (4, 3)
    assert counted.demo_removed.faq == 3
    assert await counts(db) == (1, 0, 0)
    assert await shop.get_order("8041") is None
    assert await shop.find_return_policy("наушники") is None
    assert await seed_demo_shop(shop) is False


async def test_an_import_of_nothing_still_retires_the_demo(db: Database) -> None:
    """`{"faq": []}` leaves no row of the shop's own, yet the owner has taken over."""
    shop = ShopRepository(db)
    await seed_demo_shop(shop)
    await shop.import_shop_data(orders=[], policies=[], texts={}, faq=[])
    assert await counts(db) == (0, 0, 0)
    assert await settle_demo_shop(shop, seed=True) is DemoChange.NONE
    assert await counts(db) == (0, 0, 0)


async def test_remove_demo_keeps_the_shops_own_rows(db: Database) -> None:
    shop = ShopRepository(db)
    await seed_demo_shop(shop)
    async with db.transaction() as tx:  # a shop's row written next to the demo (older code)
        await tx.execute("INSERT INTO orders(order_id, status) VALUES ('1234', 'delivered')")
    removed = await shop.remove_demo()
    assert (removed.orders, removed.policies, removed.faq) == (4, 3, 3)
    assert await counts(db) == (1, 0, 0)
    assert (await shop.remove_demo()).total == 0


async def test_start_up_removes_a_demo_left_next_to_the_shops_own_data(db: Database) -> None:
    shop = ShopRepository(db)
    assert await settle_demo_shop(shop, seed=True) is DemoChange.SEEDED
    assert await settle_demo_shop(shop, seed=True) is DemoChange.NONE  # already there
    async with db.transaction() as tx:
        await tx.execute("INSERT INTO orders(order_id, status) VALUES ('1234', 'delivered')")
    assert await settle_demo_shop(shop, seed=False) is DemoChange.REMOVED
    assert await counts(db) == (1, 0, 0)


async def test_seed_demo_data_off_seeds_nothing(db: Database) -> None:
    assert await settle_demo_shop(ShopRepository(db), seed=False) is DemoChange.NONE
    assert await counts(db) == (0, 0, 0)


@pytest.mark.sqlite_only
async def test_the_migration_marks_the_demo_rows_an_older_version_seeded(tmp_path: Path) -> None:
    """A database seeded and then imported into by the code before demo rows were marked:
    the demo rows are recognised by their content, the shop's own 8041 is not."""
    known = load_migrations()
    marked = next(m.version for m in known if m.name == "demo_data")
    before = [m for m in known if m.version < marked]
    # written the old way: demo rows unmarked, and the shop's own 8041 over the demo one
    legacy = tmp_path / "legacy.sqlite3"
    async with aiosqlite.connect(legacy) as conn:
        await apply_migrations(conn, before)
    db = await open_database(legacy, migrate=False)
    async with db.transaction() as tx:
        await tx.execute(
            "INSERT INTO orders(order_id, status, pickup_point) VALUES"
            " ('7718', 'delivered', 'Пункт выдачи на ул. Садовой, 12 (ежедневно 10:00–21:00)'),"
            " ('8041', 'delivered', 'ПВЗ, ул. Ленина, 1')"
        )
        await tx.execute(
            "INSERT INTO return_policies(product, display_name, return_days, conditions) VALUES"
            " ('наушники', 'Наушники', 7,"
            " 'Возврат возможен при сохранении упаковки и товарного вида.')"
        )
    await db.close()
    db = await open_database(legacy)
    try:
        rows = await db.fetch_all("SELECT order_id, demo FROM orders ORDER BY order_id")
        assert [tuple(r) for r in rows] == [("7718", 1), ("8041", 0)]
        assert [tuple(r) for r in await db.fetch_all("SELECT demo FROM return_policies")] == [(1,)]
        shop = ShopRepository(db)
        assert await settle_demo_shop(shop, seed=True) is DemoChange.REMOVED
        assert await shop.get_order("7718") is None
        assert await shop.get_order("8041") is not None  # the shop's own, kept
        assert {"7718", "8041"} <= set(DEMO_ORDER_IDS)
    finally:
        await db.close()
