"""Slow and idle clients of the real webhook server are closed, quietly, after a timeout.

500 connections to 127.0.0.1: idle ones (nothing sent), ones that stop in the middle of
their headers, and ones that send the headers of a POST but not the whole body (plus 50
that go away mid-body and 50 that send broken HTTP, answered 400 at once). The
server closes every one of them after WEBHOOK_READ_TIMEOUT_S (the client reads EOF),
logs no traceback, and answers a normal POST meanwhile. The RSS of the process before
and after is printed (measured, not asserted: it depends on the allocator).
"""

from __future__ import annotations

import asyncio
import json
from pathlib import Path

import aiohttp

from tests.e2e.chat_helpers import WAIT_S, StartBot, seen_text
from tests.e2e.harness import WEBHOOK_PATH, WEBHOOK_SECRET, free_port, webhook_env
from tests.fakes.telegram_server import FakeTelegramServer, message_update

CONNECTIONS = 500
TIMEOUT_S = 3


def rss_kib(pid: int) -> int:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1])
    raise AssertionError("no VmRSS")


def open_fds(pid: int) -> int:
    return len(list(Path(f"/proc/{pid}/fd").iterdir()))


def opening(kind: int) -> bytes:
    """What a slow client sends before it stops: nothing, half the headers, half a body."""
    if kind == 0:
        return b""
    if kind == 1:
        return f"POST {WEBHOOK_PATH} HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Ty".encode()
    return (
        f"POST {WEBHOOK_PATH} HTTP/1.1\r\nHost: 127.0.0.1\r\n"
        f"X-Telegram-Bot-Api-Secret-Token: {WEBHOOK_SECRET}\r\n"
        "Content-Type: application/json\r\nContent-Length: 1000\r\n\r\n"
        '{"update_id": 1, '
    ).encode()


async def open_slow_client(
    port: int, kind: int
) -> tuple[asyncio.StreamReader, asyncio.StreamWriter]:
    reader, writer = await asyncio.open_connection("127.0.0.1", port)
    writer.write(opening(kind))
    await writer.drain()
    return reader, writer


async def closed_by_server(reader: asyncio.StreamReader) -> bytes:
    """Everything the server sent until it closed the connection (EOF)."""
    received = b""
    while chunk := await reader.read(65536):
        received += chunk
    return received


async def test_idle_and_slow_connections_are_closed_and_a_post_still_works(
    start_bot: StartBot,
    bot_base_env: dict[str, str],
    fake_telegram: FakeTelegramServer,
) -> None:
    port = free_port()
    env = webhook_env(bot_base_env, port)
    bot = await start_bot(env, WEBHOOK_READ_TIMEOUT_S=str(TIMEOUT_S))
    assert bot.proc is not None
    pid = bot.proc.pid
    rss_before, fds_before = rss_kib(pid), open_fds(pid)

    clients: list[tuple[asyncio.StreamReader, asyncio.StreamWriter]] = []
    for start in range(0, CONNECTIONS, 50):  # in steps, within the listen backlog
        clients += await asyncio.gather(
            *(open_slow_client(port, i % 3) for i in range(start, start + 50))
        )
    rss_open = rss_kib(pid)
    # and clients that go away in the middle of a body, or send broken HTTP
    for _ in range(50):
        _, writer = await open_slow_client(port, 2)
        writer.close()
        await writer.wait_closed()
    broken = [await asyncio.open_connection("127.0.0.1", port) for _ in range(50)]
    for _, writer in broken:
        writer.write(f"POST {WEBHOOK_PATH} HTTP/1.1\r\nNot a header\r\n\r\n".encode())

    # meanwhile a normal update is accepted and answered
    async with aiohttp.ClientSession() as http:
        async with http.post(
            f"http://127.0.0.1:{port}{WEBHOOK_PATH}",
            json=message_update(751, text="Где заказ 8041?"),
            headers={"X-Telegram-Bot-Api-Secret-Token": WEBHOOK_SECRET},
        ) as response:
            assert response.status == 200
    [answer] = await fake_telegram.wait_for_messages(751, within=WAIT_S)
    assert "8041" in seen_text(answer.text)

    async with asyncio.timeout(TIMEOUT_S + WAIT_S):
        received = await asyncio.gather(*(closed_by_server(r) for r, _ in clients))
        broken_answers = await asyncio.gather(*(closed_by_server(r) for r, _ in broken))
    for _, writer in clients + broken:
        writer.close()
    assert all(data.startswith(b"HTTP/1.0 400") for data in broken_answers)
    # idle and half-header clients get nothing; half-body clients get 408
    assert {data for i, data in enumerate(received) if i % 3 != 2} == {b""}
    assert all(data.startswith(b"HTTP/1.1 408") for data in received[2::3])

    async with aiohttp.ClientSession() as http:
        async with http.get(f"http://127.0.0.1:{port}/healthz") as response:
            assert response.status == 200
    rss_after, fds_after = rss_kib(pid), open_fds(pid)
    print(
        f"\nRSS KiB: before {rss_before}, {CONNECTIONS} open {rss_open}, after {rss_after}; "
        f"fds before {fds_before}, after {fds_after}"
    )
    assert fds_after <= fds_before + 5  # every slow connection is gone from the process
    assert "Traceback" not in bot.output
    assert "Error handling request" not in bot.output
    assert bot.proc.returncode is None


