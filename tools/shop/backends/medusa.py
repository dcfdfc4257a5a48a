"""SHOP_BACKEND=medusa: orders read live from a Medusa v2 shop's Admin API, and the
customer's confirmed cancel, return and change of delivery address carried out there.

Verified against Medusa 2.21.2 (tests/shop_engine/medusa/, the real engine in the tests;
docs/plans/issue-31-live-shop.md §4.1, §5, §8). Admin API reference:
https://docs.medusajs.com/api/admin — auth with a secret API key
(https://docs.medusajs.com/user-guide/settings/developer/secret-api-keys) sent as HTTP
Basic with the key as the user name and an empty password.

Two behaviours of the engine shape this module:
- the `display_id` filter of GET /admin/orders is ignored and `q` is a fuzzy search
  (q=3 also returns #13, #23, ...), so an order is the one whose `display_id` (or
  `custom_display_id`, https://docs.medusajs.com/resources/commerce-modules/order/custom-display-id)
  equals the number exactly — never the first hit;
- admin routes take no Idempotency-Key, so an action writes its operation id into the
  platform's record first (the order's or the return's `metadata`) and looks for it
  before acting again.

The catalogue (`catalogue`): GET /admin/products (published only, pages of
`PRODUCT_PAGE`) with each variant's options, prices and inventory levels
(https://docs.medusajs.com/api/admin#products_getproducts). The Admin API computes no
`inventory_quantity` (the Store API does, with a publishable key), so a variant that
manages inventory has what its inventory items' location levels hold (stocked minus
reserved, divided by the quantity one variant needs); one that does not, or allows
back orders, is for sale. A product's page is `product_url` with the product's handle
(SHOP_PRODUCT_URL; Medusa knows no storefront address).
"""

from __future__ import annotations

import base64
import logging
from collections.abc import Sequence
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
    Reply,
    expect_object,
    parse_time,
    phone_or_none,
)
from tools.shop.orders import Delivery, LiveOrder, Money, OrderItem, OrderNumberRule
from tools.shop.products import MAX_CATALOGUE_VARIANTS, Product, Variant
from tools.shop.rules import OrderStatus

logger = logging.getLogger(__name__)

# Medusa's `display_id` is a serial integer; the shop's e-mails write it "#1001".
MEDUSA_NUMBERS = OrderNumberRule(
    pattern=r"[0-9]{1,12}",
    example="1001",
    description="the order number from the shop's e-mail (digits only)",
    prefix="#",
)

# Measured to work on 2.21.2; a field the engine does not know is a 400, so keep to these.
ORDER_FIELDS = ",".join(
    (
        "id",
        "display_id",
        "status",
        "fulfillment_status",
        "updated_at",
        "email",
        "metadata",
        "customer.phone",
        "customer.email",
        "items.id",
        "items.title",
        "items.quantity",
        "fulfillments.shipped_at",
        "fulfillments.delivered_at",
        "fulfillments.canceled_at",
        "fulfillments.location_id",
        "fulfillments.labels.tracking_number",
        "fulfillments.labels.tracking_url",
        "currency_code",
        "total",
    )
)
PAGE = 50
MAX_PAGES = 4  # a short number on a big shop: more pages than this → "ambiguous"
PHONE_ORDERS = 20
CANCEL_OP_KEY = "support_bot_cancel_operation_id"
RETURN_OP_KEY = "support_bot_operation_id"
ADDRESS_OP_KEY = "support_bot_address_operation_id"
ADDRESS_FIELDS = "id,status,fulfillment_status,metadata,shipping_address.*"
_IN_TRANSIT = ("shipped", "partially_shipped", "partially_delivered")
PRODUCT_FIELDS = ",".join(
    (
        "id",
        "title",
        "description",
        "handle",
        "variants.id",
        "variants.title",
        "variants.manage_inventory",
        "variants.allow_backorder",
        "variants.options.value",
        "variants.options.option.title",
        "variants.prices.amount",
        "variants.prices.currency_code",
        "variants.inventory_items.required_quantity",
        "variants.inventory_items.inventory.location_levels.stocked_quantity",
        "variants.inventory_items.inventory.location_levels.reserved_quantity",
    )
)
PRODUCT_PAGE = 100
MAX_PRODUCT_PAGES = 500


