"""The owner's own shop as a simulation's starting point: the orders, return policies,
FAQ and general return policy the bot's database holds, read once and written as an
import document, so that each run loads a throwaway copy of it through the same path as
`import-data` (and a scenario's own `shop_data` on top). The bot's database is only read;
what a run does (an action carried out, a phone verified) happens to the copy.

A database without the shop's own data (the demo, or nothing yet) gives None: the
scenarios then run on the demo shop.

The owner's knowledge is read too (`read_own_knowledge`): the pages, sites and files
added with `knowledge add` or /knowledge and the answers added one at a time (an admin's
"Answer this" under a gap, an accepted draft), with their passages and stored vectors.
Each own-shop run's throwaway knowledge gets a copy (nothing fetched again), so a
scenario written from a gap shows the answer that closed it. The FAQ is not copied
here: it comes with the shop's data and is indexed by the run as the bot indexes it.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any

from storage.knowledge import IndexState, KnowledgeRepository, SourceCopy
from storage.shop import ShopRepository
from storage.shop_records import ORDER_COLUMNS, FaqRecord, OrderRecord, ReturnPolicyRecord
from tools.knowledge.base import ENTRIES_SOURCE
from tools.knowledge.shop_sources import FAQ_SOURCE
from tools.shop.import_document import MAX_FILE_ITEMS, MAX_ORDERS, MAX_RETURN_POLICIES
from tools.shop.rules import GENERAL_RETURN_POLICY_KEY

# the orders' columns an import document names as they are stored (the items and the
# total are stored in their own form and written back as the document's)
_ORDER_FIELDS = tuple(
    c for c in ORDER_COLUMNS if c not in ("items", "total_amount", "total_currency")
)


@dataclass(frozen=True, slots=True)
class OwnShop:
    """The shop's data as an import document, and what it holds (for the report)."""

    document: dict[str, Any]
    orders: int
    policies: int
    faq: int
    orders_left_out: bool  # more orders than one import takes: the latest were copied

    def describe(self) -> str:
        more = " (the latest)" if self.orders_left_out else ""
        return (
            f"{self.orders} orders{more}, {self.policies} return policies, {self.faq} FAQ entries"
        )


def _order(record: OrderRecord) -> dict[str, Any]:
    order: dict[str, Any] = {"order_id": record.order_id}
    for name in _ORDER_FIELDS:
        value = getattr(record, name)
        if value is not None:
            order[name] = value
    if record.items is not None:
        order["items"] = json.loads(record.items)
    if record.total_amount is not None and record.total_currency is not None:
        order["total"] = {"amount": record.total_amount, "currency": record.total_currency}
    return order


def _policy(record: ReturnPolicyRecord) -> dict[str, Any]:
    return {
        "product": record.display_name,
        "return_days": record.return_days,
        "conditions": record.conditions,
        "aliases": list(record.aliases),
    }


def _faq(record: FaqRecord) -> dict[str, Any]:
    return {"topic": record.topic, "answer": record.answer, "aliases": list(record.aliases)}


def _within_items(orders: list[OrderRecord]) -> list[OrderRecord]:
    """The latest orders whose items fit one import (MAX_FILE_ITEMS in all)."""
    kept: list[OrderRecord] = []
    items = 0
    for order in orders:
        items += len(json.loads(order.items)) if order.items else 0
        if items > MAX_FILE_ITEMS:
            break
        kept.append(order)
    return kept


async def read_own_shop(shop: ShopRepository) -> OwnShop | None:
    """The shop's own data, or None when the database holds only the demo (or nothing)."""
    if not await shop.holds_own_data():
        return None
    stored = await shop.latest_orders(MAX_ORDERS + 1)
    orders = _within_items(stored[:MAX_ORDERS])
    policies = await shop.return_policies(MAX_RETURN_POLICIES)
    faq = await shop.faq_entries()
    products = await shop.products()
    document: dict[str, Any] = {
        "orders": [_order(o) for o in orders],
        "return_policies": [_policy(p) for p in policies],
        "faq": [_faq(e) for e in faq],
        "products": [{"product_id": p.product_id, **json.loads(p.document)} for p in products],
    }
    general = await shop.get_text(GENERAL_RETURN_POLICY_KEY)
    if general is not None:
        document["general_return_policy"] = general
    return OwnShop(
        document,
        orders=len(orders),
        policies=len(policies),
        faq=len(faq),
        orders_left_out=len(orders) < len(stored),
    )


@dataclass(frozen=True, slots=True)
class OwnKnowledge:
    """The owner's knowledge sources as stored, and the embedder their vectors are of."""

    sources: tuple[SourceCopy, ...]
    index: IndexState

    def _documents(self, *kinds: str) -> int:
        return sum(len(s.documents) for s in self.sources if s.kind in kinds)

    def describe(self) -> str:
        """What there is, e.g. ", 1 answer(s) of your own, 12 page(s), 1 file(s) in the
        knowledge"; "" when there is nothing."""
        counts = (
            (self._documents(ENTRIES_SOURCE), "answer(s) of your own"),
            (self._documents("site", "page"), "page(s)"),
            (self._documents("file"), "file(s)"),
        )
        held = [f"{n} {what}" for n, what in counts if n]
        return f", {', '.join(held)} in the knowledge" if held else ""


async def read_own_knowledge(knowledge: KnowledgeRepository) -> OwnKnowledge:
    """The owner's pages, files and own answers (the FAQ and the demo's pages left out:
    each run indexes its own copy of the shop's)."""
    sources = await knowledge.source_copies(leave_out=(FAQ_SOURCE,))
    return OwnKnowledge(tuple(s for s in sources if s.documents), await knowledge.index_state())
