"""The local backend's side of issue 32: orders read from the bot's own database as
`LiveOrder`s, and `OrderActions` carried out on them.

- cancel: a conditional update (processing → cancelled) recorded under the operation id
  in the same transaction, so a repeated call with the same id answers `ActionDone` and
  changes nothing (storage/actions.py `LocalActionStore`);
- return: a row of `order_returns` keyed by the operation id; its reference is "R-" and
  the id's first 8 characters.

`get_order` maps the stored row: no items or total (the import document has none),
`delivered_at` is the last change of a delivered order. Until the live-shop backends
(issue 31) land, this is how the actions read orders; then the directory over
SHOP_BACKEND replaces it.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from datetime import UTC, datetime

from storage.actions import LocalActionStore
from storage.shop import ShopRepository
from storage.shop_records import OrderRecord
from tools.shop.backend import (
    ActionDone,
    ActionRejected,
    ActionResult,
    ReturnLine,
)
from tools.shop.orders import LiveOrder
from tools.shop.rules import OrderStatus


def _when(text: str | None) -> datetime:
    if not text:
        return datetime.fromtimestamp(0, UTC)
    try:
        moment = datetime.fromisoformat(text)
    except ValueError:
        return datetime.fromtimestamp(0, UTC)
    return moment if moment.tzinfo is not None else moment.replace(tzinfo=UTC)


def live_order(record: OrderRecord) -> LiveOrder:
    status = OrderStatus(record.status)
    updated = _when(record.updated_at)
    return LiveOrder(
        number=record.order_id,
        status=status,
        updated_at=updated,
        customer_phone=record.owner_phone,
        customer_telegram_id=record.owner_telegram_id,
        delivered_at=updated if status is OrderStatus.DELIVERED else None,
        public=record.owner_telegram_id is None and record.owner_phone is None,
    )


class LocalShop:
    """Reads and actions of the local backend."""

    name = "local"

    def __init__(self, shop: ShopRepository, store: LocalActionStore) -> None:
        self._shop = shop
        self._store = store

    async def get_order(self, number: str) -> LiveOrder | None:
        record = await self._shop.get_order(number)
        return None if record is None else live_order(record)

    async def cancel_order(self, order: LiveOrder, operation_id: str) -> ActionResult:
        now = datetime.now(UTC).isoformat(timespec="minutes")
        outcome = await self._store.cancel(operation_id, order.number, updated_at=now)
        if outcome == "done":
            return ActionDone()
        return ActionRejected("not_cancellable" if outcome == "not_processing" else "not_found")

    async def request_return(
        self, order: LiveOrder, lines: Sequence[ReturnLine], reason: str, operation_id: str
    ) -> ActionResult:
        stored = json.dumps(
            [{"name": line.item.name, "quantity": line.quantity} for line in lines],
            ensure_ascii=False,
        )
        outcome = await self._store.add_return(
            operation_id, order.number, lines=stored, reason=reason
        )
        if outcome == "done":
            return ActionDone(reference=f"R-{operation_id[:8].upper()}")
        return ActionRejected("not_found")