def map_status(status: object, fulfillment_status: object) -> OrderStatus:
    """Medusa's order and fulfilment status as one of the bot's statuses. The order's own
    `status` stays "pending" after delivery (measured): the fulfilment is the signal."""
    if status == "canceled":
        return OrderStatus.CANCELLED
    if fulfillment_status == "delivered":
        return OrderStatus.DELIVERED
    if fulfillment_status in _IN_TRANSIT:
        return OrderStatus.IN_TRANSIT
    return OrderStatus.PROCESSING


def _money(amount: object, currency: object) -> Money | None:
    if isinstance(amount, dict):
        amount = amount.get("value")
    if not isinstance(currency, str) or not currency or isinstance(amount, bool):
        return None
    if not isinstance(amount, int | float | str):
        return None
    try:
        # Medusa v2 keeps amounts in the currency's main unit (995 RUB is 995, not 9.95)
        return Money(Decimal(str(amount)), currency.upper())
    except InvalidOperation:
        return None


def _delivery(fulfillments: list[dict[str, Any]]) -> Delivery | None:
    live = [f for f in fulfillments if isinstance(f, dict) and not f.get("canceled_at")]
    for fulfillment in reversed(live):
        for label in fulfillment.get("labels") or []:
            if isinstance(label, dict) and (
                label.get("tracking_number") or label.get("tracking_url")
            ):
                return Delivery(
                    tracking_number=_text(label.get("tracking_number")),
                    tracking_url=_text(label.get("tracking_url")),
                )
    return None


def _text(value: object) -> str | None:
    return value if isinstance(value, str) and value else None


def to_live_order(raw: dict[str, Any]) -> LiveOrder:
    """One Admin API order as a LiveOrder (identity unfiltered, never public);
    ShopUnavailable("malformed") when the fields every order has are missing."""
    updated_at = parse_time(raw.get("updated_at"))
    display_id = raw.get("custom_display_id") or raw.get("display_id")
    order_id = raw.get("id")
    if updated_at is None or display_id is None or not isinstance(order_id, str):
        raise ShopUnavailable("malformed", "medusa order without id, display_id or updated_at")
    customer = raw.get("customer") if isinstance(raw.get("customer"), dict) else {}
    assert isinstance(customer, dict)
    items = tuple(
        OrderItem(
            name=str(i.get("title") or ""),
            quantity=int(i.get("quantity") or 0),
            line_id=_text(i.get("id")),
        )
        for i in raw.get("items") or []
        if isinstance(i, dict)
    )
    fulfillments = [f for f in raw.get("fulfillments") or [] if isinstance(f, dict)]
    delivered = [t for f in fulfillments if (t := parse_time(f.get("delivered_at"))) is not None]
    return LiveOrder(
        number=str(display_id),
        status=map_status(raw.get("status"), raw.get("fulfillment_status")),
        updated_at=updated_at,
        customer_phone=phone_or_none(customer.get("phone")),
        customer_email=_text(customer.get("email")) or _text(raw.get("email")),
        items=items,
        delivery=_delivery(fulfillments),
        total=_money(raw.get("total"), raw.get("currency_code")),
        delivered_at=max(delivered) if delivered else None,
        ref=order_id,
    )


