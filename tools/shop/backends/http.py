"""`SHOP_BACKEND=http`: any shop with a developer, through the bot's own small contract.

The contract (docs/shop-api.openapi.yaml; README "Connect your shop"), every request
with `Authorization: Bearer SHOP_API_TOKEN`:

- `GET {SHOP_API_URL}/orders/{number}` → 200 one order, 404 when there is none;
- `GET {SHOP_API_URL}/orders?phone={E.164}` → 200 `{"orders": [...]}`;
- an order: `number`, `status` (processing, in_transit, ready_for_pickup, delivered,
  cancelled) and `updated_at` (RFC 3339 with an offset) required; `customer {phone,
  email, telegram_id}`, `items [{name, quantity}]`, `delivery {carrier,
  tracking_number, tracking_url, eta, pickup_point}`, `total {amount, currency}`
  optional; unknown fields ignored;
- optional, the catalogue: `GET {SHOP_API_URL}/products[?after={cursor}]` → 200
  `{"products": [...], "next": cursor or null}` (pages followed to the end, at most
  `MAX_CATALOGUE_VARIANTS` variants), 404 when the shop serves no products; a product
  `{id, title, description, url, variants: [{id, title, options, price, stock,
  in_stock, restock_date}]}`.

Behaving well towards the shop: one request may take `timeout_s` (connect 1.5 s at
most); one retry after a connection error or a 5xx, only if a second attempt fits the
`budget_s` of the whole read (the order tool's own bound is 5 s); a 429 is waited out
when its Retry-After fits the budget, else it is `rate_limited`; at most
`max_concurrency` requests to the shop at once. Anything else that goes wrong is a
`ShopUnavailable` of its kind (timeout, unavailable, rate_limited, auth, malformed) —
an answer that does not follow the contract, a body over `MAX_BODY_BYTES`, an order
whose `number` is not the one asked. The token is read only to build the header; logs
name the shop's host and the HTTP status, never the token, a phone or a query.

Actions (`OrderActions`): the shop declares which it does (`GET /capabilities` →
`{"actions": [...]}`; none when it serves no such route), and a 501/405 to an action
means it does not do that one (`NOT_SUPPORTED`, nothing done). `POST
/orders/{number}/cancel`, `POST /orders/{number}/returns` and `POST
/orders/{number}/address` with `Idempotency-Key: <operation id>`, one attempt each; an
outcome that may have taken effect (timeout, broken connection, 5xx) is `ActionUnknown`,
and services/actions.py asks again with the same key, which the contract makes safe.
"""

from __future__ import annotations

import asyncio
import logging
import re
from collections.abc import Sequence
from datetime import date
from decimal import Decimal
from typing import Annotated, Any, Literal
from urllib.parse import quote, urlsplit

import aiohttp
from pydantic import (
    AwareDatetime,
    BaseModel,
    ConfigDict,
    Field,
    SecretStr,
    StringConstraints,
    ValidationError,
)

from tools.shop.backend import (
    NOT_SUPPORTED,
    ActionDone,
    ActionRejected,
    ActionResult,
    ActionUnknown,
    OrderActions,
    ReturnLine,
    ShippingAddress,
    ShopSetupError,
    ShopUnavailable,
)
from tools.shop.backends.body import BodyTooLarge, decode_json, read_body
from tools.shop.orders import SHOP_WRITTEN, Delivery, LiveOrder, Money, OrderItem, OrderNumberRule
from tools.shop.products import MAX_CATALOGUE_VARIANTS, Product, Variant
from tools.shop.rules import OrderStatus, normalise_phone_or_none

log = logging.getLogger("tools.shop.http")

MAX_BODY_BYTES = 1024 * 1024
MAX_PRODUCTS_PAGE_BYTES = 8 * 1024 * 1024  # one page of the catalogue
MAX_PRODUCT_PAGES = 200
# orders kept from one phone's list (the newest)
PHONE_ORDERS_LIMIT = 20
# a second attempt is made only when at least this much of the budget is left
MIN_RETRY_S = 1.0
RETRY_STATUSES = frozenset({500, 502, 503, 504})
# the pause before the second attempt when the shop did not say (Retry-After)
DEFAULT_RETRY_WAIT_S = {"unavailable": 0.2, "rate_limited": 1.0}
USER_AGENT = "support-bot (shop API client)"
# the start-up probe asks for a phone no customer has
PROBE_PHONE = "+10000000000"

