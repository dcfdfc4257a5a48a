"""A minimal shop API for the support bot (SHOP_BACKEND=http), standard library only.

Run: SHOP_API_TOKEN=change-me python3 shop_api_server.py, then set SHOP_API_URL to
http://127.0.0.1:8081 (https in production). Replace ORDERS and PRODUCTS with reads of
your shop (PRODUCTS is served in one page; a big catalogue pages with "next").
It serves no actions: ACTIONS is empty, so the bot offers customers none. To let them
cancel or return through the bot, add the POST routes of docs/shop-api.openapi.yaml and
name them in ACTIONS ("cancel_order", "request_return").
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
ACTIONS: list[str] = []  # the actions this server carries out (GET /capabilities)


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
