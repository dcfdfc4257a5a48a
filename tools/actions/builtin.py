"""The three built-in actions: cancel an order that has not shipped, open a return of a
delivered order's items inside the product's return window, and change the delivery
address of an order that has not shipped."""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping
from datetime import timedelta
from typing import Any

from pydantic import BaseModel, ConfigDict, Field, field_validator

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
from tools.shop.backend import ActionResult, OrderActions, ReturnLine, ShippingAddress
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


# -- change_address ------------------------------------------------------------------

# Characters an address never needs that the card's formatting would read as markup
# (bold, italics, code, links) or as a tag: refused, so the address on the card is
# exactly the words the customer gave — data, never formatting.
_MARKUP = re.compile(r"[*_`~\[\]<>\\|]")
_CONTROL = re.compile(r"[\x00-\x1f\x7f-\x9f\u200b-\u200f\u2028-\u202e\u2066-\u2069]")
_POSTAL = re.compile(r"[A-Za-z0-9][A-Za-z0-9 -]{0,10}")
_COUNTRY = re.compile(r"[A-Za-z]{2}")


def _plain_text(value: str | None) -> str | None:
    if value is None:
        return None
    value = " ".join(value.split())
    if _CONTROL.search(value):
        raise ValueError("contains invisible control characters; ask for it again in plain words")
    if _MARKUP.search(value):
        raise ValueError(
            "may not contain * _ ` ~ [ ] < > \\ or |; ask the customer to write the address "
            "in plain words"
        )
    return value or None


class NewAddress(BaseModel):
    """The new delivery address, parsed into its parts from the customer's words."""

    model_config = ConfigDict(extra="forbid")

    line1: str = Field(
        min_length=3, max_length=200, description="Street and house (building), as written."
    )
    line2: str | None = Field(
        default=None, max_length=100, description="Apartment, floor, entrance; omit if none."
    )
    city: str = Field(min_length=1, max_length=100, description="City, town or village.")
    postal_code: str = Field(
        min_length=2, max_length=11, description="Postal code (index), e.g. 101000."
    )
    country_code: str = Field(
        min_length=2, max_length=2, description="ISO 3166-1 alpha-2 country code, e.g. RU."
    )
    region: str | None = Field(
        default=None, max_length=100, description="Region, province or state, if given."
    )

    @field_validator("line1", "line2", "city", "region")
    @classmethod
    def _words(cls, value: str | None) -> str | None:
        return _plain_text(value)

    @field_validator("postal_code")
    @classmethod
    def _postal(cls, value: str) -> str:
        value = value.strip()
        if not _POSTAL.fullmatch(value):
            raise ValueError("is not a postal code (letters, digits, spaces, hyphens); ask again")
        return value.upper()

    @field_validator("country_code")
    @classmethod
    def _country(cls, value: str) -> str:
        if not _COUNTRY.fullmatch(value.strip()):
            raise ValueError("must be two letters (ISO 3166-1), e.g. RU or DE")
        return value.strip().upper()

    def shipping(self) -> ShippingAddress:
        return ShippingAddress(
            line1=self.line1,
            line2=self.line2,
            city=self.city,
            postal_code=self.postal_code,
            country_code=self.country_code,
            region=self.region,
        )


class AddressArguments(ActionArguments):
    address: NewAddress = Field(
        description=(
            "The new delivery address, each part from the customer's own words; ask for "
            "what is missing (street and house, city, postal code, country) — never guess."
        )
    )


async def _may_change_address(
    order: LiveOrder, _args: AddressArguments, _policy: Policy
) -> Decision:
    if order.status is OrderStatus.PROCESSING:
        return Allowed()
    if order.status is OrderStatus.CANCELLED:
        return Refused("order_cancelled", "This order is cancelled: there is nothing to deliver.")
    return Refused(
        "already_shipped",
        f"The delivery address can no longer be changed: the order's status is "
        f"{order.status.value} (only orders still being processed can be). Explain this; "
        "suggest contacting the carrier with the tracking number if there is one.",
    )


def _address_effect(order: LiveOrder, args: AddressArguments) -> Words:
    where = args.address.shipping().words()
    return {
        "ru": f"Изменить адрес доставки заказа {order.number} на: {where}?",
        "en": f"Change the delivery address of order {order.number} to: {where}?",
    }


def _address_done(order: LiveOrder, args: AddressArguments, _ref: str | None) -> Words:
    where = args.address.shipping().words()
    return {
        "ru": f"Адрес доставки заказа {order.number} изменён: {where}.",
        "en": f"The delivery address of order {order.number} is now: {where}.",
    }


async def _change_address(
    actions: OrderActions, order: LiveOrder, args: AddressArguments, operation_id: str
) -> ActionResult:
    return await actions.change_address(order, args.address.shipping(), operation_id)


CHANGE_ADDRESS: ActionDefinition[AddressArguments] = ActionDefinition(
    name="change_address",
    description=(
        "Propose changing the delivery address of one of the customer's orders that has "
        "not shipped yet (still being processed), to the new address the customer gave, "
        "parsed into its parts. Nothing changes yet: the customer gets a card showing "
        "the new address in full and confirms or declines it with its buttons. Never say "
        "the address is changed before that."
    ),
    arguments_model=AddressArguments,
    check=_may_change_address,
    effect=_address_effect,
    done=_address_done,
    execute=_change_address,
)

BUILT_IN_ACTIONS: tuple[ActionDefinition[Any], ...] = (
    CANCEL_ORDER,
    REQUEST_RETURN,
    CHANGE_ADDRESS,
)
