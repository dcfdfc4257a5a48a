"""SHOP_BACKEND=shopify: orders read live from a Shopify store's Admin GraphQL API, and
the customer's confirmed cancel, return and change of delivery address carried out there.

Written against Admin GraphQL API version 2026-07 (pinned in SHOPIFY_API_VERSION, which
the owner may override; Shopify supports a version for at least 12 months):
- orders query: https://shopify.dev/docs/api/admin-graphql/2026-07/queries/orders
- Order object: https://shopify.dev/docs/api/admin-graphql/2026-07/objects/Order
- orderCancel (async, returns a Job; `refundMethod` replaced `refund`):
  https://shopify.dev/docs/api/admin-graphql/2026-07/mutations/orderCancel
- returnRequest: https://shopify.dev/docs/api/admin-graphql/2026-07/mutations/returnRequest
- orderUpdate (OrderInput.shippingAddress overwrites the address; `metafields` are added
  to the order's): https://shopify.dev/docs/api/admin-graphql/2026-07/mutations/orderUpdate,
  https://shopify.dev/docs/api/admin-graphql/2026-07/input-objects/OrderInput,
  https://shopify.dev/docs/api/admin-graphql/2026-07/input-objects/MailingAddressInput
- rate limits (calculated query cost, THROTTLED with extensions.cost.throttleStatus):
  https://shopify.dev/docs/apps/build/apis/graphql-admin/rate-limits
- the catalogue, one flat page of variants with their product (cheaper per call than
  products with nested variants, under the 1,000-point query limit):
  https://shopify.dev/docs/api/admin-graphql/2026-07/queries/productVariants,
  https://shopify.dev/docs/api/admin-graphql/2026-07/objects/ProductVariant
  (price, inventoryQuantity — needs read_inventory —, inventoryPolicy, availableForSale,
  selectedOptions, inventoryItem.tracked), Product (title, description, onlineStoreUrl,
  status: only ACTIVE are sold) and shop.currencyCode for the prices' currency.
Auth: an Admin API access token in `X-Shopify-Access-Token`: short-lived ones of a Dev
Dashboard app (client credentials grant), or the fixed one of a custom app created in the
admin before 2026 (tools/shop/backends/shopify_token.py). Shopify is
hosted only, so the tests use a fake built from these documented shapes
(tests/fakes/shopify.py).
"""

from __future__ import annotations

import asyncio
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
from tools.shop.backends.platform_http import PlatformClient, Reply, parse_time, phone_or_none
from tools.shop.backends.shopify_token import ClientCredentials, StaticToken, TokenSource
from tools.shop.orders import Delivery, LiveOrder, Money, OrderItem, OrderNumberRule
from tools.shop.products import MAX_CATALOGUE_VARIANTS, Product, Variant
from tools.shop.rules import OrderStatus

logger = logging.getLogger(__name__)

SHOPIFY_API_VERSION = "2026-07"
SHOPIFY_NUMBERS = OrderNumberRule(
    pattern=r"[0-9]{1,12}",
    example="1001",
    description="the order number from the shop's e-mail, such as #1001",
    prefix="#",
)
MAX_THROTTLE_WAIT_S = 2.0
CANCEL_POLLS = 5
OP_MARK = "support-bot op"