Text = Annotated[str, StringConstraints(max_length=500)]


class _Model(BaseModel):
    model_config = ConfigDict(extra="ignore", frozen=True)


class CustomerIn(_Model):
    phone: Text | None = None
    email: Text | None = None
    telegram_id: Annotated[int, Field(gt=0, lt=2**52)] | None = None


class ItemIn(_Model):
    name: Annotated[str, StringConstraints(min_length=1, max_length=300)]
    quantity: Annotated[int, Field(ge=0, le=1_000_000)] = 1


class DeliveryIn(_Model):
    carrier: Text | None = None
    tracking_number: Text | None = None
    tracking_url: Text | None = None
    eta: date | None = None
    pickup_point: Text | None = None


class TotalIn(_Model):
    amount: Decimal
    currency: Annotated[str, StringConstraints(min_length=1, max_length=8)]


class OrderIn(_Model):
    """One order as the contract has it."""

    number: Annotated[str, StringConstraints(min_length=1, max_length=100)]
    status: OrderStatus
    updated_at: AwareDatetime
    customer: CustomerIn | None = None
    items: Annotated[list[ItemIn], Field(max_length=200)] = []
    delivery: DeliveryIn | None = None
    total: TotalIn | None = None


class OrderListIn(_Model):
    orders: Annotated[list[OrderIn], Field(max_length=1000)]


class VariantIn(_Model):
    id: Annotated[str, StringConstraints(min_length=1, max_length=200)]
    title: Text | None = None
    options: Annotated[
        dict[Annotated[str, StringConstraints(max_length=100)], Text], Field(max_length=10)
    ] = {}
    price: TotalIn | None = None
    stock: Annotated[int, Field(ge=-1_000_000, le=10**9)] | None = None
    in_stock: bool | None = None
    restock_date: date | None = None


class ProductIn(_Model):
    id: Annotated[str, StringConstraints(min_length=1, max_length=200)]
    title: Annotated[str, StringConstraints(min_length=1, max_length=300)]
    description: Annotated[str, StringConstraints(max_length=5000)] = ""
    url: Annotated[str, StringConstraints(max_length=2000)] | None = None
    variants: Annotated[list[VariantIn], Field(min_length=1, max_length=100)]


class ProductPageIn(_Model):
    products: Annotated[list[ProductIn], Field(max_length=5000)]
    next: Annotated[str, StringConstraints(min_length=1, max_length=500)] | None = None


def to_product(product: ProductIn) -> Product:
    """The contract's product as the bot's (a page link only when it is http(s))."""
    url = product.url if product.url and urlsplit(product.url).scheme in ("http", "https") else None
    return Product(
        product_id=product.id,
        title=product.title,
        description=product.description,
        url=url,
        variants=tuple(
            Variant(
                variant_id=v.id,
                title=v.title or "",
                options=tuple(v.options.items()),
                price=None if v.price is None else Money(v.price.amount, v.price.currency.upper()),
                stock=v.stock,
                in_stock=v.in_stock,
                restock_date=v.restock_date,
            )
            for v in product.variants
        ),
    )


def to_live_order(order: OrderIn) -> LiveOrder:
    """The contract's order as the bot's; a phone the rule cannot read matches nobody."""
    customer = order.customer or CustomerIn()
    delivery = None
    if order.delivery is not None:
        d = order.delivery
        delivery = Delivery(
            carrier=d.carrier,
            tracking_number=d.tracking_number,
            tracking_url=d.tracking_url,
            eta=d.eta,
            pickup_point=d.pickup_point,
        )
    return LiveOrder(
        number=order.number,
        status=order.status,
        updated_at=order.updated_at,
        customer_phone=normalise_phone_or_none(customer.phone),
        customer_email=customer.email,
        customer_telegram_id=customer.telegram_id,
        items=tuple(OrderItem(name=i.name, quantity=i.quantity) for i in order.items),
        delivery=delivery,
        total=None if order.total is None else Money(order.total.amount, order.total.currency),
    )