async def test_an_oversized_body_is_refused_unread(
    start_bot: StartBot, bot_base_env: dict[str, str]
) -> None:
    port = free_port()
    bot = await start_bot(webhook_env(bot_base_env, port))
    update = message_update(752, text="x" * 300_000)
    async with aiohttp.ClientSession() as http:
        async with http.post(
            f"http://127.0.0.1:{port}{WEBHOOK_PATH}",
            json=update,
            headers={"X-Telegram-Bot-Api-Secret-Token": WEBHOOK_SECRET},
        ) as response:
            assert response.status == 413
    assert "Traceback" not in bot.output


async def _expect_continue(port: int, secret: str, body: bytes) -> tuple[bytes, bytes]:
    """Headers with `Expect: 100-continue` and no body: the server's first line, then
    (after sending the body if it asked for it) everything until it closes."""
    reader, writer = await asyncio.open_connection("127.0.0.1", port)
    try:
        writer.write(
            (
                f"POST {WEBHOOK_PATH} HTTP/1.1\r\nHost: 127.0.0.1\r\n"
                f"X-Telegram-Bot-Api-Secret-Token: {secret}\r\n"
                "Content-Type: application/json\r\nExpect: 100-continue\r\n"
                f"Content-Length: {len(body)}\r\nConnection: close\r\n\r\n"
            ).encode()
        )
        await writer.drain()
        async with asyncio.timeout(WAIT_S):
            first = await reader.readline()
            if first.startswith(b"HTTP/1.1 100"):
                await reader.readline()  # the empty line that ends the interim response
                writer.write(body)
                await writer.drain()
            return first, await closed_by_server(reader)
    finally:
        writer.close()


async def test_100_continue_only_after_the_secret_is_checked(
    start_bot: StartBot, bot_base_env: dict[str, str], fake_telegram: FakeTelegramServer
) -> None:
    """A client without the secret must not be invited to send its body."""
    port = free_port()
    bot = await start_bot(webhook_env(bot_base_env, port))
    update = message_update(753, text="hello")
    body = json.dumps(update).encode()
    first, _rest = await _expect_continue(port, "wrong-secret", body)
    assert first.startswith(b"HTTP/1.1 401"), first
    first, rest = await _expect_continue(port, WEBHOOK_SECRET, body)
    assert first.startswith(b"HTTP/1.1 100 Continue"), first
    assert rest.startswith(b"HTTP/1.1 200"), rest
    assert "Traceback" not in bot.output
