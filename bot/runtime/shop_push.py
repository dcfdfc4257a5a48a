"""The shop's pushes: "this order changed", from the shop to the bot.

Three routes on the webhook server (and, in polling mode, on the health server that
HEALTH_ENABLED opens), each on only when its secret is set:

- `POST /shop/events` — the generic HTTP contract (docs/shop-api.openapi.yaml):
  `X-Shop-Signature: sha256=<hex HMAC-SHA256 of the raw body with SHOP_WEBHOOK_SECRET>`,
  body `{"id": "<event id>", "type": "order.updated", "order": {"number": "8041"}}`;
- `POST /shop/events/shopify` — Shopify's `orders/updated` webhook:
  `X-Shopify-Hmac-Sha256` = base64 HMAC-SHA256 of the raw body with the app's secret
  (SHOPIFY_WEBHOOK_SECRET), the order's `name` ("#1001") in the body;
- `POST /shop/events/woocommerce` — WooCommerce's `order.updated` webhook:
  `X-WC-Webhook-Signature` = base64 HMAC-SHA256 of the raw body with the webhook's
  secret (WOOCOMMERCE_WEBHOOK_SECRET), the order's `number` in the body.

The order: the body is read up to the size limit (a longer one is 413, unread beyond
it), the signature is checked on the raw bytes in constant time (wrong or missing: 401,
nothing parsed), then the body is parsed (not JSON or no order number: 400). An order
nobody subscribed to is answered 200 and nothing is kept; otherwise the event (which
order, the platform's event id) is committed before the 200, so an acknowledged push is
never lost, and a redelivered one (same event id) is stored once. A storage failure is
500: the platform delivers it again. The push is only a hint: the worker reads the order
from the shop before anyone is told anything (bot/runtime/order_notifier.py).
"""

from __future__ import annotations

import base64
import hashlib
import hmac
import json
import logging
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from aiohttp import web

from storage.order_updates import OrderUpdateRepository

log = logging.getLogger(__name__)

GENERIC_PATH = "/shop/events"
SHOPIFY_PATH = "/shop/events/shopify"
WOOCOMMERCE_PATH = "/shop/events/woocommerce"
GENERIC_SIGNATURE = "X-Shop-Signature"
SHOPIFY_SIGNATURE = "X-Shopify-Hmac-Sha256"
WOOCOMMERCE_SIGNATURE = "X-WC-Webhook-Signature"
MAX_NUMBER_CHARS = 64


@dataclass(frozen=True, slots=True)
class PushSecrets:
    generic: str | None = None
    shopify: str | None = None
    woocommerce: str | None = None

    @property
    def any(self) -> bool:
        return bool(self.generic or self.shopify or self.woocommerce)


def _digest(secret: str, body: bytes) -> bytes:
    return hmac.new(secret.encode(), body, hashlib.sha256).digest()


def generic_signature(secret: str, body: bytes) -> str:
    return "sha256=" + _digest(secret, body).hex()


def base64_signature(secret: str, body: bytes) -> str:
    """Shopify's and WooCommerce's form."""
    return base64.b64encode(_digest(secret, body)).decode()


def _answer(status: int, **fields: Any) -> web.Response:
    return web.json_response({"ok": status == 200, **fields}, status=status)


async def _read_bounded(request: web.Request, limit: int) -> bytes | None:
    """The body, or None when it is longer than `limit` (read no further than that)."""
    if request.content_length is not None and request.content_length > limit:
        return None
    chunks: list[bytes] = []
    size = 0
    while True:
        chunk = await request.content.read(min(65_536, limit + 1 - size))
        if not chunk:
            return b"".join(chunks)
        chunks.append(chunk)
        size += len(chunk)
        if size > limit:
            return None


def _number(value: object) -> str | None:
    if isinstance(value, int) and not isinstance(value, bool):
        value = str(value)
    if not isinstance(value, str):
        return None
    number = value.strip().removeprefix("#").strip()
    if not number or len(number) > MAX_NUMBER_CHARS or not number.isprintable():
        return None
    return number


# What each source sends: (the order's number, the event's id) from the body and headers.
Parsed = tuple[str | None, str | None]


