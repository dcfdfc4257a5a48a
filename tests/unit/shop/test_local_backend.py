"""The local backend: imported orders as `LiveOrder`s, identity unfiltered, `public`
only for an order without any owner."""

from __future__ import annotations

from typing import Any

from storage.database import Database
from storage.shop import OrderUpsert, ShopRepository
from tools.shop.backends.local import LocalBackend
from tools.shop.orders import UNKNOWN_TIME
from tools.shop.rules import OrderStatus


async def add(shop: ShopRepository, order_id: str, **values: Any) -> None:
    await shop.import_shop_data(
        orders=[OrderUpsert(order_id=order_id, values=values)], policies=[], texts={}
    )


async def test_identity_is_returned_unfiltered_and_public_only_without_owner(
    db: Database,
) -> None:
    shop = ShopRepository(db)
    await add(shop, "1111", status="in_transit", owner_telegram_id=42)
    await add(shop, "2222", status="delivered", owner_phone="+79123456789")
    await add(
        shop, "3333", status="ready_for_pickup", pickup_point="ПВЗ", expected_date="2026-12-03"
    )
    backend = LocalBackend(shop)

    by_id = await backend.get_order("1111")
    assert by_id is not None and by_id.customer_telegram_id == 42 and not by_id.public
    assert by_id.status is OrderStatus.IN_TRANSIT and by_id.updated_at == UNKNOWN_TIME
    by_phone = await backend.get_order("2222")
    assert by_phone is not None and by_phone.customer_phone == "+79123456789"
    assert not by_phone.public
    public = await backend.get_order("3333")
    assert public is not None and public.public
    assert public.delivery is not None and public.delivery.pickup_point == "ПВЗ"
    assert str(public.delivery.eta) == "2026-12-03"
    assert await backend.get_order("4444") is None

    mine = await backend.orders_for_phone("+79123456789")
    assert [order.number for order in mine] == ["2222"]
    assert await backend.orders_for_phone("+79990000000") == []
