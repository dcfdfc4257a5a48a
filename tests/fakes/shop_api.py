"""A fake shop API that follows the bot's HTTP contract (docs/shop-api.openapi.yaml).

The reference the tests hold the `http` backend and the published document to: an
aiohttp server on 127.0.0.1 with orders in memory (`put`), the bearer token check, and
scripted failures (`fail`): "500" (HTTP 500), "timeout" (no answer until the test ends),
"malformed" (200 with a body that is not JSON), "wrong_shape" (200 JSON that is not an
order), "401" and "429" (with `Retry-After`). `latency_ms` delays every answer (the
bench). `requests` lists (path, query) of every request that reached it.

As a process (the bench): `python -m tests.fakes.shop_api --port 0 --latency-ms 20
--token T --orders FILE.json` prints `listening on http://127.0.0.1:PORT` once ready;
`GET /_fake/stats` answers `{"requests": N}`.

Actions: `POST /api/orders/{number}/cancel` (processing → cancelled, else 409
`not_cancellable`) and `POST /api/orders/{number}/returns` (201 `{"id"}`), both by
`Idempotency-Key`: a key seen before gets the first answer and acts no more.
`cancellations` and `returns` list what was done; `lose_answers` acts, then answers 504
that many times (an answer lost on the way back).

Products: `GET /api/products[?after=N]` serves `products` (None: no such route, a 404)
in pages of `products_page` with `next` (the index of the page's end).
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import json
import signal
import socket
from collections.abc import AsyncIterator
from typing import Any

import pytest
from aiohttp import web

TOKEN = "shop-api-token-7f3a9c1e5b"
FailMode = str  # "500" | "timeout" | "malformed" | "wrong_shape" | "401" | "429"


def order(
    number: str,
    status: str = "processing",
    *,
    phone: str | None = None,
    telegram_id: int | None = None,
    email: str | None = None,
    updated_at: str = "2026-12-01T09:30:00+03:00",
    **extra: Any,
) -> dict[str, Any]:
    """An order as the contract has it (optional parts only when given)."""
    body: dict[str, Any] = {"number": number, "status": status, "updated_at": updated_at}
    customer = {
        k: v
        for k, v in (("phone", phone), ("email", email), ("telegram_id", telegram_id))
        if v is not None
    }
    if customer:
        body["customer"] = customer
    body.update(extra)
    return body


class FakeShopApi:
    def __init__(self, *, token: str = TOKEN, latency_ms: float = 0.0) -> None:
        self.token = token
        self.latency_ms = latency_ms
        self.orders: dict[str, dict[str, Any]] = {}
        self.requests: list[tuple[str, str]] = []
        self.retry_after = "0"
        self._fail: FailMode | None = None
        self._fail_times = 0
        self._closing = asyncio.Event()
        self._runner: web.AppRunner | None = None
        self.cancellations: list[str] = []  # order numbers, one per cancellation done
        self.returns: list[dict[str, Any]] = []  # {"number", "items", "reason", "id"}
        self.lose_answers = 0
        self._answers: dict[str, tuple[int, Any]] = {}  # Idempotency-Key -> first answer
        self.host = "127.0.0.1"
        self.port = 0
        # GET /capabilities: the actions declared (None: no such route, a 404)
        self.capabilities: list[str] | None = ["cancel_order", "request_return"]
        self.not_supported: set[str] = set()  # paths' last part answered 501: "cancel", ...
        self.actions_hang = False  # an action's request is never answered (a dead shop)
        self.nested_answers = 0  # acted, but answered with JSON nested past any parser
        self.products: list[dict[str, Any]] | None = None
        self.products_page = 1000

    @property
    def base_url(self) -> str:
        return f"http://{self.host}:{self.port}/api"

    def put(self, *orders: dict[str, Any]) -> None:
        for one in orders:
            self.orders[one["number"]] = one

    def fail(self, mode: FailMode | None, times: int = 1_000_000) -> None:
        """Answer the next `times` requests with `mode` (None: answer normally again)."""
        self._fail = mode
        self._fail_times = times if mode else 0

    async def start(self, host: str = "127.0.0.1", port: int = 0) -> FakeShopApi:
        app = web.Application()
        app.router.add_get("/api/orders/{number}", self._one)
        app.router.add_get("/api/orders", self._list)
        app.router.add_get("/api/capabilities", self._capabilities)
        app.router.add_get("/api/products", self._products)
        app.router.add_post("/api/orders/{number}/cancel", self._cancel)
        app.router.add_post("/api/orders/{number}/returns", self._return)
        app.router.add_get("/_fake/stats", self._stats)
        sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        sock.bind((host, port))
        self.host, self.port = sock.getsockname()[:2]
        self._runner = web.AppRunner(app, access_log=None, shutdown_timeout=1.0)
        await self._runner.setup()
        await web.SockSite(self._runner, sock).start()
        return self

    async def close(self) -> None:
        self._closing.set()
        if self._runner is not None:
            await self._runner.cleanup()
            self._runner = None

    async def _scripted(self, request: web.Request) -> web.Response | None:
        self.requests.append((request.path, request.query_string))
        if self.latency_ms:
            await asyncio.sleep(self.latency_ms / 1000)
        if request.headers.get("Authorization") != f"Bearer {self.token}":
            return web.json_response({"error": "unauthorized"}, status=401)
        mode = self._fail if self._fail_times > 0 else None
        if mode is None:
            return None
        self._fail_times -= 1
        if mode == "timeout":
            await self._closing.wait()
            return web.Response(status=503)
        if mode == "malformed":
            return web.Response(text='{"number": "12', content_type="application/json")
        if mode == "wrong_shape":
            return web.json_response({"id": 1, "state": "shipped"})
        if mode == "429":
            return web.json_response(
                {"error": "slow down"}, status=429, headers={"Retry-After": self.retry_after}
            )
        return web.json_response({"error": "internal"}, status=int(mode))

    async def _one(self, request: web.Request) -> web.Response:
        scripted = await self._scripted(request)
        if scripted is not None:
            return scripted
        found = self.orders.get(request.match_info["number"])
        if found is None:
            return web.json_response({"error": "not_found"}, status=404)
        return web.json_response(found)

    async def _list(self, request: web.Request) -> web.Response:
        scripted = await self._scripted(request)
        if scripted is not None:
            return scripted
        phone = request.query.get("phone")
        if not phone:
            return web.json_response({"error": "phone is required"}, status=400)
        mine = [o for o in self.orders.values() if (o.get("customer") or {}).get("phone") == phone]
        return web.json_response({"orders": mine})

    async def _products(self, request: web.Request) -> web.Response:
        scripted = await self._scripted(request)
        if scripted is not None:
            return scripted
        if self.products is None:
            return web.json_response({"error": "not_found"}, status=404)
        start = int(request.query.get("after", "0"))
        end = start + self.products_page
        more = end < len(self.products)
        page = {"products": self.products[start:end], "next": str(end) if more else None}
        return web.json_response(page)

    async def _cancel(self, request: web.Request) -> web.Response:
        return await self._act(request, self._do_cancel)

    async def _return(self, request: web.Request) -> web.Response:
        return await self._act(request, self._do_return)

    async def _capabilities(self, request: web.Request) -> web.Response:
        if request.headers.get("Authorization") != f"Bearer {self.token}":
            return web.json_response({"error": "unauthorized"}, status=401)
        if self.capabilities is None:
            return web.json_response({"error": "not_found"}, status=404)
        return web.json_response({"actions": self.capabilities})

    async def _act(self, request: web.Request, do: Any) -> web.Response:
        scripted = await self._scripted(request)
        if scripted is not None:
            return scripted
        if self.actions_hang:
            await self._closing.wait()
            return web.Response(status=503)
        if request.path.rsplit("/", 1)[-1] in self.not_supported:
            return web.json_response({"error": "not_implemented"}, status=501)
        key = request.headers.get("Idempotency-Key", "")
        if not key:
            return web.json_response({"error": "idempotency_key_required"}, status=400)
        if key not in self._answers:
            self._answers[key] = await do(request)
        status, body = self._answers[key]
        if self.nested_answers > 0:
            self.nested_answers -= 1
            depth = 100_000
            return web.Response(text="[" * depth + "]" * depth, content_type="application/json")
        if self.lose_answers > 0:
            self.lose_answers -= 1
            return web.json_response({"error": "gateway"}, status=504)
        return web.json_response(body, status=status)

    async def _do_cancel(self, request: web.Request) -> tuple[int, Any]:
        number = request.match_info["number"]
        found = self.orders.get(number)
        if found is None:
            return 404, {"error": "not_found"}
        if found["status"] != "processing":
            return 409, {"error": "not_cancellable"}
        found["status"] = "cancelled"
        self.cancellations.append(number)
        return 200, found

    async def _do_return(self, request: web.Request) -> tuple[int, Any]:
        number = request.match_info["number"]
        if number not in self.orders:
            return 404, {"error": "not_found"}
        body = await request.json()
        opened = {"number": number, **body, "id": f"RET-{len(self.returns) + 1}"}
        self.returns.append(opened)
        return 201, {"id": opened["id"]}

    async def _stats(self, request: web.Request) -> web.Response:
        return web.json_response({"requests": len(self.requests)})


@pytest.fixture
async def fake_shop_api() -> AsyncIterator[FakeShopApi]:
    server = await FakeShopApi().start()
    try:
        yield server
    finally:
        await server.close()


async def _serve(
    host: str, port: int, latency_ms: float, token: str, orders: list[dict[str, Any]]
) -> None:
    server = FakeShopApi(token=token, latency_ms=latency_ms)
    server.put(*orders)
    await server.start(host, port)
    print(f"listening on {server.base_url}", flush=True)
    stop = asyncio.Event()
    loop = asyncio.get_running_loop()
    for sig in (signal.SIGINT, signal.SIGTERM):
        with contextlib.suppress(NotImplementedError):
            loop.add_signal_handler(sig, stop.set)
    try:
        await stop.wait()
    finally:
        await server.close()


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description="Fake shop API (the bot's HTTP contract)")
    parser.add_argument("--host", default="127.0.0.1")
    parser.add_argument("--port", type=int, default=0, help="0 picks a free port")
    parser.add_argument("--latency-ms", type=float, default=0.0)
    parser.add_argument("--token", default=TOKEN)
    parser.add_argument("--orders", help="a JSON file with a list of orders")
    args = parser.parse_args(argv)
    orders: list[dict[str, Any]] = []
    if args.orders:
        with open(args.orders, encoding="utf-8") as file:
            orders = json.load(file)
    asyncio.run(_serve(args.host, args.port, args.latency_ms, args.token, orders))


if __name__ == "__main__":
    main()
