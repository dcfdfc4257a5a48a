"""The local backend's `OrderActions`: requests to the shop's people, then the bot's copy.

With imported data the bot cannot change the shop: `LocalRequestActions` (what a
customer's ✅ reaches) only opens a request the admins answer with Done or Refuse
(services/actions.py `ActionService.answer`). When a person confirms Done, the bot's own
`orders` table follows through `LocalOrderActions`:

- cancel: a conditional update (processing → cancelled) recorded under the operation id
  in the same transaction, so a repeated call with the same id answers `ActionDone` and
  changes nothing (storage/actions.py `LocalActionStore`);
- return: a row of `order_returns` keyed by the operation id; its reference is "R-" and
  the id's first 8 characters;
- delivery address: the imported orders hold no address, so the person's Done is the
  whole of it (nothing in the bot's copy changes).

`DirectoryActions` puts a backend's actions next to the `ShopDirectory` the order tools
read through: the mechanism (tools/actions/) reads proposals through the directory,
exactly as order lookups do, re-checks on ✅ with a fresh read of the backend, and after
an action forgets the directory's cached copy so the next question sees the new state.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from datetime import UTC, datetime

from storage.actions import ActionRepository, LocalActionStore
from tools.shop.backend import (
    CANCEL_ORDER,
    CHANGE_ADDRESS,
    REQUEST_RETURN,
    ActionDone,
    ActionRejected,
    ActionRequested,
    ActionResult,
    OrderActions,
    ReturnLine,
    ShippingAddress,
)
from tools.shop.directory import ShopDirectory
from tools.shop.orders import LiveOrder, OrderNumberRule

LOCAL_ACTIONS = frozenset({CANCEL_ORDER, REQUEST_RETURN, CHANGE_ADDRESS})


class LocalRequestActions:
    """`OrderActions` of SHOP_BACKEND=local: each action a request to the shop's people,
    opened once per operation id."""

    def __init__(self, requests: ActionRepository) -> None:
        self._requests = requests

    async def supported_actions(self) -> frozenset[str]:
        return LOCAL_ACTIONS

    async def cancel_order(self, order: LiveOrder, operation_id: str) -> ActionResult:
        await self._requests.open_request(operation_id, order.number)
        return ActionRequested()

    async def request_return(
        self, order: LiveOrder, lines: Sequence[ReturnLine], reason: str, operation_id: str
    ) -> ActionResult:
        await self._requests.open_request(operation_id, order.number)
        return ActionRequested()

    async def change_address(
        self, order: LiveOrder, address: ShippingAddress, operation_id: str
    ) -> ActionResult:
        await self._requests.open_request(operation_id, order.number)
        return ActionRequested()


class LocalOrderActions:
    """The bot's copy of the orders once a person confirmed Done."""

    def __init__(self, store: LocalActionStore) -> None:
        self._store = store

    async def supported_actions(self) -> frozenset[str]:
        return LOCAL_ACTIONS

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

    async def change_address(
        self, order: LiveOrder, address: ShippingAddress, operation_id: str
    ) -> ActionResult:
        return ActionDone()  # the person changed it in the shop; the copy holds no address


class DirectoryActions:
    """A shop's reads (its `ShopDirectory`) and actions, as tools/actions/ needs them
    (`tools.actions.definition.ActionShop`)."""

    def __init__(self, directory: ShopDirectory, actions: OrderActions) -> None:
        self._directory = directory
        self._actions = actions

    @property
    def number_rule(self) -> OrderNumberRule:
        return self._directory.number_rule

    async def get_order(self, number: str) -> LiveOrder | None:
        return await self._directory.get_order(number)

    async def read_fresh(self, number: str) -> LiveOrder | None:
        return await self._directory.get_order(number, fresh=True)

    async def supported_actions(self) -> frozenset[str]:
        return await self._actions.supported_actions()

    async def cancel_order(self, order: LiveOrder, operation_id: str) -> ActionResult:
        try:
            return await self._actions.cancel_order(order, operation_id)
        finally:
            self._directory.forget_order(order.number)

    async def request_return(
        self, order: LiveOrder, lines: Sequence[ReturnLine], reason: str, operation_id: str
    ) -> ActionResult:
        try:
            return await self._actions.request_return(order, lines, reason, operation_id)
        finally:
            self._directory.forget_order(order.number)

    async def change_address(
        self, order: LiveOrder, address: ShippingAddress, operation_id: str
    ) -> ActionResult:
        try:
            return await self._actions.change_address(order, address, operation_id)
        finally:
            self._directory.forget_order(order.number)
