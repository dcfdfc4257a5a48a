"""A fake WooCommerce REST API v3 on 127.0.0.1, for the woocommerce backend.

Built from the documented shapes (https://woocommerce.github.io/woocommerce-rest-api-docs/,
REST API v3): consumer key/secret as HTTP Basic; GET /wp-json/wc/v3/orders/{id} (404
`woocommerce_rest_shop_order_invalid_id`), GET /orders?search=&per_page=&page= with the
X-WP-Total / X-WP-TotalPages headers (the search matches loosely, here: any order whose
number or billing phone digits contain the text), PUT /orders/{id} {"status"} or
{"shipping": {...}} (the properties given are set, the others kept), GET/POST
/orders/{id}/notes ({id, author, date_created_gmt, note, customer_note}); 401
`woocommerce_rest_cannot_view`. Dates are `date_modified_gmt` without a zone (GMT).
Products: GET /products?status=&per_page=&page= (X-WP-TotalPages), GET
/products/{id}/variations, GET /data/currencies/current ({code, name, symbol}).
A test scripts failures with `fail_next` and reads `requests` ("GET /orders/12", ...).
"""

from __future__ import annotations

import asyncio
import base64
import itertools
import re
from collections.abc import AsyncIterator
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from typing import Any

import pytest
from aiohttp import web
from aiohttp.test_utils import TestServer

KEY = "ck_test"
SECRET = "cs_test_secret"
API = "/wp-json/wc/v3"
START = datetime(2026, 11, 1, 10, 0)


