"""ShopRepository.seed_demo: rows go only into empty tables of a database without the shop's
own data, as given, all at once."""

from __future__ import annotations

from storage.database import Database
from storage.shop import OrderRecord, ReturnPolicyRecord, ShopRepository

ORDER = OrderRecord(
    order_id="0001",
    status="processing",
    owner_telegram_id=5,
    updated_at="2026-11-29T10:00:00+03:00",
    pickup_point="point",
    expected_date="2026-12-01",
)
POLICY = ReturnPolicyRecord(
    product="lamp",
    display_name="Lamp",
    return_days=3,
    conditions="boxed",
    aliases=("lamps", "light"),
)


async def test_rows_are_stored_exactly_as_given(db: Database) -> None:
    shop = ShopRepository(db)
    assert await shop.seed_demo(orders=[ORDER], policies=[POLICY]) is True
    assert await shop.get_order("0001") == ORDER
    assert await shop.find_return_policy("light") == POLICY


async def test_tables_with_rows_are_left_alone(db: Database) -> None:
    shop = ShopRepository(db)
    await shop.seed_demo(orders=[ORDER], policies=[])
    other = OrderRecord(order_id="0002", status="delivered")
    assert await shop.seed_demo(orders=[other], policies=[POLICY]) is True  # policies only
    assert await shop.get_order("0002") is None
    assert await shop.find_return_policy("lamp") == POLICY
    assert await shop.seed_demo(orders=[other], policies=[POLICY]) is False


async def test_nothing_to_insert_is_reported_as_nothing_inserted(db: Database) -> None:
    assert await ShopRepository(db).seed_demo(orders=[], policies=[]) is False