class HttpBackend:
    """The generic HTTP contract (module docstring)."""

    name = "http"
    reads_live: tuple[str, ...] = ("orders",)

    def __init__(
        self,
        url: str,
        token: SecretStr,
        *,
        number_rule: OrderNumberRule = SHOP_WRITTEN,
        timeout_s: float = 3.0,
        budget_s: float = 4.5,
        max_concurrency: int = 8,
    ) -> None:
        self._url = url.rstrip("/")
        self._token = token
        self.number_rule = number_rule
        self.host = urlsplit(self._url).netloc
        self._timeout = aiohttp.ClientTimeout(total=timeout_s, connect=min(1.5, timeout_s))
        self._timeout_s = timeout_s
        self._budget_s = budget_s
        self._slots = asyncio.Semaphore(max_concurrency)
        self._session: aiohttp.ClientSession | None = None

    async def get_order(self, number: str) -> LiveOrder | None:
        status, body = await self._get(f"/orders/{quote(number, safe='')}")
        if status == 404:
            return None
        order = to_live_order(_parse(OrderIn, body))
        try:
            answered = self.number_rule.normalise(order.number)
        except ValueError:
            answered = None
        if answered != number:  # another order than the one asked: never shown as this one
            raise ShopUnavailable("malformed", "the answer is another order")
        return order

    async def orders_for_phone(self, phone: str) -> Sequence[LiveOrder]:
        status, body = await self._get("/orders", {"phone": phone})
        if status == 404:
            raise ShopUnavailable("malformed", "HTTP 404 for the order list")
        listed = _parse(OrderListIn, body).orders
        orders = sorted((to_live_order(o) for o in listed), key=lambda o: o.updated_at)
        return orders[::-1][:PHONE_ORDERS_LIMIT]

    async def catalogue(self) -> tuple[Product, ...]:
        """Every page of `GET /products` (none when the shop serves no catalogue: 404)."""
        products: list[Product] = []
        variants = 0
        cursor: str | None = None
        for _ in range(MAX_PRODUCT_PAGES):
            params = {"after": cursor} if cursor is not None else None
            status, body = await self._get("/products", params, limit=MAX_PRODUCTS_PAGE_BYTES)
            if status == 404:
                return ()
            page = _parse(ProductPageIn, body)
            for raw in page.products:
                variants += len(raw.variants)
                if variants > MAX_CATALOGUE_VARIANTS:
                    log.warning(
                        "shop API at %s: the catalogue is cut at %d variants",
                        self.host,
                        MAX_CATALOGUE_VARIANTS,
                    )
                    return tuple(products)
                products.append(to_product(raw))
            if page.next is None or page.next == cursor:
                return tuple(products)
            cursor = page.next
        log.warning(
            "shop API at %s: the catalogue is cut at %d pages", self.host, MAX_PRODUCT_PAGES
        )
        return tuple(products)

    async def check(self) -> None:
        """One list request for a phone nobody has: proves the address, the token and the
        contract. Unreachable → `ShopUnavailable` (the start retries); anything else
        wrong → `ShopSetupError`, one line."""
        try:
            status, body = await self._get("/orders", {"phone": PROBE_PHONE}, attempts=1)
        except ShopUnavailable as exc:
            if exc.kind == "auth":
                raise ShopSetupError(
                    f"SHOP_API_TOKEN was rejected by the shop API at {self.host} ({exc.detail})"
                ) from None
            if exc.kind == "malformed":
                raise ShopSetupError(self._not_the_api(exc.detail)) from None
            raise
        if status == 404:
            raise ShopSetupError(self._not_the_api("HTTP 404 for /orders"))
        try:
            _parse(OrderListIn, body)
        except ShopUnavailable as exc:
            raise ShopSetupError(self._not_the_api(exc.detail)) from None

    # -- actions the customer confirmed (`OrderActions`) ----------------------------------

    def order_actions(self) -> OrderActions:
        return self

    async def supported_actions(self) -> frozenset[str]:
        """`GET /capabilities` → `{"actions": [...]}`: what the shop declares it does; a
        shop that serves no capabilities (404) does none."""
        status, body = await self._get("/capabilities", attempts=1)
        if status == 404:
            return frozenset()
        listed = body.get("actions") if isinstance(body, dict) else None
        if not isinstance(listed, list):
            raise ShopUnavailable("malformed", "capabilities without an actions list")
        return frozenset(name for name in listed if isinstance(name, str))

    async def cancel_order(self, order: LiveOrder, operation_id: str) -> ActionResult:
        """`POST /orders/{number}/cancel` with `Idempotency-Key: <operation id>`."""
        path = f"/orders/{quote(order.number, safe='')}/cancel"
        outcome = await self._post(path, None, operation_id)
        return outcome if not isinstance(outcome, tuple) else ActionDone()

    async def request_return(
        self, order: LiveOrder, lines: Sequence[ReturnLine], reason: str, operation_id: str
    ) -> ActionResult:
        """`POST /orders/{number}/returns` {items, reason} with `Idempotency-Key`."""
        body = {
            "items": [{"name": line.item.name, "quantity": line.quantity} for line in lines],
            "reason": reason,
        }
        path = f"/orders/{quote(order.number, safe='')}/returns"
        outcome = await self._post(path, body, operation_id)
        if not isinstance(outcome, tuple):
            return outcome
        reference = outcome[1].get("id") if isinstance(outcome[1], dict) else None
        return ActionDone(reference=str(reference)[:100] if reference else None)

    async def change_address(
        self, order: LiveOrder, address: ShippingAddress, operation_id: str
    ) -> ActionResult:
        """`POST /orders/{number}/address` {line1, line2, city, postal_code, country_code,
        region} with `Idempotency-Key`."""
        body = {
            "line1": address.line1,
            "line2": address.line2,
            "city": address.city,
            "postal_code": address.postal_code,
            "country_code": address.country_code,
            "region": address.region,
        }
        path = f"/orders/{quote(order.number, safe='')}/address"
        outcome = await self._post(path, body, operation_id)
        return outcome if not isinstance(outcome, tuple) else ActionDone()

    async def _post(
        self, path: str, body: dict[str, Any] | None, key: str
    ) -> ActionResult | tuple[int, Any]:
        """One attempt (the caller asks again with the same key when the outcome is
        unknown): (status, JSON) on success, `ActionRejected` on a refusal, 401/403 or
        404 (nothing was done), `ActionUnknown` when the request may have been acted on
        (a timeout, a broken connection, a 5xx, an answer that cannot be read)."""
        headers = {
            "Authorization": f"Bearer {self._token.get_secret_value()}",
            "Idempotency-Key": key,
        }
        try:
            async with (
                self._slots,
                self._client().post(
                    self._url + path, json=body or {}, headers=headers, allow_redirects=False
                ) as response,
            ):
                status = response.status
                try:
                    raw: bytes | None = await read_body(response, MAX_BODY_BYTES)
                except BodyTooLarge:
                    raw = None  # a refusal is still a refusal; a success cannot be read
        except TimeoutError:
            return ActionUnknown("timeout")
        except aiohttp.ClientError as exc:
            return ActionUnknown(type(exc).__name__)
        log.info("shop API at %s: action request answered HTTP %s", self.host, status)
        if status in (401, 403):
            return ActionRejected("shop_auth")
        if status == 404:
            return ActionRejected("not_found")
        if status in (405, 501):  # the shop does not do this: nothing was done
            return ActionRejected(NOT_SUPPORTED)
        if status in (409, 422):
            return ActionRejected(_refusal_code(raw))
        if status not in (200, 201):
            return ActionUnknown(f"HTTP {status}")
        if raw is None:
            return ActionUnknown("the answer is too large")
        try:
            return status, decode_json(raw) if raw else None
        except ShopUnavailable:
            return ActionUnknown("the answer is not JSON")

    async def aclose(self) -> None:
        if self._session is not None:
            await self._session.close()
            self._session = None

    # -- internals ----------------------------------------------------------------

    def _not_the_api(self, detail: str) -> str:
        return (
            f"SHOP_API_URL {self.host} does not answer like the shop API of "
            f"docs/shop-api.openapi.yaml ({detail})"
        )

    def _client(self) -> aiohttp.ClientSession:
        if self._session is None:
            self._session = aiohttp.ClientSession(
                timeout=self._timeout,
                headers={"Accept": "application/json", "User-Agent": USER_AGENT},
                raise_for_status=False,
            )
        return self._session

    async def _get(
        self,
        path: str,
        params: dict[str, str] | None = None,
        *,
        attempts: int = 2,
        limit: int = MAX_BODY_BYTES,
    ) -> tuple[int, Any]:
        """(status, decoded JSON or None) for 200 and 404; `ShopUnavailable` otherwise."""
        loop = asyncio.get_running_loop()
        deadline = loop.time() + self._budget_s
        attempt = 0
        while True:
            attempt += 1
            try:
                async with self._slots:
                    return await self._once(path, params, limit)
            except _Retryable as retry:
                left = deadline - loop.time()
                wait = retry.after_s
                if wait is None:
                    wait = DEFAULT_RETRY_WAIT_S[retry.kind]
                if attempt >= attempts or left - wait < min(MIN_RETRY_S, self._timeout_s):
                    raise ShopUnavailable(retry.kind, retry.detail) from None
                log.info(
                    "shop API at %s: %s, asking again in %.1f s", self.host, retry.detail, wait
                )
                if wait:
                    await asyncio.sleep(wait)

    async def _once(
        self, path: str, params: dict[str, str] | None, limit: int = MAX_BODY_BYTES
    ) -> tuple[int, Any]:
        headers = {"Authorization": f"Bearer {self._token.get_secret_value()}"}
        try:
            async with self._client().get(
                self._url + path, params=params, headers=headers, allow_redirects=False
            ) as response:
                status = response.status
                if status == 404:
                    return 404, None
                if status in (401, 403):
                    raise ShopUnavailable("auth", f"HTTP {status}")
                if status == 429:
                    raise _Retryable(
                        "rate_limited",
                        "HTTP 429",
                        _retry_after(response.headers.get("Retry-After")),
                    )
                if status in RETRY_STATUSES:
                    raise _Retryable("unavailable", f"HTTP {status}")
                if status != 200:
                    raise ShopUnavailable("unavailable", f"HTTP {status}")
                raw = await read_body(response, limit)
        except TimeoutError:
            raise ShopUnavailable("timeout", f"no answer within {self._timeout_s:g} s") from None
        except aiohttp.ClientConnectionError as exc:
            raise _Retryable("unavailable", f"cannot connect ({type(exc).__name__})") from None
        except aiohttp.ClientError as exc:
            raise ShopUnavailable("unavailable", type(exc).__name__) from None
        return 200, decode_json(raw)


