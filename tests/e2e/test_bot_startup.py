"""Start-up refusals of the real process: one line on stderr, exit status 2."""

from __future__ import annotations

import socket
import sqlite3
from pathlib import Path

from tests.e2e.harness import WEBHOOK_SECRET, BotProcess, webhook_env


async def test_database_newer_than_the_code_exits_2_with_one_line(
    bot_base_env: dict[str, str], database_path: Path, tmp_path: Path
) -> None:
    database_path.parent.mkdir(parents=True)
    with sqlite3.connect(database_path) as conn:
        conn.execute("PRAGMA user_version = 999")
    process = await BotProcess(bot_base_env, tmp_path).start()
    assert await process.wait_exit() == 2
    assert len(process.lines) == 1, process.output
    assert "newer" in process.lines[0] and "Traceback" not in process.output
    with sqlite3.connect(database_path) as conn:
        assert conn.execute("PRAGMA user_version").fetchone()[0] == 999  # left untouched


async def test_an_occupied_webhook_port_is_one_fatal_line_without_secrets(
    bot_base_env: dict[str, str], tmp_path: Path
) -> None:
    with socket.socket() as busy:
        busy.bind(("127.0.0.1", 0))
        busy.listen()
        env = webhook_env(bot_base_env, busy.getsockname()[1])
        process = await BotProcess(env, tmp_path).start()
        assert await process.wait_exit() == 1
    fatal = [line for line in process.lines if "fatal:" in line]
    assert len(fatal) == 1, process.output
    assert "Traceback" not in process.output
    assert env["BOT_TOKEN"] not in process.output and WEBHOOK_SECRET not in process.output


async def test_a_token_telegram_rejects_is_one_fatal_line(
    bot_base_env: dict[str, str], tmp_path: Path
) -> None:
    env = {**bot_base_env, "BOT_TOKEN": "999:revoked-token"}
    process = await BotProcess(env, tmp_path).start()
    assert await process.wait_exit() == 1
    fatal = [line for line in process.lines if "fatal:" in line]
    assert len(fatal) == 1 and "BOT_TOKEN" in fatal[0], process.output
    assert "revoked-token" not in process.output


async def test_sigterm_while_telegram_is_unreachable_stops_at_once(
    bot_base_env: dict[str, str], tmp_path: Path
) -> None:
    with socket.socket() as closed:  # a port nobody listens on
        closed.bind(("127.0.0.1", 0))
        port = closed.getsockname()[1]
    env = {**bot_base_env, "TELEGRAM_API_URL": f"http://127.0.0.1:{port}"}
    process = await BotProcess(env, tmp_path).start()
    await process.wait_for_line("network error on getMe")  # start-up is retrying
    # the retries would take about 45 s, longer than the wait; a stop must not wait for them
    assert await process.terminate() == 0
    assert "stopping during start-up" in process.output
    assert "Traceback" not in process.output
