"""/healthz of the real process, in both modes: 200 when healthy; 503 naming the check
while another connection holds the write lock beyond the busy timeout, and 200 again once
it is released; 503 when the database file is replaced or deleted under the process."""

from __future__ import annotations

import asyncio
import os
import sqlite3
from pathlib import Path
from typing import Any

import aiohttp
import pytest

from storage.database import open_database
from tests.damage import corrupt_table
from tests.e2e.conftest import StartBot
from tests.e2e.harness import free_port, webhook_env
from tests.fakes.telegram_server import FakeTelegramServer, message_update
from tests.waits import OUTER_LIMIT_S

WAIT_S = OUTER_LIMIT_S


async def healthz(http: aiohttp.ClientSession, port: int) -> tuple[int, Any]:
    async with http.get(f"http://127.0.0.1:{port}/healthz") as response:
        return response.status, await response.json()


async def until_status(http: aiohttp.ClientSession, port: int, status: int) -> Any:
    """Bounded wait for the status (a result is cached for a second)."""
    async with asyncio.timeout(WAIT_S):
        while True:
            got, body = await healthz(http, port)
            if got == status:
                return body
            await asyncio.sleep(0.1)


def mode_env(mode: str, base: dict[str, str], port: int) -> dict[str, str]:
    if mode == "webhook":
        return webhook_env(base, port)
    return {**base, "HEALTH_ENABLED": "true", "WEB_HOST": "127.0.0.1", "WEB_PORT": str(port)}


@pytest.mark.parametrize(("mode", "file_fault"), [("polling", "replaced"), ("webhook", "deleted")])
async def test_healthz_tells_the_truth(
    mode: str,
    file_fault: str,
    start_bot: StartBot,
    bot_base_env: dict[str, str],
    database_path: Path,
    http: aiohttp.ClientSession,
    tmp_path: Path,
) -> None:
    port = free_port()
    bot = await start_bot(mode_env(mode, bot_base_env, port))
    assert await healthz(http, port) == (200, {"status": "ok"})

    holder = sqlite3.connect(database_path, isolation_level=None)
    try:
        holder.execute("BEGIN IMMEDIATE")
        body = await until_status(http, port, 503)
        assert body == {"status": "unhealthy", "failed": ["database"]}
        holder.execute("ROLLBACK")
        await until_status(http, port, 200)
    finally:
        holder.close()

    if file_fault == "replaced":
        other = tmp_path / "other.sqlite3"
        sqlite3.connect(other).close()
        os.replace(other, database_path)
    else:
        os.remove(database_path)
    body = await until_status(http, port, 503)
    assert body == {"status": "unhealthy", "failed": ["database"]}
    assert str(database_path) not in str(body)
    assert await bot.terminate() == 0


async def test_healthz_answers_within_the_health_checkers_timeout_under_a_lock(
    start_bot: StartBot,
    bot_base_env: dict[str, str],
    database_path: Path,
    http: aiohttp.ClientSession,
) -> None:
    """Caddy's active health check gives up after 5 s (Docker's after 8 s): a lock held
    longer than the busy timeout must be an answer (503), not a request that times out."""
    port = free_port()
    await start_bot(mode_env("webhook", bot_base_env, port))
    holder = sqlite3.connect(database_path, isolation_level=None)
    try:
        holder.execute("BEGIN IMMEDIATE")
        for _ in range(3):  # the first while the probe waits, then while it still does
            async with http.get(
                f"http://127.0.0.1:{port}/healthz", timeout=aiohttp.ClientTimeout(total=4.5)
            ) as response:
                assert response.status == 503
                assert await response.json() == {"status": "unhealthy", "failed": ["database"]}
        holder.execute("ROLLBACK")
        await until_status(http, port, 200)
    finally:
        holder.close()


async def test_a_damaged_page_met_by_a_turn_turns_healthz_503_with_the_reason(
    start_bot: StartBot,
    bot_base_env: dict[str, str],
    database_path: Path,
    fake_telegram: FakeTelegramServer,
    http: aiohttp.ClientSession,
) -> None:
    """A big file is let through unchecked (DATABASE_INTEGRITY_CHECK_S); the history table
    damaged there fails the turn, and /healthz must say so instead of staying 200."""
    database_path.parent.mkdir(parents=True)
    db = await open_database(database_path)
    await db.close()
    corrupt_table(database_path, "messages")
    port = free_port()
    env = {**mode_env("polling", bot_base_env, port), "DATABASE_INTEGRITY_CHECK_S": "0"}
    await start_bot(env)
    assert await healthz(http, port) == (200, {"status": "ok"})  # nothing met it yet
    fake_telegram.enqueue_update(message_update(4242, text="Где мой заказ 8041?"))
    await fake_telegram.wait_for_messages(4242)  # the apology
    body = await until_status(http, port, 503)
    assert body["failed"] == ["database_corrupt"]
    assert "malformed" in body["reasons"]["database_corrupt"]
    assert str(database_path) not in str(body)


async def test_polling_serves_no_healthz_unless_enabled(
    start_bot: StartBot, bot_base_env: dict[str, str], http: aiohttp.ClientSession
) -> None:
    port = free_port()
    await start_bot({**bot_base_env, "WEB_PORT": str(port)})
    with pytest.raises(aiohttp.ClientConnectorError):
        await healthz(http, port)