def _stock(raw: dict[str, Any]) -> int | None:
    """What a managed variant has (the fewest whole variants its inventory items make),
    None when it is not managed or may be back-ordered (then it is for sale)."""
    if not raw.get("manage_inventory") or raw.get("allow_backorder"):
        return None
    counts: list[int] = []
    for link in raw.get("inventory_items") or []:
        if not isinstance(link, dict):
            continue
        levels = ((link.get("inventory") or {}).get("location_levels")) or []
        held = sum(
            int(level.get("stocked_quantity") or 0) - int(level.get("reserved_quantity") or 0)
            for level in levels
            if isinstance(level, dict)
        )
        needed = max(1, int(link.get("required_quantity") or 1))
        counts.append(max(0, held) // needed)
    return min(counts) if counts else 0


def to_variant(raw: dict[str, Any]) -> Variant:
    options = tuple(
        (str((o.get("option") or {}).get("title") or ""), str(o.get("value") or ""))
        for o in raw.get("options") or []
        if isinstance(o, dict) and o.get("value") is not None
    )
    prices = [p for p in raw.get("prices") or [] if isinstance(p, dict)]
    price = _money(prices[0].get("amount"), prices[0].get("currency_code")) if prices else None
    return Variant(
        variant_id=str(raw["id"]),
        title=_text(raw.get("title")) or "",
        options=options,
        price=price,
        stock=_stock(raw),
    )


def to_product(raw: dict[str, Any], product_url: str | None) -> Product:
    handle = _text(raw.get("handle"))
    url = product_url.replace("{handle}", handle) if product_url and handle else None
    return Product(
        product_id=str(raw["id"]),
        title=str(raw["title"]),
        description=_text(raw.get("description")) or "",
        url=url,
        variants=tuple(to_variant(v) for v in raw.get("variants") or [] if isinstance(v, dict)),
    )


def _is_number(raw: dict[str, Any], number: str) -> bool:
    return str(raw.get("display_id")) == number or (
        raw.get("custom_display_id") is not None and str(raw.get("custom_display_id")) == number
    )


def _error_type(reply: Reply) -> str:
    body = reply.body if isinstance(reply.body, dict) else {}
    return str(body.get("type") or "")


class MedusaBackend:
    """Reads and actions against one Medusa v2 shop (ShopBackend and OrderActions)."""

    name = "medusa"
    reads_live: tuple[str, ...] = ("orders",)

    def __init__(
        self,
        base_url: str,
        api_key: str,
        *,
        timeout_s: float = 3.0,
        number_rule: OrderNumberRule = MEDUSA_NUMBERS,
        session: aiohttp.ClientSession | None = None,
        product_url: str | None = None,
    ) -> None:
        token = base64.b64encode(f"{api_key}:".encode()).decode()
        self.number_rule = number_rule
        self._product_url = product_url
        self._http = PlatformClient(
            base_url,
            {"Authorization": f"Basic {token}"},
            backend=self.name,
            timeout_s=timeout_s,
            session=session,
        )

    # --- reads -----------------------------------------------------------------------

    @unreadable_is_malformed
    async def get_order(self, number: str) -> LiveOrder | None:
        raw = await self._find(number.strip())
        return None if raw is None else to_live_order(raw)

    async def _find(self, number: str) -> dict[str, Any] | None:
        """The order whose number is exactly `number`, paging through `q`'s fuzzy hits."""
        for page in range(MAX_PAGES):
            params: dict[str, str | int] = {
                "q": number,
                "fields": ORDER_FIELDS,
                "limit": PAGE,
                "offset": page * PAGE,
            }
            body = expect_object(
                await self._http.request("GET", "/admin/orders", params=params), "medusa orders"
            )
            orders = body.get("orders")
            if not isinstance(orders, list):
                raise ShopUnavailable("malformed", "medusa orders: no list")
            for raw in orders:
                if isinstance(raw, dict) and _is_number(raw, number):
                    return raw
            count = body.get("count")
            if not isinstance(count, int) or count <= (page + 1) * PAGE or not orders:
                return None
        logger.warning(
            "medusa: more than %d orders match the search for one number; set "
            "custom_display_id prefixes or ORDER_NUMBER_PATTERN to make numbers distinct",
            MAX_PAGES * PAGE,
        )
        raise ShopUnavailable("unavailable", "ambiguous")

    @unreadable_is_malformed
    async def orders_for_phone(self, phone: str) -> Sequence[LiveOrder]:
        """Customers found by the phone's last ten digits (Medusa's `q` is a substring
        search; `phone=` is refused), kept when their phone is exactly this one, then
        their newest orders."""
        params: dict[str, str | int] = {
            "q": phone.lstrip("+")[-10:],
            "fields": "id,phone",
            "limit": 20,
        }
        body = expect_object(
            await self._http.request("GET", "/admin/customers", params=params), "medusa customers"
        )
        customers = body.get("customers")
        if not isinstance(customers, list):
            raise ShopUnavailable("malformed", "medusa customers: no list")
        ids = [
            c["id"]
            for c in customers
            if isinstance(c, dict)
            and isinstance(c.get("id"), str)
            and phone_or_none(c.get("phone")) == phone
        ]
        found: list[LiveOrder] = []
        for customer_id in ids[:3]:
            params = {
                "customer_id": customer_id,
                "order": "-updated_at",
                "fields": ORDER_FIELDS,
                "limit": PHONE_ORDERS,
            }
            reply = await self._http.request("GET", "/admin/orders", params=params)
            orders = expect_object(reply, "medusa orders").get("orders")
            if not isinstance(orders, list):
                raise ShopUnavailable("malformed", "medusa orders: no list")
            found.extend(to_live_order(o) for o in orders if isinstance(o, dict))
        found.sort(key=lambda o: o.updated_at, reverse=True)
        return found[:PHONE_ORDERS]

    @unreadable_is_malformed
    async def catalogue(self) -> tuple[Product, ...]:
        """The published products, page by page (module docstring)."""
        products: list[Product] = []
        variants = 0
        for page in range(MAX_PRODUCT_PAGES):
            params: dict[str, str | int] = {
                "fields": PRODUCT_FIELDS,
                "status[]": "published",
                "limit": PRODUCT_PAGE,
                "offset": page * PRODUCT_PAGE,
            }
            body = expect_object(
                await self._http.request("GET", "/admin/products", params=params),
                "medusa products",
            )
            listed = body.get("products")
            if not isinstance(listed, list):
                raise ShopUnavailable("malformed", "medusa products: no list")
            for raw in listed:
                product = to_product(raw, self._product_url)
                variants += len(product.variants)
                if variants > MAX_CATALOGUE_VARIANTS:
                    logger.warning("medusa: the catalogue is cut at %d variants", variants)
                    return tuple(products)
                products.append(product)
            count = body.get("count")
            if not listed or not isinstance(count, int) or count <= (page + 1) * PRODUCT_PAGE:
                return tuple(products)
        return tuple(products)

    async def check(self) -> None:
        try:
            reply = await self._http.request(
                "GET", "/admin/orders", params={"limit": 1, "fields": "id"}
            )
        except ShopUnavailable as exc:
            if exc.kind == "auth":
                raise ShopSetupError(
                    f"SHOP_API_TOKEN was rejected by the Medusa shop at {self._http.host} "
                    "(create a secret API key in Settings → Secret API Keys)"
                ) from None
            if exc.kind == "malformed":
                raise self._not_medusa() from None
            raise
        if reply.status != 200 or not isinstance(reply.body, dict) or "orders" not in reply.body:
            raise self._not_medusa()

    def _not_medusa(self) -> ShopSetupError:
        return ShopSetupError(
            f"SHOP_API_URL does not look like a Medusa v2 Admin API ({self._http.host} "
            "answered GET /admin/orders without an order list)"
        )

    @property
    def host(self) -> str:
        """The shop's host, for log lines (never the credentials)."""
        return self._http.host

    async def aclose(self) -> None:
        await self._http.aclose()

    # --- actions (OrderActions) ------------------------------------------------------

    async def _order_ref(self, order: LiveOrder) -> str | None:
        if order.ref:
            return order.ref
        raw = await self._find(order.number)
        return None if raw is None else str(raw["id"])

    async def _read(
        self, order_id: str, fields: str = "id,status,fulfillment_status,metadata"
    ) -> dict[str, Any] | None:
        reply = await self._http.request(
            "GET", f"/admin/orders/{order_id}", params={"fields": fields}
        )
        if reply.status == 404:
            return None
        body = expect_object(reply, "medusa order")
        raw = body.get("order")
        if not isinstance(raw, dict):
            raise ShopUnavailable("malformed", "medusa order: no object")
        return raw

    def order_actions(self) -> OrderActions:
        return self

    async def supported_actions(self) -> frozenset[str]:
        return frozenset({CANCEL_ORDER, REQUEST_RETURN, CHANGE_ADDRESS})

    @unreadable_is_malformed
    async def cancel_order(self, order: LiveOrder, operation_id: str) -> ActionResult:
        """Cancel in Medusa, once per operation id: the id goes into the order's metadata
        before the cancel, so a repeat (or a retry after an unknown outcome) finds the
        order cancelled by this very operation and answers done without a second call."""
        try:
            order_id = await self._order_ref(order)
            raw = None if order_id is None else await self._read(order_id)
            if order_id is None or raw is None:
                return ActionRejected("not_found")
            ours = (raw.get("metadata") or {}).get(CANCEL_OP_KEY) == operation_id
            if raw.get("status") == "canceled":
                return ActionDone() if ours else ActionRejected("already_cancelled")
            if raw.get("fulfillment_status") not in ("not_fulfilled", None):
                return ActionRejected("not_cancellable")
            if not ours:
                metadata = {**(raw.get("metadata") or {}), CANCEL_OP_KEY: operation_id}
                marked = await self._http.request(
                    "POST",
                    f"/admin/orders/{order_id}",
                    json_body={"metadata": metadata},
                    idempotent=True,
                )
                expect_object(marked, "medusa order metadata")
            reply = await self._http.request(
                "POST", f"/admin/orders/{order_id}/cancel", idempotent=False
            )
        except ShopUnavailable as exc:
            if exc.kind == "timeout":
                return ActionUnknown("medusa: cancel timed out")
            raise
        if 200 <= reply.status < 300:
            return ActionDone()
        if reply.status == 400 and _error_type(reply) == "invalid_data":
            return ActionDone()  # "already canceled": our marked order, cancelled by a racing call
        if reply.status == 400:
            return ActionRejected("not_cancellable")
        raise ShopUnavailable("malformed", f"medusa cancel answered {reply.status}")

    @unreadable_is_malformed
    async def change_address(
        self, order: LiveOrder, address: ShippingAddress, operation_id: str
    ) -> ActionResult:
        """`POST /admin/orders/{id}` {shipping_address, metadata} (AdminUpdateOrder, the
        engine's update-order workflow, verified on 2.21.2): one request sets the address
        and marks the order with the operation id, so a repeat finds its own mark and
        answers done. Refused by the shop: a cancelled or shipped order, another country
        (the engine does not change an order's country)."""
        try:
            order_id = await self._order_ref(order)
            raw = None if order_id is None else await self._read(order_id, ADDRESS_FIELDS)
            if order_id is None or raw is None:
                return ActionRejected("not_found")
            if (raw.get("metadata") or {}).get(ADDRESS_OP_KEY) == operation_id:
                return ActionDone()
            if raw.get("status") == "canceled":
                return ActionRejected("order_cancelled")
            if raw.get("fulfillment_status") not in ("not_fulfilled", None):
                return ActionRejected("already_shipped")
            current = (raw.get("shipping_address") or {}).get("country_code")
            if isinstance(current, str) and current.lower() != address.country_code.lower():
                return ActionRejected("country_not_changeable")
            body = {
                "shipping_address": {
                    "address_1": address.line1,
                    "address_2": address.line2 or "",
                    "city": address.city,
                    "postal_code": address.postal_code,
                    "province": address.region or "",
                    "country_code": address.country_code.lower(),
                },
                "metadata": {**(raw.get("metadata") or {}), ADDRESS_OP_KEY: operation_id},
            }
            reply = await self._http.request(
                "POST", f"/admin/orders/{order_id}", json_body=body, idempotent=False
            )
        except ShopUnavailable as exc:
            if exc.kind == "timeout":
                return ActionUnknown("medusa: address change timed out")
            raise
        if 200 <= reply.status < 300:
            return ActionDone()
        if reply.status == 400:
            return ActionRejected("address_refused")
        raise ShopUnavailable("malformed", f"medusa address change answered {reply.status}")

    @unreadable_is_malformed
    async def request_return(
        self, order: LiveOrder, lines: Sequence[ReturnLine], reason: str, operation_id: str
    ) -> ActionResult:
        """A return request in Medusa (POST /admin/returns → request-items → request,
        verified on 2.21.2), its operation id in the return's metadata; an earlier return
        with the same id is found and finished instead of making a second one."""
        try:
            order_id = await self._order_ref(order)
            if order_id is None:
                return ActionRejected("not_found")
            existing = await self._return_of(order_id, operation_id)
            if existing is not None and existing.get("status") not in ("open", None):
                return ActionDone(reference=str(existing["id"]))
            if existing is None:
                location = await self._location(order_id)
                body = {"order_id": order_id, "metadata": {RETURN_OP_KEY: operation_id}}
                if location:
                    body["location_id"] = location
                created = await self._http.request(
                    "POST", "/admin/returns", json_body=body, idempotent=False
                )
                if created.status == 400:
                    return ActionRejected("not_returnable")
                made = expect_object(created, "medusa return").get("return")
                if not isinstance(made, dict) or not isinstance(made.get("id"), str):
                    raise ShopUnavailable("malformed", "medusa return: no id")
                existing = made
            return await self._finish_return(str(existing["id"]), existing, lines, reason)
        except ShopUnavailable as exc:
            if exc.kind == "timeout":
                return ActionUnknown("medusa: return request timed out")
            raise

    async def _finish_return(
        self, return_id: str, current: dict[str, Any], lines: Sequence[ReturnLine], reason: str
    ) -> ActionResult:
        if not current.get("items"):
            items = [
                {"id": line.item.line_id, "quantity": line.quantity, "description": reason[:500]}
                for line in lines
                if line.item.line_id
            ]
            if not items:
                return ActionRejected("no_items")
            added = await self._http.request(
                "POST",
                f"/admin/returns/{return_id}/request-items",
                json_body={"items": items},
                idempotent=False,
            )
            if added.status == 400:
                return ActionRejected("not_returnable")
            expect_object(added, "medusa return items")
        requested = await self._http.request(
            "POST", f"/admin/returns/{return_id}/request", idempotent=False
        )
        if requested.status == 400:
            return ActionRejected("not_returnable")
        expect_object(requested, "medusa return request")
        return ActionDone(reference=return_id)

    async def _return_of(self, order_id: str, operation_id: str) -> dict[str, Any] | None:
        params: dict[str, str | int] = {
            "order_id": order_id,
            "fields": "id,status,metadata,items.id",
            "limit": 100,
        }
        body = expect_object(
            await self._http.request("GET", "/admin/returns", params=params), "medusa returns"
        )
        for raw in body.get("returns") or []:
            if (
                isinstance(raw, dict)
                and (raw.get("metadata") or {}).get(RETURN_OP_KEY) == operation_id
            ):
                return raw
        return None

    async def _location(self, order_id: str) -> str | None:
        """Where the goods come back to: the order's fulfilment location, else the shop's first."""
        reply = await self._http.request(
            "GET", f"/admin/orders/{order_id}", params={"fields": "id,fulfillments.location_id"}
        )
        raw = expect_object(reply, "medusa order").get("order")
        for fulfillment in (raw or {}).get("fulfillments") or []:
            if isinstance(fulfillment, dict) and isinstance(fulfillment.get("location_id"), str):
                return str(fulfillment["location_id"])
        body = expect_object(
            await self._http.request(
                "GET", "/admin/stock-locations", params={"fields": "id", "limit": 1}
            ),
            "medusa stock locations",
        )
        locations = body.get("stock_locations") or []
        return str(locations[0]["id"]) if locations and isinstance(locations[0], dict) else None
