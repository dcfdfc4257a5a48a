"""A minimal shop API for the support bot (SHOP_BACKEND=http), standard library only.

Run: SHOP_API_TOKEN=change-me python3 shop_api_server.py, then set SHOP_API_URL to
http://127.0.0.1:8081 (https in production). Replace ORDERS and PRODUCTS with reads of
your shop (PRODUCTS is served in one page; a big catalogue pages with "next").
It declares no actions unless SHOP_API_ACTIONS names them, so by default the bot offers
customers none. It carries out one as an example, the change of delivery address
(SHOP_API_ACTIONS=change_address): once per Idempotency-Key, only while the order is
processing. Add cancel and returns the same way (docs/shop-api.openapi.yaml).
"""

import json
import os
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from urllib.parse import parse_qs, unquote, urlsplit

TOKEN = os.environ["SHOP_API_TOKEN"]
ORDERS = {
    "100234": {
        "number": "100234",
        "status": "in_transit",
        "updated_at": "2026-12-01T09:30:00+03:00",
        "customer": {"phone": "+79123456789", "email": "anna@example.com"},
        "items": [{"name": "Coffee machine", "quantity": 1}],
        "delivery": {"carrier": "CDEK", "tracking_number": "1234567890", "eta": "2026-12-04"},
        "total": {"amount": "12990.00", "currency": "RUB"},
    },
    "100235": {
        "number": "100235",
        "status": "processing",
        "updated_at": "2026-12-02T12:00:00+03:00",
        "customer": {"phone": "+79123456789", "email": "anna@example.com"},
        "items": [{"name": "Milk frother", "quantity": 1}],
    },
}
PRODUCTS = [
    {
        "id": "barista",
        "title": "Coffee machine Barista",
        "description": "Espresso machine with a milk frother, 15 bar.",
        "url": "https://shop.example/products/barista",
        "variants": [
            {
                "id": "barista-black",
                "options": {"colour": "black"},
                "price": {"amount": "24990.00", "currency": "RUB"},
                "stock": 4,
            },
            {
                "id": "barista-white",
                "options": {"colour": "white"},
                "price": {"amount": "24990.00", "currency": "RUB"},
                "stock": 0,
                "restock_date": "2026-12-20",
            },
        ],
    },
]
# the actions this server carries out (GET /capabilities), e.g. "change_address"
ACTIONS = [name for name in os.environ.get("SHOP_API_ACTIONS", "").split(",") if name]
ANSWERED: dict[str, int] = {}  # Idempotency-Key -> the status answered: act once per key


class ShopApi(BaseHTTPRequestHandler):
    def do_GET(self) -> None:
        if self.headers.get("Authorization") != f"Bearer {TOKEN}":
            return self.answer(401, {"error": "unauthorized"})
        url = urlsplit(self.path)
        if url.path == "/capabilities":
            return self.answer(200, {"actions": ACTIONS})
        if url.path == "/products":
            return self.answer(200, {"products": PRODUCTS, "next": None})
        if url.path.startswith("/orders/"):
            found = ORDERS.get(unquote(url.path.removeprefix("/orders/")))
            return self.answer(200, found) if found else self.answer(404, {"error": "not found"})
        if url.path == "/orders":
            phone = parse_qs(url.query).get("phone", [""])[0]
            mine = [o for o in ORDERS.values() if o["customer"].get("phone") == phone]
            return self.answer(200, {"orders": mine})
        self.answer(404, {"error": "not found"})

    def do_POST(self) -> None:
        if self.headers.get("Authorization") != f"Bearer {TOKEN}":
            return self.answer(401, {"error": "unauthorized"})
        number, _, action = urlsplit(self.path).path.removeprefix("/orders/").partition("/")
        if action != "address" or "change_address" not in ACTIONS:
            return self.answer(501, {"error": "not_supported"})
        order = ORDERS.get(unquote(number))
        if order is None:
            return self.answer(404, {"error": "not found"})
        key = self.headers.get("Idempotency-Key", "")
        if key in ANSWERED:  # the same request again: answer as the first time
            return self.answer(ANSWERED[key], {})
        if order["status"] != "processing":
            return self.answer(409, {"error": "already_shipped"})
        length = int(self.headers.get("Content-Length", "0"))
        order["shipping_address"] = json.loads(self.rfile.read(length))  # your shop's write
        ANSWERED[key] = 200
        self.answer(200, {})

    def answer(self, status: int, body: object) -> None:
        data = json.dumps(body).encode()
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)


if __name__ == "__main__":
    port = int(os.environ.get("PORT", "8081"))
    ThreadingHTTPServer(("127.0.0.1", port), ShopApi).serve_forever()
