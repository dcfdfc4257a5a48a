"""An order lookup during a storage fault waits for the store instead of failing: the
lookup's own bookkeeping write (the per-hour bound) meets a write lock that another
connection holds longer than the tool's timeout, and the customer still gets the answer
once the lock is gone. Real SQLite file, real lock, real executor and tool."""

from __future__ import annotations

import asyncio
import json
import logging
import sqlite3
from dataclasses import replace
from pathlib import Path

import pytest

import storage.sqlite
from storage.database import StorageRetry, open_database
from storage.shop import ShopRepository
from tools.base import ToolCall, ToolContext
from tools.executor import ToolExecutor
from tools.order_status import GET_ORDER_STATUS, order_status_tool
from tools.registry import ToolRegistry
from tools.shop.demo import seed_demo_shop

TOOL_TIMEOUT_S = 0.3
RETRY = StorageRetry(first_delay_s=0.02, max_delay_s=0.02, give_up_after_s=60)


async def test_a_lock_longer_than_the_tool_timeout_is_waited_out(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    monkeypatch.setattr(storage.sqlite, "BUSY_TIMEOUT_MS", 20)
    path = tmp_path / "shop.sqlite3"
    db = await open_database(path)
    shop = ShopRepository(db)
    await seed_demo_shop(shop)
    registry = ToolRegistry()
    registry.register(replace(order_status_tool(lookups_per_hour=10), timeout_s=TOOL_TIMEOUT_S))
    executor = ToolExecutor(registry, storage_retry=RETRY)
    context = ToolContext(user_id=1001, chat_id=1001, shop=shop, private_chat=True)
    call = ToolCall("c1", GET_ORDER_STATUS, json.dumps({"order_id": "8041"}))

    holder = sqlite3.connect(path, isolation_level=None)
    holder.execute("BEGIN IMMEDIATE")  # e.g. a backup or import-data holding the lock
    caplog.set_level(logging.WARNING, logger="storage.database")
    try:
        lookup = asyncio.create_task(executor.execute(call, context))
        started = asyncio.get_running_loop().time()

        def retried_past_the_tool_timeout() -> bool:
            waited = asyncio.get_running_loop().time() - started
            retries = [r for r in caplog.records if "order lookup: database locked" in r.message]
            return len(retries) >= 3 and waited > TOOL_TIMEOUT_S * 2

        async with asyncio.timeout(30):
            while not retried_past_the_tool_timeout() and not lookup.done():
                await asyncio.sleep(0.01)
        holder.execute("ROLLBACK")
        outcome = await asyncio.wait_for(lookup, 30)
    finally:
        holder.close()
    result = json.loads(outcome.content)
    assert outcome.ok, result
    assert result["data"]["order_id"] == "8041"
    row = await db.fetch_one(
        "SELECT count(*) FROM order_lookups WHERE user_id = 1001 AND order_id = '8041'"
    )
    assert row is not None and int(row[0]) == 1  # the bound still counts this lookup
    await db.close()