ORDER_FIELDS = """
  id name updatedAt cancelledAt displayFulfillmentStatus email phone
  customer { phone email }
  lineItems(first: 20) { nodes { id name quantity } }
  fulfillments(first: 5) {
    displayStatus deliveredAt estimatedDeliveryAt
    trackingInfo(first: 1) { company number url }
  }
  totalPriceSet { shopMoney { amount currencyCode } }
"""
ORDERS_BY_NAME = (
    "query OrdersByName($query: String!) { orders(first: 5, query: $query) { nodes {"
    + ORDER_FIELDS
    + "} } }"
)
ORDERS_BY_PHONE = (
    "query CustomersByPhone($query: String!) { customers(first: 3, query: $query) { nodes {"
    " phone orders(first: 10, sortKey: UPDATED_AT, reverse: true) { nodes {"
    + ORDER_FIELDS
    + "} } } } }"
)
ORDER_STATE = (
    "query OrderState($id: ID!) { order(id: $id) { id cancelledAt displayFulfillmentStatus } }"
)
SHOP_NAME = "query { shop { name } }"
ADDRESS_STATE = (
    "query AddressState($id: ID!) { order(id: $id) { id cancelledAt displayFulfillmentStatus"
    " shippingAddress { firstName lastName phone company }"
    ' metafield(namespace: "support_bot", key: "address_operation") { value } } }'
)
ADDRESS_UPDATE = (
    "mutation AddressUpdate($input: OrderInput!) { orderUpdate(input: $input) {"
    " order { id } userErrors { field message } } }"
)
PRODUCT_VARIANTS = (
    "query ProductVariants($cursor: String) { shop { currencyCode }"
    " productVariants(first: 250, after: $cursor) { pageInfo { hasNextPage endCursor }"
    " nodes { id title price inventoryQuantity inventoryPolicy availableForSale"
    " selectedOptions { name value } inventoryItem { tracked }"
    " product { id title description(truncateAt: 1000) onlineStoreUrl status } } } }"
)
MAX_VARIANT_PAGES = MAX_CATALOGUE_VARIANTS // 250
CANCEL = (
    "mutation Cancel($orderId: ID!, $staffNote: String) { orderCancel(orderId: $orderId,"
    " reason: CUSTOMER, restock: true, notifyCustomer: true,"
    " refundMethod: { originalPaymentMethodsRefund: true }, staffNote: $staffNote) {"
    " job { id done } orderCancelUserErrors { field message code } } }"
)
RETURNS_OF_ORDER = (
    "query Returns($id: ID!) { order(id: $id) { returns(first: 20) { nodes { id status"
    " returnLineItems(first: 20) { nodes { ... on ReturnLineItem { customerNote } } } } } } }"
)
RETURNABLE = (
    "query Returnable($id: ID!) { returnableFulfillments(orderId: $id, first: 10) { nodes {"
    " returnableFulfillmentLineItems(first: 20) { nodes { quantity"
    " fulfillmentLineItem { id lineItem { id } } } } } } }"
)
RETURN_REQUEST = (
    "mutation ReturnRequest($input: ReturnRequestInput!) { returnRequest(input: $input) {"
    " return { id status } userErrors { field message code } } }"
)

_IN_TRANSIT = {
    "IN_TRANSIT",
    "OUT_FOR_DELIVERY",
    "ATTEMPTED_DELIVERY",
    "CONFIRMED",
    "LABEL_PRINTED",
    "LABEL_PURCHASED",
    "FULFILLED",
    "MARKED_AS_FULFILLED",
    "CARRIER_PICKED_UP",
    "DELAYED",
}
_DELIVERED = {"DELIVERED", "PICKED_UP"}
_CANCELLABLE = {"UNFULFILLED", "ON_HOLD", "PENDING_FULFILLMENT", "SCHEDULED", "OPEN"}
_warned: set[str] = set()


def map_status(raw: dict[str, Any]) -> OrderStatus:
    """Cancelled first; then the latest fulfilment's display status; no fulfilment (or an
    unknown value, logged once) is processing."""
    if raw.get("cancelledAt"):
        return OrderStatus.CANCELLED
    fulfillments = [f for f in raw.get("fulfillments") or [] if isinstance(f, dict)]
    if not fulfillments:
        return OrderStatus.PROCESSING
    status = str(fulfillments[-1].get("displayStatus") or "")
    if status in _DELIVERED:
        return OrderStatus.DELIVERED
    if status == "READY_FOR_PICKUP":
        return OrderStatus.READY_FOR_PICKUP
    if status in _IN_TRANSIT:
        return OrderStatus.IN_TRANSIT
    if status and status not in _warned and status not in {"CANCELED", "FAILURE", "SUBMITTED"}:
        _warned.add(status)
        logger.warning("shopify: unknown fulfilment status %s read as processing", status)
    return OrderStatus.PROCESSING


def _text(value: object) -> str | None:
    return value if isinstance(value, str) and value else None


def _money(raw: dict[str, Any]) -> Money | None:
    money = ((raw.get("totalPriceSet") or {}).get("shopMoney")) or {}
    try:
        return Money(Decimal(str(money["amount"])), str(money["currencyCode"]))
    except (KeyError, InvalidOperation, TypeError):
        return None


