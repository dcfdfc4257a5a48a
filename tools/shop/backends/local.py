"""`SHOP_BACKEND=local` (the default and the demo): orders from the bot's own database.

The orders and products are the ones `import-data` wrote (or the demo's), read through
storage/shop.py. Nothing is live: the data is as fresh as the last import. The catalogue
is parsed once per import (`ShopRepository.products_version`). The only
backend that sets `LiveOrder.public`: an order without an owner id and without an owner
phone is the demo's public order, shown to anyone (tools/shop/access.py).
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from datetime import date, datetime
from decimal import Decimal
from typing import Any

from pydantic import TypeAdapter

from storage.shop import ShopRepository
from storage.shop_records import OrderRecord
from tools.shop.orders import (
    FOUR_DIGITS,
    UNKNOWN_TIME,
    Delivery,
    LiveOrder,
    Money,
    OrderItem,
    OrderNumberRule,
)
from tools.shop.products import Product, Variant
from tools.shop.rules import OrderStatus

_DATETIME = TypeAdapter(datetime)
_DATE = TypeAdapter(date)
# at most this many orders for one phone (the newest)
PHONE_ORDERS_LIMIT = 20


class LocalBackend:
    name = "local"
    reads_live: tuple[str, ...] = ()

    def __init__(self, shop: ShopRepository, number_rule: OrderNumberRule = FOUR_DIGITS) -> None:
        self._shop = shop
        self.number_rule = number_rule
        self._catalogue: tuple[tuple[int, int], tuple[Product, ...]] | None = None

    async def get_order(self, number: str) -> LiveOrder | None:
        record = await self._shop.get_order(number)
        return None if record is None else live_order(record)

    async def orders_for_phone(self, phone: str) -> Sequence[LiveOrder]:
        records = await self._shop.orders_for_phone(phone, limit=PHONE_ORDERS_LIMIT)
        return [live_order(record) for record in records]

    async def catalogue(self) -> tuple[Product, ...]:
        """The imported products: the same tuple until the next import."""
        version = await self._shop.products_version()
        if self._catalogue is None or self._catalogue[0] != version:
            records = await self._shop.products()
            parsed = tuple(product_of(r.product_id, json.loads(r.document)) for r in records)
            self._catalogue = (version, parsed)
        return self._catalogue[1]

    async def check(self) -> None:
        """Nothing to probe: the database is opened (and checked) before the backend."""

    def order_actions(self) -> None:
        """The bot's own (tools/shop/backends/local_actions.py), over its database."""
        return None

    async def aclose(self) -> None:
        """The database is closed by its owner."""


def _delivery(record: OrderRecord) -> Delivery | None:
    delivery = Delivery(
        carrier=record.carrier,
        tracking_number=record.tracking_number,
        tracking_url=record.tracking_url,
        eta=None if record.expected_date is None else _DATE.validate_python(record.expected_date),
        pickup_point=record.pickup_point,
    )
    return None if delivery == Delivery() else delivery


def _items(record: OrderRecord) -> tuple[OrderItem, ...]:
    """The stored items (JSON written by the import: a name and a quantity each)."""
    if record.items is None:
        return ()
    return tuple(
        OrderItem(name=i["name"], quantity=i["quantity"]) for i in json.loads(record.items)
    )


def live_order(record: OrderRecord) -> LiveOrder:
    """A stored order as a `LiveOrder`, as the live backends build theirs; storage keeps
    dates as ISO text, the items as JSON and the total as decimal text."""
    total = None
    if record.total_amount is not None and record.total_currency is not None:
        total = Money(Decimal(record.total_amount), record.total_currency)
    return LiveOrder(
        number=record.order_id,
        status=OrderStatus(record.status),
        updated_at=(
            UNKNOWN_TIME
            if record.updated_at is None
            else _DATETIME.validate_python(record.updated_at)
        ),
        customer_phone=record.owner_phone,
        customer_telegram_id=record.owner_telegram_id,
        items=_items(record),
        delivery=_delivery(record),
        total=total,
        public=record.owner_telegram_id is None and record.owner_phone is None,
    )


def product_of(product_id: str, document: dict[str, Any]) -> Product:
    """A stored product (the import document's form, validated when imported)."""
    return Product(
        product_id=product_id,
        title=document["title"],
        description=document.get("description", ""),
        url=document.get("url"),
        variants=tuple(_variant(v) for v in document["variants"]),
    )


def _variant(raw: dict[str, Any]) -> Variant:
    price = raw.get("price")
    restock = raw.get("restock_date")
    return Variant(
        variant_id=raw["variant_id"],
        title=raw.get("title") or "",
        options=tuple((str(k), str(v)) for k, v in (raw.get("options") or {}).items()),
        price=None if price is None else Money(Decimal(price["amount"]), price["currency"]),
        stock=raw.get("stock"),
        in_stock=raw.get("in_stock"),
        restock_date=None if restock is None else _DATE.validate_python(restock),
    )
