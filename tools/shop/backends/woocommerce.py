"""SHOP_BACKEND=woocommerce: orders read live from a WooCommerce shop's REST API v3, and
the customer's confirmed cancel, return request and change of delivery address carried
out there (the address: PUT /orders/{id} with its `shipping` properties, REST API v3
"Update an order", https://woocommerce.github.io/woocommerce-rest-api-docs/#update-an-order).

Written against the WooCommerce REST API v3 (https://woocommerce.github.io/woocommerce-rest-api-docs/:
orders, order notes, authentication, pagination; statuses
https://woocommerce.github.io/code-reference/classes/Automattic-WooCommerce-Enums-OrderStatus.html).
Auth: a REST API key (consumer key and secret) as HTTP Basic over HTTPS. WooCommerce is
a WordPress plugin this machine cannot run, so the tests use a fake built from those
documented shapes (tests/fakes/woocommerce.py).

The catalogue: GET /products?status=publish (pages of 100, X-WP-TotalPages), and for a
variable product its GET /products/{id}/variations (one request each: the API has no
batch read of variations), with the shop's currency from GET /data/currencies/current.
A product's or variation's `stock_quantity` counts where `manage_stock` is on, else its
`stock_status` (instock, onbackorder: for sale; outofstock) says; the page is its
`permalink`; the description's HTML is read as text.

Core WooCommerce has no "shipped" status and no returns: `completed` reads as delivered,
plugins' statuses are mapped by the owner (WOOCOMMERCE_STATUS_MAP), and a return request
becomes a private order note for the staff, carrying the operation id.
"""

from __future__ import annotations

import base64
import html
import logging
import re
from collections.abc import Mapping, Sequence
from decimal import Decimal, InvalidOperation
from typing import Any

import aiohttp

from tools.shop.backend import (
    CANCEL_ORDER,
    CHANGE_ADDRESS,
    REQUEST_RETURN,
    ActionDone,
    ActionRejected,
    ActionResult,
    ActionUnknown,
    OrderActions,
    ReturnLine,
    ShippingAddress,
    ShopSetupError,
    ShopUnavailable,
    unreadable_is_malformed,
)
from tools.shop.backends.platform_http import (
    PlatformClient,
    expect_object,
    parse_time,
    phone_or_none,
)
from tools.shop.orders import Delivery, LiveOrder, Money, OrderItem, OrderNumberRule
from tools.shop.products import MAX_CATALOGUE_VARIANTS, Product, Variant
from tools.shop.rules import OrderStatus

logger = logging.getLogger(__name__)

API = "/wp-json/wc/v3"
WOO_NUMBERS = OrderNumberRule(
    pattern=r"[0-9]{1,12}",
    example="1234",
    description="the order number from the shop's e-mail (digits only)",
    prefix="#",
)
DEFAULT_STATUSES: Mapping[str, OrderStatus] = {
    "pending": OrderStatus.PROCESSING,
    "on-hold": OrderStatus.PROCESSING,
    "processing": OrderStatus.PROCESSING,
    "checkout-draft": OrderStatus.PROCESSING,
    "completed": OrderStatus.DELIVERED,
    "cancelled": OrderStatus.CANCELLED,
    "refunded": OrderStatus.CANCELLED,
    "failed": OrderStatus.CANCELLED,
}
CANCELLABLE = ("pending", "on-hold", "processing")
OP_MARK = "support-bot op"
PER_PAGE = 50
MAX_PAGES = 2
PRODUCTS_PER_PAGE = 100
MAX_PRODUCT_PAGES = 200
_TAG = re.compile(r"<[^>]*>")
_warned: set[str] = set()


def _text(value: object) -> str | None:
    return value if isinstance(value, str) and value.strip() else None


