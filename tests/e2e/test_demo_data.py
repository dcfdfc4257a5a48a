"""The demo shop as a new owner meets it: seeded on the first start that goes on, removed
by the shop's first import (which says so) or by `remove-demo`, and never seeded again.

On both backends (`both_backends`): the demo rows are marked in the database itself.
"""

from __future__ import annotations

import asyncio
import json
from pathlib import Path

import pytest

from tests.e2e.chat_helpers import query
from tests.e2e.conftest import StartBot
from tests.e2e.harness import BotProcess
from tests.e2e.launch import run_bot_command
from tests.fakes.openai_server import FakeOpenAIServer

pytestmark = pytest.mark.both_backends

OWN_SHOP = {
    "orders": [{"order_id": "1234", "status": "in_transit", "owner_telegram_id": 42}],
    "return_policies": [{"product": "Ноутбук", "return_days": 14, "conditions": "Без следов."}],
}
SEEDED = "demo shop data seeded"
DEMO_GONE = "4 orders, 3 return policies, 3 FAQ entries, 4 products"


async def run_cli(env: dict[str, str], cwd: Path, *args: str) -> tuple[int, str, str]:
    """`python -m bot ARGS` (forked like every bot start, tests/e2e/launch.py)."""
    done = await asyncio.to_thread(run_bot_command, list(args), env=env, cwd=cwd)
    return done.returncode, done.stdout, done.stderr


def shop_rows(database: Path) -> dict[str, list[str]]:
    return {
        "orders": [r[0] for r in query(database, "SELECT order_id FROM orders ORDER BY 1")],
        "policies": [
            r[0] for r in query(database, "SELECT product FROM return_policies ORDER BY 1")
        ],
        "faq": [r[0] for r in query(database, "SELECT key FROM faq_entries ORDER BY 1")],
    }


async def seed_by_a_first_start(start_bot: StartBot, database: Path) -> None:
    bot = await start_bot()
    assert SEEDED in bot.output
    assert await bot.terminate() == 0
    assert shop_rows(database)["orders"] == ["5530", "7718", "8041", "9912"]


async def test_a_start_that_stops_on_a_bad_model_name_seeds_nothing(
    bot_base_env: dict[str, str], fake_openai: FakeOpenAIServer, tmp_path: Path, database_path: Path
) -> None:
    fake_openai.models = ["gpt-4o"]  # OPENAI_MODEL is not offered: the start stops
    process = await BotProcess(bot_base_env, tmp_path).start()
    assert await process.wait_exit() == 2
    assert SEEDED not in process.output
    assert shop_rows(database_path) == {"orders": [], "policies": [], "faq": []}


async def test_the_shops_first_import_removes_the_demo_for_good(
    start_bot: StartBot, bot_base_env: dict[str, str], tmp_path: Path, database_path: Path
) -> None:
    await seed_by_a_first_start(start_bot, database_path)
    file = tmp_path / "shop.json"
    file.write_text(json.dumps(OWN_SHOP, ensure_ascii=False), encoding="utf-8")

    status, out, err = await run_cli(bot_base_env, tmp_path, "import-data", str(file))

    assert status == 0, err
    assert f"demo data removed ({DEMO_GONE})" in out
    assert "orders: 1 inserted, 0 updated" in out
    assert shop_rows(database_path) == {"orders": ["1234"], "policies": ["ноутбук"], "faq": []}

    bot = await start_bot()  # SEED_DEMO_DATA is still on: the shop has its own data now
    assert SEEDED not in bot.output
    assert await bot.terminate() == 0
    assert shop_rows(database_path)["orders"] == ["1234"]


async def test_remove_demo_empties_the_demo_shop_and_it_stays_empty(
    start_bot: StartBot, bot_base_env: dict[str, str], tmp_path: Path, database_path: Path
) -> None:
    await seed_by_a_first_start(start_bot, database_path)

    status, out, err = await run_cli(bot_base_env, tmp_path, "remove-demo")
    assert status == 0, err
    assert out.startswith("removed the demo data from ") and out.rstrip().endswith(DEMO_GONE)
    assert shop_rows(database_path) == {"orders": [], "policies": [], "faq": []}

    again = await run_cli(bot_base_env, tmp_path, "remove-demo")
    assert again[0] == 0 and "no demo data in " in again[1]

    bot = await start_bot()
    assert SEEDED not in bot.output
    assert await bot.terminate() == 0
    assert shop_rows(database_path) == {"orders": [], "policies": [], "faq": []}
