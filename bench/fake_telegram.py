"""The test fake of the Bot API, run as its own process for the benchmark.

It is `tests.fakes.telegram_server.FakeTelegramServer` (the same long poll, the same
recording) with what a load driver needs on top, kept here so the test fake stays small:

- every accepted message gets the time it was accepted (epoch seconds), so end-to-end
  latency is "reply accepted" − "update queued", both measured on this machine's clock;
- `POST /_fake/updates` queues a JSON list of updates in one request (a driver of 1,000
  chats would otherwise need 1,000 requests);
- `GET /_fake/messages?after=N&wait=S` returns the messages accepted from index N on,
  waiting up to S seconds for a new one (a long poll: the driver never spins);
- `GET /_fake/calls?method=getUpdates` returns the times of one method's calls (the
  bench reads the first `getUpdates` to time the start-up);
- `GET /_fake/signs?after=N` lists the visible signs of work from index N on: drafts
  (`sendMessageDraft`, with whether they had text) and typing indicators, each with its
  chat and time (the streaming scenario, bench/streaming.py).

    python -m bench.fake_telegram --port 0 --token 123456:TEST-TOKEN

prints `listening on http://127.0.0.1:PORT` when ready and stops on SIGTERM/SIGINT.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import signal
import time
from typing import Any

from aiohttp import web

from tests.fakes.telegram_server import FakeTelegramServer

MAX_WAIT_S = 30.0


class BenchTelegramServer(FakeTelegramServer):
    """The fake Bot API plus the bench's control endpoints (see the module docstring)."""

    def __init__(self, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.accepted_at: list[float] = []  # parallel to `messages`

    async def start(self, port: int = 0) -> str:
        app = web.Application(client_max_size=64 * 1024 * 1024)
        app.router.add_route("*", "/bot{token}/{method}", self._dispatch)
        app.router.add_post("/_fake/updates", self._queue_updates)
        app.router.add_get("/_fake/messages", self._list_messages)
        app.router.add_get("/_fake/calls", self._list_calls)
        app.router.add_get("/_fake/signs", self._list_signs)
        self._runner = web.AppRunner(app, handler_cancellation=True, access_log=None)
        await self._runner.setup()
        site = web.TCPSite(self._runner, self._host, port)
        await site.start()
        sockets = site._server.sockets if site._server else []  # type: ignore[union-attr]
        self.base_url = f"http://{self._host}:{sockets[0].getsockname()[1]}"
        return self.base_url

    def _accept(
        self,
        chat_id: int,
        text: str,
        parse_mode: str | None,
        params: dict[str, Any],
        kind: str = "text",
    ) -> dict[str, Any]:
        self.accepted_at.append(time.time())
        return super()._accept(chat_id, text, parse_mode, params, kind)

    async def _queue_updates(self, request: web.Request) -> web.Response:
        updates = await request.json()
        if not isinstance(updates, list):
            return web.json_response({"ok": False, "description": "expected a list"}, status=400)
        ids = [self.enqueue_update(update) for update in updates]
        return web.json_response({"ok": True, "result": ids})

    async def _list_messages(self, request: web.Request) -> web.Response:
        after = int(request.query.get("after", "0"))
        wait = min(float(request.query.get("wait", "0")), MAX_WAIT_S)
        if wait > 0 and len(self.messages) <= after:
            with contextlib.suppress(TimeoutError):
                await self.wait_until(lambda: len(self.messages) > after, within=wait)
        result = [
            {"chat_id": m.chat_id, "text": m.text, "kind": m.kind, "at": at}
            for m, at in zip(self.messages[after:], self.accepted_at[after:], strict=True)
        ]
        return web.json_response({"ok": True, "result": result})

    async def _list_calls(self, request: web.Request) -> web.Response:
        method = request.query.get("method", "")
        times = [call.at for call in self.calls_of(method)]
        return web.json_response({"ok": True, "result": times})

    async def _list_signs(self, request: web.Request) -> web.Response:
        after = int(request.query.get("after", "0"))
        signs = [
            {
                "method": c.method,
                "chat_id": c.params.get("chat_id"),
                "text": bool(c.params.get("text")),
                "at": c.at,
            }
            for c in self.calls
            if c.method in ("sendMessageDraft", "sendChatAction")
        ]
        return web.json_response({"ok": True, "result": signs[after:]})


async def _serve(host: str, port: int, token: str) -> None:
    server = BenchTelegramServer(token=token, host=host)
    print(f"listening on {await server.start(port)}", flush=True)
    stop = asyncio.Event()
    loop = asyncio.get_running_loop()
    for sig in (signal.SIGINT, signal.SIGTERM):
        loop.add_signal_handler(sig, stop.set)
    try:
        await stop.wait()
    finally:
        await server.stop()


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description="Fake Telegram Bot API for the benchmark")
    parser.add_argument("--host", default="127.0.0.1")
    parser.add_argument("--port", type=int, default=0, help="0 picks a free port")
    parser.add_argument("--token", default="123456:TEST-TOKEN")
    args = parser.parse_args(argv)
    asyncio.run(_serve(args.host, args.port, args.token))


if __name__ == "__main__":
    main()
