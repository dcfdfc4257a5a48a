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

from tests.e2e.conftest import StartBot
from tests.e2e.harness import free_port, webhook_env

WAIT_S = 20.0


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


async def test_polling_serves_no_healthz_unless_enabled(
    start_bot: StartBot, bot_base_env: dict[str, str], http: aiohttp.ClientSession
) -> None:
    port = free_port()
    await start_bot({**bot_base_env, "WEB_PORT": str(port)})
    with pytest.raises(aiohttp.ClientConnectorError):
        await healthz(http, port)