class _Retryable(Exception):
    def __init__(
        self,
        kind: Literal["unavailable", "rate_limited"],
        detail: str,
        after_s: float | None = None,
    ) -> None:
        super().__init__(detail)
        self.kind = kind
        self.detail = detail
        self.after_s = after_s


_REFUSAL_CODE = re.compile(r"[a-z_]{1,40}")


def _refusal_code(raw: bytes | None) -> str:
    """The shop's short refusal code (`{"error": "not_cancellable"}`), never its free
    text: anything else is "rejected"."""
    if raw is None:
        return "rejected"
    try:
        code = decode_json(raw).get("error")
    except (ShopUnavailable, AttributeError):
        return "rejected"
    return code if isinstance(code, str) and _REFUSAL_CODE.fullmatch(code) else "rejected"


def _retry_after(value: str | None) -> float | None:
    """Retry-After in seconds (an HTTP date is not waited for: too far to plan)."""
    if value is None:
        return None
    try:
        seconds = float(value.strip())
    except ValueError:
        return 1e9  # a date: longer than any budget
    return max(0.0, seconds)


def _parse(model: type[OrderIn] | type[OrderListIn] | type[ProductPageIn], body: Any) -> Any:
    try:
        return model.model_validate(body)
    except ValidationError as exc:
        fields = sorted({".".join(str(p) for p in e["loc"]) or "answer" for e in exc.errors()})
        raise ShopUnavailable("malformed", "unexpected " + ", ".join(fields[:3])) from None
