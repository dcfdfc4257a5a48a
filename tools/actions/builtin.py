"""The two built-in actions: cancel an order that has not shipped, and open a return of a
delivered order's items inside the product's return window."""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from datetime import timedelta
from typing import Any

from pydantic import BaseModel, ConfigDict, Field

from tools.actions.definition import (
    ActionArguments,
    ActionDefinition,
    Allowed,
    Decision,
    Policy,
    Refused,
    Words,
    items_words,
)
from tools.shop.backend import ActionResult, OrderActions, ReturnLine
from tools.shop.orders import LiveOrder, OrderItem
from tools.shop.rules import OrderStatus, normalise_product_name

# -- cancel_order --------------------------------------------------------------------


class CancelArguments(ActionArguments):
    pass


async def _may_cancel(order: LiveOrder, _args: CancelArguments, _policy: Policy) -> Decision:
    if order.status is OrderStatus.PROCESSING:
        return Allowed()
    if order.status is OrderStatus.CANCELLED:
        return Refused("already_cancelled", "This order is already cancelled.")
    return Refused(
        "not_cancellable",
        f"This order can no longer be cancelled: its status is {order.status.value} (only "
        "orders still being processed can be). Explain this; a return may be possible "
        "once it is delivered.",
    )


def _cancel_effect(order: LiveOrder, _args: CancelArguments) -> Words:
    what = items_words(order)
    tail = f": {what}" if what else ""
    return {
        "ru": f"Отменить заказ {order.number}{tail}?",
        "en": f"Cancel order {order.number}{tail}?",
    }


def _cancel_done(order: LiveOrder, _args: CancelArguments, _ref: str | None) -> Words:
    return {"ru": f"Заказ {order.number} отменён.", "en": f"Order {order.number} is cancelled."}


async def _cancel(
    actions: OrderActions, order: LiveOrder, _args: CancelArguments, operation_id: str
) -> ActionResult:
    return await actions.cancel_order(order, operation_id)


CANCEL_ORDER: ActionDefinition[CancelArguments] = ActionDefinition(
    name="cancel_order",
    description=(
        "Propose cancelling one of the customer's orders (allowed while it is still being "
        "processed). Call it only when the customer asked to cancel. Nothing is cancelled "
        "yet: the customer gets a card stating the exact effect and confirms or declines "
        "it with its buttons. Never say the order is cancelled before that."
    ),
    arguments_model=CancelArguments,
    check=_may_cancel,
    effect=_cancel_effect,
    done=_cancel_done,
    execute=_cancel,
)


# -- request_return ------------------------------------------------------------------


class ReturnItem(BaseModel):
    model_config = ConfigDict(extra="forbid")

    name: str = Field(
        min_length=1, max_length=200, description="The product, as named in the order."
    )
    quantity: int = Field(ge=1, le=1000, description="How many of it to return.")


class ReturnArguments(ActionArguments):
    items: list[ReturnItem] = Field(
        min_length=1, max_length=20, description="The items to return and how many of each."
    )
    reason: str = Field(
        min_length=1, max_length=500, description="The customer's reason, in their words."
    )


def _lines(order: LiveOrder, args: ReturnArguments) -> list[ReturnLine] | Refused:
    """The order's lines the items name; a shop whose orders list no items (the local
    demo) returns the products as named."""
    lines: list[ReturnLine] = []
    for wanted in args.items:
        key = normalise_product_name(wanted.name)
        if not order.items:
            lines.append(
                ReturnLine(OrderItem(name=wanted.name, quantity=wanted.quantity), wanted.quantity)
            )
            continue
        match = next((i for i in order.items if normalise_product_name(i.name) == key), None)
        if match is None or wanted.quantity > match.quantity:
            return Refused(
                "item_not_in_order",
                f"The order has no {wanted.quantity} × {wanted.name!r}; its items are: "
                + ", ".join(f"{i.name} ×{i.quantity}" for i in order.items),
            )
        lines.append(ReturnLine(match, wanted.quantity))
    return lines