def to_live_order(raw: dict[str, Any], prefix: str) -> LiveOrder:
    """One GraphQL Order as a LiveOrder (identity unfiltered, never public)."""
    updated_at = parse_time(raw.get("updatedAt"))
    name = raw.get("name")
    if updated_at is None or not isinstance(name, str) or not isinstance(raw.get("id"), str):
        raise ShopUnavailable("malformed", "shopify order without id, name or updatedAt")
    customer = raw.get("customer") if isinstance(raw.get("customer"), dict) else None
    phone = (customer or {}).get("phone") or raw.get("phone")
    lines = ((raw.get("lineItems") or {}).get("nodes")) or []
    fulfillments = [f for f in raw.get("fulfillments") or [] if isinstance(f, dict)]
    delivery = None
    delivered = [t for f in fulfillments if (t := parse_time(f.get("deliveredAt"))) is not None]
    for fulfillment in reversed(fulfillments):
        tracking = [t for t in fulfillment.get("trackingInfo") or [] if isinstance(t, dict)]
        eta = parse_time(fulfillment.get("estimatedDeliveryAt"))
        if tracking or eta:
            first = tracking[0] if tracking else {}
            delivery = Delivery(
                carrier=_text(first.get("company")),
                tracking_number=_text(first.get("number")),
                tracking_url=_text(first.get("url")),
                eta=eta.date() if eta else None,
            )
            break
    return LiveOrder(
        number=name.removeprefix(prefix).strip(),
        status=map_status(raw),
        updated_at=updated_at,
        customer_phone=phone_or_none(phone),
        customer_email=_text((customer or {}).get("email")) or _text(raw.get("email")),
        items=tuple(
            OrderItem(str(n.get("name") or ""), int(n.get("quantity") or 0), _text(n.get("id")))
            for n in lines
            if isinstance(n, dict)
        ),
        delivery=delivery,
        total=_money(raw),
        delivered_at=max(delivered) if delivered else None,
        ref=str(raw["id"]),
    )


def to_variant(raw: dict[str, Any], currency: str) -> Variant:
    """A ProductVariant: a count where Shopify tracks it and does not sell beyond it,
    else its own availableForSale."""
    counted = (raw.get("inventoryItem") or {}).get("tracked") and raw.get(
        "inventoryPolicy"
    ) != "CONTINUE"
    quantity = raw.get("inventoryQuantity")
    price = raw.get("price")
    options = tuple(
        (str(o.get("name") or ""), str(o.get("value") or ""))
        for o in raw.get("selectedOptions") or []
        if isinstance(o, dict) and o.get("name") != "Title"  # "Default Title": no options
    )
    return Variant(
        variant_id=str(raw["id"]),
        title=_text(raw.get("title")) or "",
        options=options,
        price=Money(Decimal(str(price)), currency) if price is not None and currency else None,
        stock=int(quantity) if counted and isinstance(quantity, int) else None,
        in_stock=None if counted else bool(raw.get("availableForSale")),
    )


def group_products(nodes: list[dict[str, Any]], currency: str) -> list[Product]:
    """Variants (each with its product) grouped into the active products, in order."""
    products: dict[str, tuple[dict[str, Any], list[Variant]]] = {}
    for node in nodes:
        product = node.get("product") or {}
        if product.get("status") != "ACTIVE":
            continue
        entry = products.setdefault(str(product["id"]), (product, []))
        entry[1].append(to_variant(node, currency))
    return [
        Product(
            product_id=pid,
            title=str(raw["title"]),
            description=_text(raw.get("description")) or "",
            url=_text(raw.get("onlineStoreUrl")),
            variants=tuple(variants),
        )
        for pid, (raw, variants) in products.items()
    ]


def _quote(value: str) -> str:
    """A value for Shopify's search syntax, quoted (no quote or backslash gets through)."""
    return '"' + value.replace("\\", "").replace('"', "") + '"'