def _generic(payload: Any, _headers: Any) -> Parsed:
    if not isinstance(payload, dict) or not isinstance(payload.get("order"), dict):
        return None, None
    event_id = payload.get("id")
    return _number(payload["order"].get("number")), event_id if isinstance(event_id, str) else None


def _shopify(payload: Any, headers: Any) -> Parsed:
    if not isinstance(payload, dict):
        return None, None
    return _number(payload.get("name")), headers.get("X-Shopify-Event-Id") or headers.get(
        "X-Shopify-Webhook-Id"
    )


def _woocommerce(payload: Any, headers: Any) -> Parsed:
    if not isinstance(payload, dict):
        return None, None
    return _number(payload.get("number")), headers.get("X-WC-Webhook-Delivery-ID")


def _is_woocommerce_ping(request: web.Request, body: bytes) -> bool:
    """WooCommerce's test delivery when a webhook is saved: `webhook_id=<n>`, form-encoded,
    without a topic; it carries no order, so answering it 200 tells nothing."""
    prefix = b"webhook_id="
    return (
        "X-WC-Webhook-Topic" not in request.headers
        and body.startswith(prefix)
        and body[len(prefix) :].isdigit()
    )


@dataclass(frozen=True, slots=True)
class _Source:
    """One platform's route: its name in storage, secret, signature header and form."""

    name: str
    secret: str
    header: str
    sign: Callable[[str, bytes], str]
    parse: Callable[[Any, Any], Parsed]


class _Receiver:
    def __init__(
        self,
        source: _Source,
        repo: OrderUpdateRepository,
        *,
        max_bytes: int,
        normalise: Callable[[str], str],
        stored: Callable[[], None],
    ) -> None:
        self._normalise = normalise
        self._source = source
        self._repo = repo
        self._max_bytes = max_bytes
        self._stored = stored

    async def receive(self, request: web.Request) -> web.Response:
        source = self._source
        body = await _read_bounded(request, self._max_bytes)
        if body is None:
            response = _answer(413, error="too_large")
            response.force_close()
            return response
        if source.name == "woocommerce" and _is_woocommerce_ping(request, body):
            return _answer(200, stored=False)  # sent once when the webhook is created
        given = request.headers.get(source.header, "").encode()
        if not hmac.compare_digest(given, source.sign(source.secret, body).encode()):
            log.warning("shop push (%s) with a wrong or missing signature rejected", source.name)
            return _answer(401, error="signature")
        try:
            payload = json.loads(body)
        except (ValueError, RecursionError):
            return _answer(400, error="not_json")
        number, event_id = source.parse(payload, request.headers)
        try:
            number = None if number is None else self._normalise(number)
        except ValueError:
            number = None
        if number is None:
            return _answer(400, error="no_order_number")
        return await self._store(number, event_id or hashlib.sha256(body).hexdigest())

    async def _store(self, number: str, key: str) -> web.Response:
        try:
            if not await self._repo.is_subscribed(number):
                return _answer(200, stored=False)
            new = await self._repo.store_event(
                source=self._source.name, event_key=key[:200], order_number=number
            )
        except Exception:
            log.exception("shop push (%s) could not be stored", self._source.name)
            return _answer(500, error="storage")
        if new:
            self._stored()
        return _answer(200, stored=True)


def add_shop_push_routes(
    app: web.Application,
    repo: OrderUpdateRepository,
    secrets: PushSecrets,
    *,
    max_bytes: int,
    normalise: Callable[[str], str],
    stored: Callable[[], None],
) -> None:
    """The routes whose secret is set; `normalise`: the shop's order-number rule;
    `stored` is called after each new stored event."""
    sources = (
        (GENERIC_PATH, "http", secrets.generic, GENERIC_SIGNATURE, generic_signature, _generic),
        (SHOPIFY_PATH, "shopify", secrets.shopify, SHOPIFY_SIGNATURE, base64_signature, _shopify),
        (
            WOOCOMMERCE_PATH,
            "woocommerce",
            secrets.woocommerce,
            WOOCOMMERCE_SIGNATURE,
            base64_signature,
            _woocommerce,
        ),
    )
    for path, name, secret, header, sign, parse in sources:
        if secret:
            source = _Source(name, secret, header, sign, parse)
            app.router.add_post(
                path,
                _Receiver(
                    source, repo, max_bytes=max_bytes, normalise=normalise, stored=stored
                ).receive,
            )
