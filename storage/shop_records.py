"""Plain rows exchanged with `ShopRepository` (no behaviour, no rules)."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field

# Order columns an import may set (besides the key); also the whitelist for dynamic SQL.
ORDER_COLUMNS = (
    "status",
    "owner_telegram_id",
    "owner_phone",
    "updated_at",
    "pickup_point",
    "expected_date",
    "items",
    "total_amount",
    "total_currency",
    "carrier",
    "tracking_number",
    "tracking_url",
)


@dataclass(frozen=True, slots=True)
class OrderRecord:
    order_id: str
    status: str
    owner_telegram_id: int | None = None
    updated_at: str | None = None
    pickup_point: str | None = None
    expected_date: str | None = None
    owner_phone: str | None = None  # E.164 (tools.shop.rules.normalise_phone)
    items: str | None = None  # JSON: [{"name": ..., "quantity": ...}, ...]
    total_amount: str | None = None  # decimal text, e.g. "12990.00"
    total_currency: str | None = None
    carrier: str | None = None
    tracking_number: str | None = None
    tracking_url: str | None = None


@dataclass(frozen=True, slots=True)
class OrderUpsert:
    """Set `values` (a subset of ORDER_COLUMNS) on the order; columns not given keep theirs."""

    order_id: str
    values: Mapping[str, object]


@dataclass(frozen=True, slots=True)
class ReturnPolicyRecord:
    product: str  # the lookup key (already normalised by the caller)
    display_name: str
    return_days: int
    conditions: str
    aliases: tuple[str, ...] = ()


@dataclass(frozen=True, slots=True)
class ReturnPolicyUpsert:
    """A policy to insert or replace; `aliases=None` keeps the stored aliases."""

    product: str
    display_name: str
    return_days: int
    conditions: str
    aliases: tuple[str, ...] | None = None


@dataclass(frozen=True, slots=True)
class FaqRecord:
    """One FAQ entry; `key` and `aliases` are lookup keys, already normalised by the caller."""

    key: str
    topic: str
    answer: str
    aliases: tuple[str, ...] = ()


@dataclass(frozen=True, slots=True)
class ProductRecord:
    """One product: its id and its document (JSON: title, description, url, variants),
    already validated by the caller."""

    product_id: str
    document: str


@dataclass(frozen=True, slots=True)
class DemoRemoved:
    """How many demo rows a removal deleted (aliases go with their policy or entry)."""

    orders: int = 0
    policies: int = 0
    faq: int = 0
    products: int = 0

    @property
    def total(self) -> int:
        return self.orders + self.policies + self.faq + self.products


@dataclass(slots=True)
class ImportCounts:
    orders_inserted: int = 0
    orders_updated: int = 0
    policies_inserted: int = 0
    policies_updated: int = 0
    faq_inserted: int = 0
    faq_updated: int = 0
    faq_removed: int = 0
    products_replaced: int | None = None  # the catalogue's size after a `products` import
    texts_set: list[str] = field(default_factory=list)
    texts_cleared: list[str] = field(default_factory=list)
    demo_removed: DemoRemoved = field(default_factory=DemoRemoved)