class ShopifyBackend:
    """Reads and actions against one Shopify store (ShopBackend and OrderActions)."""

    name = "shopify"
    reads_live: tuple[str, ...] = ("orders",)

    def __init__(
        self,
        shop_domain: str,
        access_token: str | None = None,
        *,
        client_credentials: tuple[str, str] | None = None,
        api_version: str = SHOPIFY_API_VERSION,
        timeout_s: float = 3.0,
        number_rule: OrderNumberRule = SHOPIFY_NUMBERS,
        name_prefix: str = "#",
        base_url: str | None = None,
        session: aiohttp.ClientSession | None = None,
    ) -> None:
        self.number_rule = number_rule
        self._prefix = name_prefix
        self._path = f"/admin/api/{api_version}/graphql.json"
        self._http = PlatformClient(
            base_url or f"https://{shop_domain}",
            {},
            backend=self.name,
            timeout_s=timeout_s,
            session=session,
        )
        self._tokens: TokenSource
        if client_credentials is not None:
            self._tokens = ClientCredentials(self._http, *client_credentials)
        elif access_token is not None:
            self._tokens = StaticToken(access_token)
        else:
            raise ValueError("an access token or the app's client credentials")

    async def _post(self, body: dict[str, Any], *, mutation: bool) -> Reply:
        """One GraphQL POST with the current token; a token Shopify refuses (401/403) is
        renewed once where it can be (a refused request did nothing, so even a mutation
        is sent again)."""
        for attempt in (1, 2):
            token = await self._tokens.token()
            try:
                return await self._http.request(
                    "POST",
                    self._path,
                    json_body=body,
                    headers={"X-Shopify-Access-Token": token},
                    idempotent=not mutation,
                    own_429=True,
                )
            except ShopUnavailable as exc:
                renewable = isinstance(self._tokens, ClientCredentials)
                if exc.kind != "auth" or attempt == 2 or not renewable:
                    raise
                logger.info("shopify: the access token was refused, asking for a new one")
                self._tokens.forget(token)
        raise AssertionError("unreachable")

    async def _graphql(
        self, query: str, variables: dict[str, Any] | None = None, *, mutation: bool = False
    ) -> dict[str, Any]:
        """`data` of one GraphQL call; THROTTLED waited out once when the bucket refills
        within MAX_THROTTLE_WAIT_S, else rate_limited. 402/423 (frozen or locked store)
        are unavailable; errors without data are malformed."""
        body = {"query": query, "variables": variables or {}}
        for attempt in (1, 2):
            reply = await self._post(body, mutation=mutation)
            answer = reply.body if isinstance(reply.body, dict) else None
            if reply.status in (402, 423):
                logger.warning("shopify: the store answered %s (frozen or locked)", reply.status)
                raise ShopUnavailable("unavailable", f"shopify answered {reply.status}")
            if answer is None:
                raise ShopUnavailable("malformed", f"shopify answered {reply.status} without JSON")
            wait = _throttle_wait(answer)
            if wait is not None or reply.status == 429:
                if attempt == 1 and wait is not None and wait <= MAX_THROTTLE_WAIT_S:
                    await asyncio.sleep(wait)
                    continue
                raise ShopUnavailable("rate_limited", "shopify THROTTLED")
            if reply.status != 200:
                raise ShopUnavailable("malformed", f"shopify answered {reply.status}")
            data = answer.get("data")
            if not isinstance(data, dict):
                raise ShopUnavailable("malformed", "shopify: errors without data")
            if answer.get("errors"):
                logger.info("shopify: partial errors in an answer (%d)", len(answer["errors"]))
            return data
        raise ShopUnavailable("rate_limited", "shopify THROTTLED")

    # --- reads -----------------------------------------------------------------------

    @unreadable_is_malformed
    async def get_order(self, number: str) -> LiveOrder | None:
        name = self._prefix + number.strip()
        data = await self._graphql(ORDERS_BY_NAME, {"query": f"name:{_quote(name)}"})
        nodes = _nodes(data.get("orders"))
        for raw in nodes:
            if raw.get("name") == name:  # the search is fuzzy: only the exact name counts
                return to_live_order(raw, self._prefix)
        return None

    @unreadable_is_malformed
    async def orders_for_phone(self, phone: str) -> Sequence[LiveOrder]:
        data = await self._graphql(ORDERS_BY_PHONE, {"query": f"phone:{_quote(phone)}"})
        found: list[LiveOrder] = []
        for customer in _nodes(data.get("customers")):
            if phone_or_none(customer.get("phone")) != phone:
                continue
            found.extend(to_live_order(o, self._prefix) for o in _nodes(customer.get("orders")))
        found.sort(key=lambda o: o.updated_at, reverse=True)
        return found[:20]

    @unreadable_is_malformed
    async def catalogue(self) -> tuple[Product, ...]:
        """Every page of productVariants, grouped by product (module docstring)."""
        nodes: list[dict[str, Any]] = []
        currency = ""
        cursor: str | None = None
        for _ in range(MAX_VARIANT_PAGES):
            data = await self._graphql(PRODUCT_VARIANTS, {"cursor": cursor})
            currency = str((data.get("shop") or {}).get("currencyCode") or currency)
            connection = data.get("productVariants") or {}
            nodes.extend(_nodes(connection))
            info = connection.get("pageInfo") or {}
            cursor = _text(info.get("endCursor"))
            if not info.get("hasNextPage") or cursor is None:
                break
        return tuple(group_products(nodes, currency))

    async def check(self) -> None:
        try:
            data = await self._graphql(SHOP_NAME)
        except ShopUnavailable as exc:
            if exc.kind == "auth":
                raise ShopSetupError(
                    f"{self._tokens.setting} was rejected by the Shopify store {self._http.host} "
                    "(the app must be installed in the store, with the scopes read_orders "
                    "and read_customers)"
                ) from None
            if exc.kind == "malformed":
                raise self._not_shopify() from None
            raise
        if not isinstance(data.get("shop"), dict):
            raise self._not_shopify()

    def _not_shopify(self) -> ShopSetupError:
        return ShopSetupError(
            f"SHOPIFY_SHOP does not look like a Shopify store's Admin API ({self._http.host})"
        )

    @property
    def host(self) -> str:
        """The shop's host, for log lines (never the credentials)."""
        return self._http.host

    async def aclose(self) -> None:
        await self._http.aclose()

    # --- actions -----------------------------------------------------------------------

    async def _ref(self, order: LiveOrder) -> str | None:
        if order.ref:
            return order.ref
        found = await self.get_order(order.number)
        return None if found is None else found.ref

    async def _state(self, order_id: str) -> dict[str, Any] | None:
        data = await self._graphql(ORDER_STATE, {"id": order_id})
        state = data.get("order")
        return state if isinstance(state, dict) else None

    def order_actions(self) -> OrderActions:
        return self

    async def supported_actions(self) -> frozenset[str]:
        return frozenset({CANCEL_ORDER, REQUEST_RETURN, CHANGE_ADDRESS})

    @unreadable_is_malformed
    async def cancel_order(self, order: LiveOrder, operation_id: str) -> ActionResult:
        """orderCancel (full refund to the original payment, restock, notify), the
        operation id in the staff note. Shopify takes no idempotency key: the state is read
        first (a cancelled order is done — this operation's earlier call, or a repeat), and
        the cancel job's result is read back from the order's `cancelledAt`."""
        try:
            order_id = await self._ref(order)
            state = None if order_id is None else await self._state(order_id)
            if order_id is None or state is None:
                return ActionRejected("not_found")
            if state.get("cancelledAt"):
                return ActionDone()
            if state.get("displayFulfillmentStatus") not in _CANCELLABLE:
                return ActionRejected("not_cancellable")
            data = await self._graphql(
                CANCEL,
                {"orderId": order_id, "staffNote": f"{OP_MARK} {operation_id}"},
                mutation=True,
            )
            payload = data.get("orderCancel") or {}
            if payload.get("orderCancelUserErrors"):
                return ActionRejected("not_cancellable")
            for _ in range(CANCEL_POLLS):
                state = await self._state(order_id)
                if state and state.get("cancelledAt"):
                    return ActionDone()
                await asyncio.sleep(0.5)
            return ActionUnknown("shopify: the cancel job has not finished yet")
        except ShopUnavailable as exc:
            if exc.kind == "timeout":
                return ActionUnknown("shopify: cancel timed out")
            raise

    @unreadable_is_malformed
    async def change_address(
        self, order: LiveOrder, address: ShippingAddress, operation_id: str
    ) -> ActionResult:
        """orderUpdate with the new shippingAddress (the recipient's name, phone and
        company kept: the input overwrites the whole address) and, in the same mutation,
        the operation id in the order's metafield support_bot.address_operation — read
        first, so a repeat answers done without a second change. The region is not sent
        (Shopify wants a province code, the customer gives a name)."""
        try:
            order_id = await self._ref(order)
            data = (
                None if order_id is None else await self._graphql(ADDRESS_STATE, {"id": order_id})
            )
            state = None if data is None else data.get("order")
            if order_id is None or not isinstance(state, dict):
                return ActionRejected("not_found")
            if (state.get("metafield") or {}).get("value") == operation_id:
                return ActionDone()
            if state.get("cancelledAt"):
                return ActionRejected("order_cancelled")
            if state.get("displayFulfillmentStatus") not in _CANCELLABLE:
                return ActionRejected("already_shipped")
            kept = {
                k: v
                for k, v in (state.get("shippingAddress") or {}).items()
                if k in ("firstName", "lastName", "phone", "company") and isinstance(v, str)
            }
            mailing = {
                **kept,
                "address1": address.line1,
                "address2": address.line2 or "",
                "city": address.city,
                "zip": address.postal_code,
                "countryCode": address.country_code,
            }
            metafield = {
                "namespace": "support_bot",
                "key": "address_operation",
                "type": "single_line_text_field",
                "value": operation_id,
            }
            done = await self._graphql(
                ADDRESS_UPDATE,
                {"input": {"id": order_id, "shippingAddress": mailing, "metafields": [metafield]}},
                mutation=True,
            )
        except ShopUnavailable as exc:
            if exc.kind == "timeout":
                return ActionUnknown("shopify: address change timed out")
            raise
        payload = done.get("orderUpdate") or {}
        if payload.get("userErrors") or not isinstance(payload.get("order"), dict):
            return ActionRejected("address_refused")
        return ActionDone()

    @unreadable_is_malformed
    async def request_return(
        self, order: LiveOrder, lines: Sequence[ReturnLine], reason: str, operation_id: str
    ) -> ActionResult:
        """returnRequest for the delivered lines; the operation id rides in each line's
        customer note, and the order's returns are searched for it before asking again."""
        mark = f"[{OP_MARK} {operation_id}]"
        try:
            order_id = await self._ref(order)
            if order_id is None:
                return ActionRejected("not_found")
            data = await self._graphql(RETURNS_OF_ORDER, {"id": order_id})
            for existing in _nodes((data.get("order") or {}).get("returns")):
                notes = [
                    n.get("customerNote") or "" for n in _nodes(existing.get("returnLineItems"))
                ]
                if any(mark in note for note in notes):
                    return ActionDone(reference=str(existing.get("id")))
            returnable = await self._graphql(RETURNABLE, {"id": order_id})
            by_line: dict[str, str] = {}
            for fulfillment in _nodes(returnable.get("returnableFulfillments")):
                for item in _nodes(fulfillment.get("returnableFulfillmentLineItems")):
                    fli = item.get("fulfillmentLineItem") or {}
                    line_id = (fli.get("lineItem") or {}).get("id")
                    if isinstance(line_id, str) and isinstance(fli.get("id"), str):
                        by_line[line_id] = fli["id"]
            note = f"{reason[:200]} {mark}"[-255:]
            items = [
                {
                    "fulfillmentLineItemId": by_line[line.item.line_id],
                    "quantity": line.quantity,
                    "returnReason": "OTHER",
                    "customerNote": note,
                }
                for line in lines
                if line.item.line_id in by_line
            ]
            if not items:
                return ActionRejected("not_returnable")
            done = await self._graphql(
                RETURN_REQUEST,
                {"input": {"orderId": order_id, "returnLineItems": items}},
                mutation=True,
            )
        except ShopUnavailable as exc:
            if exc.kind == "timeout":
                return ActionUnknown("shopify: return request timed out")
            raise
        payload = done.get("returnRequest") or {}
        made = payload.get("return")
        if payload.get("userErrors") or not isinstance(made, dict):
            return ActionRejected("not_returnable")
        return ActionDone(reference=str(made.get("id")))


def _nodes(connection: object) -> list[dict[str, Any]]:
    if not isinstance(connection, dict):
        return []
    return [n for n in connection.get("nodes") or [] if isinstance(n, dict)]


def _throttle_wait(answer: dict[str, Any]) -> float | None:
    """Seconds until the bucket holds the query's cost, if the answer says THROTTLED."""
    errors = answer.get("errors")
    if not isinstance(errors, list) or not any(
        isinstance(e, dict) and (e.get("extensions") or {}).get("code") == "THROTTLED"
        for e in errors
    ):
        return None
    cost = (answer.get("extensions") or {}).get("cost") or {}
    status = cost.get("throttleStatus") or {}
    try:
        needed = float(cost["requestedQueryCost"]) - float(status["currentlyAvailable"])
        return max(0.0, needed / float(status["restoreRate"]))
    except (KeyError, TypeError, ValueError, ZeroDivisionError):
        return MAX_THROTTLE_WAIT_S + 1  # throttled, but how long is unknown