def _tracking(meta: object) -> Delivery | None:
    """The Shipment Tracking extension's `_wc_shipment_tracking_items`, when present."""
    for entry in meta if isinstance(meta, list) else []:
        if not isinstance(entry, dict) or entry.get("key") != "_wc_shipment_tracking_items":
            continue
        items = [i for i in entry.get("value") or [] if isinstance(i, dict)]
        if items:
            last = items[-1]
            return Delivery(
                carrier=_text(last.get("custom_tracking_provider"))
                or _text(last.get("tracking_provider")),
                tracking_number=_text(last.get("tracking_number")),
                tracking_url=_text(last.get("custom_tracking_link")),
            )
    return None


def _plain(text: object) -> str:
    return " ".join(html.unescape(_TAG.sub(" ", text)).split()) if isinstance(text, str) else ""


def woo_variant(
    raw: dict[str, Any], currency: str, options: tuple[tuple[str, str], ...]
) -> Variant:
    """A simple product or a variation: its price, and a count where it manages stock."""
    price = raw.get("price")
    try:
        money = Money(Decimal(str(price)), currency) if price not in (None, "") else None
    except InvalidOperation:
        money = None
    counted = bool(raw.get("manage_stock")) and isinstance(raw.get("stock_quantity"), int)
    status = raw.get("stock_status")
    return Variant(
        variant_id=str(raw["id"]),
        options=options,
        price=money,
        stock=int(raw["stock_quantity"]) if counted and status != "onbackorder" else None,
        in_stock=None if counted and status != "onbackorder" else status != "outofstock",
    )


def woo_product(raw: dict[str, Any], variations: list[dict[str, Any]], currency: str) -> Product:
    if variations:
        variants = tuple(
            woo_variant(
                v,
                currency,
                tuple(
                    (str(a.get("name") or ""), str(a.get("option") or ""))
                    for a in v.get("attributes") or []
                    if isinstance(a, dict)
                ),
            )
            for v in variations
            if isinstance(v, dict)
        )
    else:
        variants = (woo_variant(raw, currency, ()),)
    return Product(
        product_id=str(raw["id"]),
        title=str(raw["name"]),
        description=_plain(raw.get("short_description")) or _plain(raw.get("description")),
        url=_text(raw.get("permalink")),
        variants=variants,
    )


