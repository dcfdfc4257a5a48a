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
from datetime import date, datetime
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
