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
from tests.waits import OUTER_LIMIT_S
from tools.base import Caller, ToolCall, ToolContext
from tools.executor import ToolExecutor
from tools.order_status import GET_ORDER_STATUS, order_status_tool
from tools.registry import ToolRegistry
from tools.shop.demo import seed_demo_shop

TOOL_TIMEOUT_S = 0.3
RETRY = StorageRetry(first_delay_s=0.02, max_delay_s=0.02, give_up_after_s=60)


class RetriesSeen(logging.Handler):
    """Sets `seen` once the order lookup's write was retried `enough` times."""

    def __init__(self, enough: int) -> None:
        super().__init__(logging.WARNING)
        self.enough = enough
        self.count = 0
        self.seen = asyncio.Event()

    def emit(self, record: logging.LogRecord) -> None:
        if record.getMessage().startswith("order lookup: database locked"):
            self.count += 1
            if self.count >= self.enough:
                self.seen.set()


async def test_a_lock_longer_than_the_tool_timeout_is_waited_out(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(storage.sqlite, "BUSY_TIMEOUT_MS", 20)
    path = tmp_path / "shop.sqlite3"
    db = await open_database(path)
    shop = ShopRepository(db)
    await seed_demo_shop(shop)
    registry = ToolRegistry()
    registry.register(replace(order_status_tool(lookups_per_hour=10), timeout_s=TOOL_TIMEOUT_S))
    executor = ToolExecutor(registry, storage_retry=RETRY)
    context = ToolContext(caller=Caller(key=1001, chat_id=1001, private_chat=True), shop=shop)
    call = ToolCall("c1", GET_ORDER_STATUS, json.dumps({"order_id": "8041"}))

    # each retry waits at least the busy timeout and the retry delay (0.04 s): 20 of
    # them outlast the tool's timeout twice over
    retried = RetriesSeen(enough=20)
    logging.getLogger("storage.database").addHandler(retried)
    holder = sqlite3.connect(path, isolation_level=None)
    holder.execute("BEGIN IMMEDIATE")  # e.g. a backup or import-data holding the lock
    try:
        lookup = asyncio.create_task(executor.execute(call, context))
        await asyncio.wait_for(retried.seen.wait(), OUTER_LIMIT_S)
        assert not lookup.done()  # still waiting for the store, not failed
        holder.execute("ROLLBACK")
        outcome = await asyncio.wait_for(lookup, OUTER_LIMIT_S)
        row = await db.fetch_one(
            "SELECT count(*) FROM order_lookups WHERE user_id = 1001 AND order_id = '8041'"
        )
    finally:
        holder.close()
        logging.getLogger("storage.database").removeHandler(retried)
        await db.close()
    result = json.loads(outcome.content)
    assert outcome.ok, result
    assert result["data"]["order_id"] == "8041"
    assert row is not None and int(row[0]) == 1  # the bound still counts this lookup