class WooCommerceBackend:
    """Reads and actions against one WooCommerce shop (ShopBackend and OrderActions)."""

    name = "woocommerce"
    reads_live: tuple[str, ...] = ("orders",)

    def __init__(
        self,
        base_url: str,
        consumer_key: str,
        consumer_secret: str,
        *,
        timeout_s: float = 3.0,
        number_rule: OrderNumberRule = WOO_NUMBERS,
        number_is_id: bool = True,
        status_map: Mapping[str, OrderStatus] | None = None,
        session: aiohttp.ClientSession | None = None,
    ) -> None:
        token = base64.b64encode(f"{consumer_key}:{consumer_secret}".encode()).decode()
        self.number_rule = number_rule
        self._number_is_id = number_is_id
        self._statuses = {**DEFAULT_STATUSES, **(status_map or {})}
        self._http = PlatformClient(
            base_url,
            {"Authorization": f"Basic {token}"},
            backend=self.name,
            timeout_s=timeout_s,
            session=session,
        )

    def map_status(self, status: object) -> OrderStatus:
        mapped = self._statuses.get(str(status))
        if mapped is None:
            if str(status) not in _warned:
                _warned.add(str(status))
                logger.warning(
                    "woocommerce: status %r is read as processing (WOOCOMMERCE_STATUS_MAP "
                    "maps a plugin's status)",
                    status,
                )
            return OrderStatus.PROCESSING
        return mapped

    def to_live_order(self, raw: dict[str, Any]) -> LiveOrder:
        """One REST order as a LiveOrder (identity unfiltered, never public)."""
        updated_at = parse_time(raw.get("date_modified_gmt")) or parse_time(
            raw.get("date_modified")
        )
        number = raw.get("number") or raw.get("id")
        if updated_at is None or number is None or raw.get("id") is None:
            raise ShopUnavailable("malformed", "woocommerce order without id, number or date")
        billing = raw.get("billing") if isinstance(raw.get("billing"), dict) else {}
        assert isinstance(billing, dict)
        try:
            total = Money(Decimal(str(raw["total"])), str(raw["currency"]))
        except (KeyError, InvalidOperation):
            total = None
        completed = parse_time(raw.get("date_completed_gmt"))
        return LiveOrder(
            number=str(number),
            status=self.map_status(raw.get("status")),
            updated_at=updated_at,
            customer_phone=phone_or_none(billing.get("phone")),
            customer_email=_text(billing.get("email")),
            items=tuple(
                OrderItem(str(i.get("name") or ""), int(i.get("quantity") or 0), str(i.get("id")))
                for i in raw.get("line_items") or []
                if isinstance(i, dict)
            ),
            delivery=_tracking(raw.get("meta_data")),
            total=total,
            delivered_at=completed if raw.get("status") == "completed" else None,
            ref=str(raw["id"]),
        )

    # --- reads -----------------------------------------------------------------------

    @unreadable_is_malformed
    async def get_order(self, number: str) -> LiveOrder | None:
        number = number.strip()
        if self._number_is_id:
            if not number.isdigit():
                return None
            reply = await self._http.request("GET", f"{API}/orders/{number}")
            if reply.status == 404:
                return None
            return self.to_live_order(expect_object(reply, "woocommerce order"))
        for raw in await self._search(number):
            if str(raw.get("number")) == number:  # search matches loosely: exact number only
                return self.to_live_order(raw)
        return None

    async def _search(self, text: str) -> list[dict[str, Any]]:
        """Orders matching WooCommerce's search, newest first, following X-WP-TotalPages."""
        found: list[dict[str, Any]] = []
        for page in range(1, MAX_PAGES + 1):
            params: dict[str, str | int] = {
                "search": text,
                "per_page": PER_PAGE,
                "page": page,
                "orderby": "date",
                "order": "desc",
            }
            reply = await self._http.request("GET", f"{API}/orders", params=params)
            if reply.status != 200 or not isinstance(reply.body, list):
                raise ShopUnavailable("malformed", f"woocommerce orders: status {reply.status}")
            found.extend(o for o in reply.body if isinstance(o, dict))
            pages = reply.headers.get("X-WP-TotalPages", "1")
            if not pages.isdigit() or page >= int(pages):
                break
        return found

    @unreadable_is_malformed
    async def orders_for_phone(self, phone: str) -> Sequence[LiveOrder]:
        """Orders found by the phone's last ten digits, kept when the billing phone (free
        text in WooCommerce) reads as exactly this number."""
        matches = [
            self.to_live_order(raw)
            for raw in await self._search(phone.lstrip("+")[-10:])
            if phone_or_none((raw.get("billing") or {}).get("phone")) == phone
        ]
        matches.sort(key=lambda o: o.updated_at, reverse=True)
        return matches[:20]

    @unreadable_is_malformed
    async def catalogue(self) -> tuple[Product, ...]:
        """The published products with their variations (module docstring)."""
        currency_reply = await self._http.request("GET", f"{API}/data/currencies/current")
        currency = str(expect_object(currency_reply, "woocommerce currency").get("code") or "")
        products: list[Product] = []
        variants = 0
        for page in range(1, MAX_PRODUCT_PAGES + 1):
            params: dict[str, str | int] = {
                "status": "publish",
                "per_page": PRODUCTS_PER_PAGE,
                "page": page,
            }
            reply = await self._http.request("GET", f"{API}/products", params=params)
            if reply.status != 200 or not isinstance(reply.body, list):
                raise ShopUnavailable("malformed", f"woocommerce products: status {reply.status}")
            for raw in reply.body:
                variations = await self._variations(raw) if raw.get("variations") else []
                product = woo_product(raw, variations, currency)
                variants += len(product.variants)
                if variants > MAX_CATALOGUE_VARIANTS:
                    logger.warning("woocommerce: the catalogue is cut at %d variants", variants)
                    return tuple(products)
                products.append(product)
            pages = reply.headers.get("X-WP-TotalPages", "1")
            if not pages.isdigit() or page >= int(pages):
                break
        return tuple(products)

    async def _variations(self, raw: dict[str, Any]) -> list[dict[str, Any]]:
        params: dict[str, str | int] = {"per_page": 100}
        reply = await self._http.request(
            "GET", f"{API}/products/{int(raw['id'])}/variations", params=params
        )
        if reply.status != 200 or not isinstance(reply.body, list):
            raise ShopUnavailable("malformed", f"woocommerce variations: status {reply.status}")
        return [v for v in reply.body if isinstance(v, dict)]

    async def check(self) -> None:
        try:
            reply = await self._http.request("GET", f"{API}/orders", params={"per_page": 1})
        except ShopUnavailable as exc:
            if exc.kind == "auth":
                raise ShopSetupError(
                    f"SHOP_API_TOKEN / SHOP_API_SECRET were rejected by the WooCommerce shop at "
                    f"{self._http.host} (WooCommerce → Settings → Advanced → REST API, Read)"
                ) from None
            if exc.kind == "malformed":
                raise self._not_woo() from None
            raise
        if reply.status != 200 or not isinstance(reply.body, list):
            raise self._not_woo()

    def _not_woo(self) -> ShopSetupError:
        return ShopSetupError(
            f"SHOP_API_URL does not look like a WooCommerce shop ({self._http.host} has no "
            f"{API}/orders)"
        )

    @property
    def host(self) -> str:
        """The shop's host, for log lines (never the credentials)."""
        return self._http.host

    async def aclose(self) -> None:
        await self._http.aclose()

    # --- actions -----------------------------------------------------------------------

    async def _raw(self, order: LiveOrder) -> dict[str, Any] | None:
        order_id = order.ref or (None if not self._number_is_id else order.number)
        if order_id is None:
            found = await self.get_order(order.number)
            order_id = None if found is None else found.ref
        if order_id is None:
            return None
        reply = await self._http.request("GET", f"{API}/orders/{order_id}")
        return None if reply.status == 404 else expect_object(reply, "woocommerce order")

    async def _note_with(self, order_id: str, mark: str) -> dict[str, Any] | None:
        reply = await self._http.request("GET", f"{API}/orders/{order_id}/notes")
        if reply.status != 200 or not isinstance(reply.body, list):
            raise ShopUnavailable("malformed", f"woocommerce notes: status {reply.status}")
        return next(
            (n for n in reply.body if isinstance(n, dict) and mark in str(n.get("note", ""))),
            None,
        )

    async def _add_note(self, order_id: str, text: str) -> dict[str, Any]:
        reply = await self._http.request(
            "POST",
            f"{API}/orders/{order_id}/notes",
            json_body={"note": text, "customer_note": False},
            idempotent=False,
        )
        return expect_object(reply, "woocommerce note")

    def order_actions(self) -> OrderActions:
        return self

    async def supported_actions(self) -> frozenset[str]:
        return frozenset({CANCEL_ORDER, REQUEST_RETURN, CHANGE_ADDRESS})

    @unreadable_is_malformed
    async def cancel_order(self, order: LiveOrder, operation_id: str) -> ActionResult:
        """A private note naming the operation, then PUT status=cancelled (repeatable).
        A cancelled order with this operation's note is done; without it, someone else
        cancelled it."""
        mark = f"[{OP_MARK} {operation_id}]"
        try:
            raw = await self._raw(order)
            if raw is None:
                return ActionRejected("not_found")
            order_id = str(raw["id"])
            note = await self._note_with(order_id, mark)
            if raw.get("status") == "cancelled":
                return ActionDone() if note else ActionRejected("already_cancelled")
            if raw.get("status") not in CANCELLABLE:
                return ActionRejected("not_cancellable")
            if note is None:
                await self._add_note(order_id, f"Cancelled at the customer's request {mark}")
            reply = await self._http.request(
                "PUT",
                f"{API}/orders/{order_id}",
                json_body={"status": "cancelled"},
                idempotent=True,
            )
        except ShopUnavailable as exc:
            if exc.kind == "timeout":
                return ActionUnknown("woocommerce: cancel timed out")
            raise
        if reply.status == 400:
            return ActionRejected("not_cancellable")
        if expect_object(reply, "woocommerce cancel").get("status") != "cancelled":
            return ActionRejected("not_cancellable")
        return ActionDone()

    @unreadable_is_malformed
    async def change_address(
        self, order: LiveOrder, address: ShippingAddress, operation_id: str
    ) -> ActionResult:
        """A private note naming the operation (without the address), then PUT the
        order's `shipping` properties (repeatable: the same values again change nothing;
        the recipient's name is kept). An order this operation already changed is done,
        whatever its status since; otherwise only a pending, on-hold or processing one."""
        mark = f"[{OP_MARK} {operation_id}]"
        shipping = {
            "address_1": address.line1,
            "address_2": address.line2 or "",
            "city": address.city,
            "state": address.region or "",
            "postcode": address.postal_code,
            "country": address.country_code,
        }
        try:
            raw = await self._raw(order)
            if raw is None:
                return ActionRejected("not_found")
            order_id = str(raw["id"])
            note = await self._note_with(order_id, mark)
            current = raw.get("shipping") or {}
            if note is not None and all(current.get(k) == v for k, v in shipping.items()):
                return ActionDone()
            if raw.get("status") == "cancelled":
                return ActionRejected("order_cancelled")
            if raw.get("status") not in CANCELLABLE:
                return ActionRejected("already_shipped")
            if note is None:
                await self._add_note(
                    order_id, f"Delivery address changed at the customer's request {mark}"
                )
            reply = await self._http.request(
                "PUT",
                f"{API}/orders/{order_id}",
                json_body={"shipping": shipping},
                idempotent=True,
            )
        except ShopUnavailable as exc:
            if exc.kind == "timeout":
                return ActionUnknown("woocommerce: address change timed out")
            raise
        if reply.status == 400:
            return ActionRejected("address_refused")
        stored = expect_object(reply, "woocommerce address").get("shipping") or {}
        if not all(stored.get(k) == v for k, v in shipping.items()):
            return ActionUnknown("woocommerce: the address did not read back")
        return ActionDone()

    @unreadable_is_malformed
    async def request_return(
        self, order: LiveOrder, lines: Sequence[ReturnLine], reason: str, operation_id: str
    ) -> ActionResult:
        """WooCommerce has no returns: a private note for the staff listing the lines and
        the reason, with the operation id, posted once (the notes are searched first).
        Refunds are never made automatically (they are not idempotent)."""
        mark = f"[{OP_MARK} {operation_id}]"
        if not lines:
            return ActionRejected("no_items")
        try:
            raw = await self._raw(order)
            if raw is None:
                return ActionRejected("not_found")
            order_id = str(raw["id"])
            existing = await self._note_with(order_id, mark)
            if existing is not None:
                return ActionDone(reference=str(existing.get("id")))
            listed = "; ".join(f"{line.item.name} × {line.quantity}" for line in lines)
            text = f"Return requested by the customer: {listed}. Reason: {reason[:500]} {mark}"
            note = await self._add_note(order_id, text)
        except ShopUnavailable as exc:
            if exc.kind == "timeout":
                return ActionUnknown("woocommerce: return note timed out")
            raise
        return ActionDone(reference=str(note.get("id")))
