"""DATABASE_URL in the real process: the webhook bot on PostgreSQL, and the start-up errors.

In webhook mode (the mode several instances share one database in) an update is stored
in PostgreSQL before the 200, answered once even when posted twice, and /healthz checks
the server. A server that cannot be reached, or a URL of another kind, ends the start
with one line naming DATABASE_URL and exit status 2 — never the password in it.
"""

from __future__ import annotations

import asyncio
import subprocess
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

import aiohttp
import asyncpg
import pytest

from tests.e2e.conftest import StartBot
from tests.e2e.harness import free_port, post_update, webhook_env
from tests.e2e.launch import run_bot_command
from tests.fakes.openai_server import FakeOpenAIServer
from tests.fakes.telegram_server import FakeTelegramServer, message_update

CHAT = 3003
PASSWORD = "Url-Pass_w0rd-77"


def with_password(url: str) -> str:
    """The test server trusts local sessions: the password is accepted, and unused; it is
    there to prove it is never printed."""
    parts = urlsplit(url)
    return f"postgresql://postgres:{PASSWORD}@{parts.path}?{parts.query}"


@pytest.mark.postgres
async def test_the_webhook_bot_on_postgresql_answers_once_and_reports_healthy(
    start_bot: StartBot,
    bot_base_env: dict[str, str],
    pg_url: str,
    fake_telegram: FakeTelegramServer,
    fake_openai: FakeOpenAIServer,
    http: aiohttp.ClientSession,
) -> None:
    port = free_port()
    env = {k: v for k, v in webhook_env(bot_base_env, port).items() if k != "DATABASE_PATH"}
    bot = await start_bot({**env, "DATABASE_URL": with_password(pg_url)})
    watcher: Any = await asyncpg.connect(pg_url)
    try:
        update = message_update(CHAT, text="Где сейчас находится заказ 8041?", user_id=CHAT)
        statuses = await asyncio.gather(
            post_update(http, port, update), post_update(http, port, update)
        )
        assert statuses == [200, 200]
        # committed on the server before either 200
        stored = await watcher.fetchval(
            "SELECT count(*) FROM updates WHERE update_id = $1", update["update_id"]
        )
        assert stored == 1
        [answer] = await fake_telegram.wait_for_messages(CHAT, 1)
        assert "8041" in answer.plain_text
        async with http.get(f"http://127.0.0.1:{port}/healthz") as response:
            assert response.status == 200, await response.text()
        assert await bot.terminate() == 0
        turns = await watcher.fetchval("SELECT count(*) FROM turns WHERE status = 'answered'")
        status = await watcher.fetchval(
            "SELECT status FROM updates WHERE update_id = $1", update["update_id"]
        )
    finally:
        await watcher.close()
    assert (turns, status) == (1, "delivered")
    assert len(fake_telegram.messages_to(CHAT)) == 1  # the second POST changed nothing
    starting = [line for line in bot.lines if "starting:" in line]
    assert starting and "database=postgresql://" in starting[0], bot.output
    assert PASSWORD not in bot.output


def _run_bot(env: dict[str, str], cwd: Path, *args: str) -> subprocess.CompletedProcess[str]:
    return run_bot_command(list(args), env=env, cwd=cwd)


def _one_error_line(result: subprocess.CompletedProcess[str]) -> str:
    assert result.returncode == 2, result.stderr[-3000:]
    lines = [line for line in result.stderr.splitlines() if line.strip()]
    assert len(lines) == 1, result.stderr[-3000:]
    assert "Traceback" not in result.stderr
    assert PASSWORD not in result.stderr + result.stdout
    return lines[0]


def test_an_unreachable_database_url_is_one_line_without_the_password(
    bot_base_env: dict[str, str], tmp_path: Path
) -> None:
    port = free_port()
    env = {k: v for k, v in bot_base_env.items() if k != "DATABASE_PATH"}
    env["DATABASE_URL"] = f"postgresql://shop:{PASSWORD}@127.0.0.1:{port}/support"

    line = _one_error_line(_run_bot(env, tmp_path))

    assert line.startswith(f"error: DATABASE_URL postgresql://127.0.0.1:{port}/support: "), line
    assert "cannot connect" in line


def test_import_data_names_an_unreachable_database_url_the_same_way(
    clean_env: dict[str, str], tmp_path: Path
) -> None:
    port = free_port()
    data = tmp_path / "shop.json"
    data.write_text('{"orders": [{"order_id": "1001", "status": "processing"}]}', "utf-8")
    env = {**clean_env, "DATABASE_URL": f"postgres://shop:{PASSWORD}@127.0.0.1:{port}/support"}

    line = _one_error_line(_run_bot(env, tmp_path, "import-data", str(data)))

    assert line.startswith(f"error: DATABASE_URL postgres://127.0.0.1:{port}/support: "), line


def test_a_database_url_of_another_kind_is_a_settings_error(
    bot_base_env: dict[str, str], tmp_path: Path
) -> None:
    env = {**bot_base_env, "DATABASE_URL": f"mysql://shop:{PASSWORD}@db.internal/support"}

    line = _one_error_line(_run_bot(env, tmp_path))

    assert "DATABASE_URL: expected a PostgreSQL URL" in line, line