@dataclass
class FakeWoo:
    orders: dict[int, dict[str, Any]] = field(default_factory=dict)
    notes: dict[int, list[dict[str, Any]]] = field(default_factory=dict)
    requests: list[str] = field(default_factory=list)
    failures: list[str] = field(default_factory=list)
    url: str = ""
    _note_ids: itertools.count[int] = field(default_factory=lambda: itertools.count(100))
    products: list[dict[str, Any]] = field(default_factory=list)
    variations: dict[int, list[dict[str, Any]]] = field(default_factory=dict)
    currency: str = "RUB"

    def fail_next(self, *kinds: str) -> None:
        """The next requests fail, in order: "401", "429", "429_long", "500", "slow", "not_json"."""
        self.failures.extend(kinds)

    def add_order(
        self,
        order_id: int,
        *,
        phone: str = "+7 912 345-67-89",
        status: str = "processing",
        **extra: Any,
    ) -> dict[str, Any]:
        order = {
            "id": order_id,
            "number": str(extra.pop("number", order_id)),
            "status": status,
            "currency": "RUB",
            "total": "1990.00",
            "date_modified_gmt": (START + timedelta(hours=len(self.orders))).strftime(
                "%Y-%m-%dT%H:%M:%S"
            ),
            "date_completed_gmt": "2026-11-20T10:00:00" if status == "completed" else None,
            "billing": {"phone": phone, "email": "anna@example.com"},
            "shipping": {
                "first_name": "Anna",
                "last_name": "Petrova",
                "address_1": "Tverskaya 1",
                "address_2": "",
                "city": "Moscow",
                "state": "",
                "postcode": "125009",
                "country": "RU",
            },
            "line_items": [{"id": order_id * 10, "name": "Mug", "quantity": 2}],
            "meta_data": [],
            **extra,
        }
        self.orders[order_id] = order
        return order

    def _authorised(self, request: web.Request) -> bool:
        expected = base64.b64encode(f"{KEY}:{SECRET}".encode()).decode()
        return request.headers.get("Authorization") == f"Basic {expected}"

    @web.middleware
    async def middleware(self, request: web.Request, handler: Any) -> web.StreamResponse:
        self.requests.append(f"{request.method} {request.path.removeprefix(API)}")
        if not self._authorised(request):
            return _error("woocommerce_rest_cannot_view", "Sorry, you cannot list resources.", 401)
        if self.failures:
            kind = self.failures.pop(0)
            if kind == "401":
                return _error("woocommerce_rest_authentication_error", "Invalid signature.", 401)
            if kind in ("429", "429_long"):
                wait = "0" if kind == "429" else "120"
                return web.json_response(
                    {"message": "Too many requests"}, status=429, headers={"Retry-After": wait}
                )
            if kind == "500":
                return web.Response(status=503, text="busy")
            if kind == "slow":
                await asyncio.sleep(30)
            if kind == "not_json":
                return web.Response(
                    text="<html>WordPress maintenance</html>", content_type="text/html"
                )
        result: web.StreamResponse = await handler(request)
        return result

    async def list_orders(self, request: web.Request) -> web.Response:
        search = re.sub(r"\D", "", request.query.get("search", ""))
        per_page = int(request.query.get("per_page", "10"))
        page = int(request.query.get("page", "1"))
        hits = [
            o
            for o in sorted(
                self.orders.values(), key=lambda o: o["date_modified_gmt"], reverse=True
            )
            if not search
            or search in re.sub(r"\D", "", o["number"])
            or search in re.sub(r"\D", "", o["billing"]["phone"])
        ]
        chunk = hits[(page - 1) * per_page : page * per_page]
        pages = max(1, -(-len(hits) // per_page))
        return web.json_response(
            chunk, headers={"X-WP-Total": str(len(hits)), "X-WP-TotalPages": str(pages)}
        )

    async def list_products(self, request: web.Request) -> web.Response:
        per_page = int(request.query.get("per_page", "10"))
        page = int(request.query.get("page", "1"))
        status = request.query.get("status")
        hits = [p for p in self.products if status is None or p.get("status") == status]
        pages = max(1, -(-len(hits) // per_page))
        return web.json_response(
            hits[(page - 1) * per_page : page * per_page],
            headers={"X-WP-Total": str(len(hits)), "X-WP-TotalPages": str(pages)},
        )

    async def list_variations(self, request: web.Request) -> web.Response:
        return web.json_response(self.variations.get(int(request.match_info["id"]), []))

    async def current_currency(self, request: web.Request) -> web.Response:
        return web.json_response({"code": self.currency, "name": self.currency, "symbol": "₽"})

    async def get_order(self, request: web.Request) -> web.Response:
        order = self.orders.get(int(request.match_info["id"]))
        if order is None:
            return _error("woocommerce_rest_shop_order_invalid_id", "Invalid ID.", 404)
        return web.json_response(order)

    async def put_order(self, request: web.Request) -> web.Response:
        order = self.orders.get(int(request.match_info["id"]))
        if order is None:
            return _error("woocommerce_rest_shop_order_invalid_id", "Invalid ID.", 404)
        for key, value in ((await request.json()) or {}).items():
            if isinstance(value, dict) and isinstance(order.get(key), dict):
                order[key].update(value)  # e.g. shipping: the properties given are set
            else:
                order[key] = value
        return web.json_response(order)

    async def get_notes(self, request: web.Request) -> web.Response:
        return web.json_response(self.notes.get(int(request.match_info["id"]), []))

    async def post_note(self, request: web.Request) -> web.Response:
        order_id = int(request.match_info["id"])
        if order_id not in self.orders:
            return _error("woocommerce_rest_order_invalid_id", "Invalid order ID.", 404)
        body = await request.json()
        note = {
            "id": next(self._note_ids),
            "author": "system",
            "date_created_gmt": "2026-12-02T05:00:00",
            "note": body["note"],
            "customer_note": bool(body.get("customer_note")),
        }
        self.notes.setdefault(order_id, []).insert(0, note)
        return web.json_response(note, status=201)


def _error(code: str, message: str, status: int) -> web.Response:
    return web.json_response(
        {"code": code, "message": message, "data": {"status": status}}, status=status
    )


@pytest.fixture
async def fake_woo() -> AsyncIterator[FakeWoo]:
    fake = FakeWoo()
    app = web.Application(middlewares=[fake.middleware])
    app.router.add_get(f"{API}/orders", fake.list_orders)
    app.router.add_get(f"{API}/orders/{{id:\\d+}}", fake.get_order)
    app.router.add_put(f"{API}/orders/{{id:\\d+}}", fake.put_order)
    app.router.add_get(f"{API}/orders/{{id:\\d+}}/notes", fake.get_notes)
    app.router.add_post(f"{API}/orders/{{id:\\d+}}/notes", fake.post_note)
    app.router.add_get(f"{API}/products", fake.list_products)
    app.router.add_get(f"{API}/products/{{id:\\d+}}/variations", fake.list_variations)
    app.router.add_get(f"{API}/data/currencies/current", fake.current_currency)
    server = TestServer(app, host="127.0.0.1")
    await server.start_server()
    fake.url = str(server.make_url("")).rstrip("/")
    try:
        yield fake
    finally:
        await server.close()