def being_returned(confirmed: Iterable[str]) -> dict[str, int]:
    """What confirmed returns (their arguments, JSON) already take back: normalised
    product name → quantity, whichever card opened them."""
    taken: dict[str, int] = {}
    for stored in confirmed:
        for item in ReturnArguments.model_validate_json(stored).items:
            key = normalise_product_name(item.name)
            taken[key] = taken.get(key, 0) + item.quantity
    return taken


def _returned_already(
    order: LiveOrder, args: ReturnArguments, taken: Mapping[str, int]
) -> Refused | None:
    """A return of what is already being returned: each item once, keyed by order and
    product; where the order lists no items, any second return of a product is refused."""
    for wanted in args.items:
        key = normalise_product_name(wanted.name)
        already = taken.get(key, 0)
        if not already:
            continue
        match = next((i for i in order.items if normalise_product_name(i.name) == key), None)
        left = 0 if match is None else match.quantity - already
        if wanted.quantity > left:
            return Refused(
                "already_returning",
                f"{already} × {wanted.name!r} of this order is already being returned (a "
                f"return the customer confirmed earlier); {max(left, 0)} more can be. Explain "
                "this; do not open it again.",
            )
    return None


async def _may_return(order: LiveOrder, args: ReturnArguments, policy: Policy) -> Decision:
    if order.status is not OrderStatus.DELIVERED:
        return Refused(
            "not_delivered",
            f"A return can be opened only for a delivered order; this one is {order.status.value}.",
        )
    lines = _lines(order, args)
    if isinstance(lines, Refused):
        return lines
    again = _returned_already(order, args, await policy.returning(order.number))
    if again is not None:
        return again
    delivered = order.delivered_at or order.updated_at
    for line in lines:
        found = await policy.shop.find_return_policy(normalise_product_name(line.item.name))
        if found is None:
            return Refused(
                "no_return_policy",
                f"The shop has no return policy for {line.item.name!r}: a return cannot be "
                "opened here; suggest contacting the shop.",
            )
        if policy.now > delivered + timedelta(days=found.return_days):
            return Refused(
                "outside_return_window",
                f"{found.display_name} can be returned within {found.return_days} days of "
                "delivery, and that time has passed for this order.",
            )
    return Allowed()


def _return_effect(order: LiveOrder, args: ReturnArguments) -> Words:
    what = ", ".join(f"{i.name} ×{i.quantity}" for i in args.items)
    return {
        "ru": f"Оформить возврат по заказу {order.number}: {what}?",
        "en": f"Open a return for order {order.number}: {what}?",
    }


def _return_done(order: LiveOrder, _args: ReturnArguments, reference: str | None) -> Words:
    ref_ru = f" (номер {reference})" if reference else ""
    ref_en = f" (number {reference})" if reference else ""
    return {
        "ru": f"Возврат по заказу {order.number} оформлен{ref_ru}.",
        "en": f"A return for order {order.number} is open{ref_en}.",
    }


async def _open_return(
    actions: OrderActions, order: LiveOrder, args: ReturnArguments, operation_id: str
) -> ActionResult:
    lines = _lines(order, args)
    assert not isinstance(lines, Refused)  # checked just before
    return await actions.request_return(order, lines, args.reason, operation_id)


REQUEST_RETURN: ActionDefinition[ReturnArguments] = ActionDefinition(
    name="request_return",
    description=(
        "Propose opening a return of items of one of the customer's delivered orders, with "
        "the customer's reason. Allowed inside the product's return window. Nothing is "
        "opened yet: the customer confirms or declines a card with the exact effect. Ask "
        "for the items and the reason first if the customer did not give them."
    ),
    arguments_model=ReturnArguments,
    check=_may_return,
    effect=_return_effect,
    done=_return_done,
    execute=_open_return,
)

BUILT_IN_ACTIONS: tuple[ActionDefinition[Any], ...] = (
    CANCEL_ORDER,
    REQUEST_RETURN,
)
