"""A loopback proxy that writes every answer in parts, with pauses between them, as a
real network delivers it: the shop's answers reach the bot's client in several reads.

`TricklingProxy(upstream)` forwards each request (method, path, query, headers, body) to
`upstream` (a fake shop or the real Medusa engine) and writes the answer back in `parts`
pieces `pause_s` apart; `chunked` drops the Content-Length, so the client learns the size
only at the end. `body` replaces the upstream's answer with these bytes (a hostile shop).
"""

from __future__ import annotations

import asyncio
import socket
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from urllib.parse import urlsplit

import aiohttp
from aiohttp import web

HOP_BY_HOP = {"host", "content-length", "transfer-encoding", "connection", "keep-alive"}


class TricklingProxy:
    def __init__(
        self, upstream: str, *, parts: int = 3, pause_s: float = 0.15, chunked: bool = False
    ) -> None:
        split = urlsplit(upstream)
        self.upstream = f"{split.scheme}://{split.netloc}"
        self.prefix = split.path.rstrip("/")
        self.parts = parts
        self.pause_s = pause_s
        self.chunked = chunked
        self.body: bytes | None = None
        self.answers = 0
        self.port = 0
        self._runner: web.AppRunner | None = None
        self._session: aiohttp.ClientSession | None = None

    @property
    def url(self) -> str:
        """The upstream's base URL, through the proxy."""
        return f"http://127.0.0.1:{self.port}{self.prefix}"

    async def start(self) -> TricklingProxy:
        self._session = aiohttp.ClientSession(auto_decompress=False)
        app = web.Application(client_max_size=16 * 1024 * 1024)
        app.router.add_route("*", "/{tail:.*}", self._forward)
        sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        sock.bind(("127.0.0.1", 0))
        self.port = sock.getsockname()[1]
        self._runner = web.AppRunner(app, access_log=None, shutdown_timeout=1.0)
        await self._runner.setup()
        await web.SockSite(self._runner, sock).start()
        return self

    async def close(self) -> None:
        if self._runner is not None:
            await self._runner.cleanup()
        if self._session is not None:
            await self._session.close()

    async def _forward(self, request: web.Request) -> web.StreamResponse:
        assert self._session is not None
        headers = {k: v for k, v in request.headers.items() if k.lower() not in HOP_BY_HOP}
        async with self._session.request(
            request.method,
            self.upstream + request.rel_url.path_qs,
            headers=headers,
            data=await request.read(),
            allow_redirects=False,
        ) as upstream:
            status = upstream.status
            body = await upstream.read()
            answer_headers = {
                k: v for k, v in upstream.headers.items() if k.lower() not in HOP_BY_HOP
            }
        if self.body is not None:
            body = self.body
        response = web.StreamResponse(status=status, headers=answer_headers)
        if self.chunked:
            response.enable_chunked_encoding()
        else:
            response.content_length = len(body)
        await response.prepare(request)
        size = -(-len(body) // self.parts) or 1
        pieces = [body[i : i + size] for i in range(0, len(body), size)]
        self.answers += 1
        try:
            for index, piece in enumerate(pieces):
                if index:
                    await asyncio.sleep(self.pause_s)  # the network's pause between two reads
                await response.write(piece)
            await response.write_eof()
        except ConnectionResetError:
            pass  # the client stopped reading (an answer over its limit)
        return response


@asynccontextmanager
async def trickling(upstream: str, **options: object) -> AsyncIterator[TricklingProxy]:
    proxy = await TricklingProxy(upstream, **options).start()  # type: ignore[arg-type]
    try:
        yield proxy
    finally:
        await proxy.close()
