"""What every shop backend returns: plain order data in the bot's vocabulary, no rules.

A backend (tools/shop/backends/) reads an order from wherever the shop keeps it and maps
it onto `LiveOrder`; it never decides who may see it (tools/shop/access.py does, once for
every backend), so a backend can return less identity, never a wider view. An order
number is read with the backend's `OrderNumberRule`, which also tells the model what a
number looks like.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from datetime import UTC, date, datetime
from decimal import Decimal

from tools.shop.rules import OrderStatus


@dataclass(frozen=True, slots=True)
class OrderNumberRule:
    """What an order number looks like in one shop: a whole-match `pattern` after the
    spelling is normalised (surrounding spaces, an optional `prefix` such as Shopify's
    "#"), an `example` and a `description` the model reads in the tool schema."""

    pattern: str
    example: str
    description: str
    prefix: str = ""

    def normalise(self, value: str) -> str:
        """The number as the backend looks it up; ValueError (shown to the model) if it
        does not look like one of this shop's numbers."""
        number = value.strip()
        if self.prefix and number.startswith(self.prefix):
            number = number[len(self.prefix) :].strip()
        if not number.isascii() or re.fullmatch(self.pattern, number) is None:
            raise ValueError(f"must be {self.description}, e.g. {self.example}")
        return number

    def accepts(self, value: str) -> bool:
        """Whether `value` is one of this shop's numbers (as `normalise` reads it)."""
        try:
            self.normalise(value)
        except ValueError:
            return False
        return True


# The demo's numbers, and the local backend's unless ORDER_NUMBER_PATTERN says otherwise.
FOUR_DIGITS = OrderNumberRule(pattern=r"[0-9]{4}", example="8041", description="exactly 4 digits")
# What the generic HTTP backend accepts unless ORDER_NUMBER_PATTERN says otherwise: one
# path segment of letters, digits, dashes and underscores (a leading "#" is dropped).
SHOP_WRITTEN = OrderNumberRule(
    pattern=r"[A-Za-z0-9][A-Za-z0-9_-]{0,39}",
    example="100234",
    description="the order number as the shop writes it (letters, digits and dashes)",
    prefix="#",
)


def rule_from_setting(
    pattern: str, example: str, description: str | None = None, prefix: str = ""
) -> OrderNumberRule:
    """The rule ORDER_NUMBER_PATTERN (+ _EXAMPLE, _DESCRIPTION, _PREFIX) describe;
    ValueError (one line for the owner) if the pattern does not compile or the example
    does not match it."""
    try:
        re.compile(pattern)
    except re.error as exc:
        raise ValueError(f"ORDER_NUMBER_PATTERN is not a regular expression ({exc})") from None
    rule = OrderNumberRule(
        pattern=pattern,
        example=example,
        description=description or f"an order number like {example}",
        prefix=prefix,
    )
    if not rule.accepts(example):
        raise ValueError("ORDER_NUMBER_EXAMPLE does not match ORDER_NUMBER_PATTERN")
    return rule


@dataclass(frozen=True, slots=True)
class OrderItem:
    """One line of an order; `line_id` is the platform's id of the line (returns name it)."""

    name: str
    quantity: int
    line_id: str | None = None


@dataclass(frozen=True, slots=True)
class Delivery:
    carrier: str | None = None
    tracking_number: str | None = None
    tracking_url: str | None = None
    eta: date | None = None
    pickup_point: str | None = None


@dataclass(frozen=True, slots=True)
class Money:
    amount: Decimal
    currency: str


# `LiveOrder.updated_at` of an order whose shop gave no time (an imported order without
# `updated_at`): the tools show no time for it.
UNKNOWN_TIME = datetime.min.replace(tzinfo=UTC)


@dataclass(frozen=True, slots=True)
class LiveOrder:
    """One order as its shop has it now.

    - `number`: as the shop writes it, normalised by the backend's rule.
    - `status`: already mapped to the bot's five statuses.
    - `updated_at`, `delivered_at`: aware datetimes (UTC); `delivered_at` when known, for
      a return window.
    - `customer_phone`: E.164 (tools.shop.rules.normalise_phone) or None when the shop's
      spelling cannot be read; `customer_telegram_id` only where the shop stores it.
    - `ref`: the platform's own id of the order (a Medusa `order_…`, a Shopify gid), which
      its write calls need; None on backends that address orders by number.
    - `public`: only the local backend sets it (the demo's orders without an owner).
    """

    number: str
    status: OrderStatus
    updated_at: datetime
    customer_phone: str | None = None
    customer_email: str | None = None
    customer_telegram_id: int | None = None
    items: tuple[OrderItem, ...] = ()
    delivery: Delivery | None = None
    total: Money | None = None
    delivered_at: datetime | None = None
    ref: str | None = None
    public: bool = False
