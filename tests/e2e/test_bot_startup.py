"""Start-up refusals of the real process: one line on stderr, exit status 2."""

from __future__ import annotations

import sqlite3
from pathlib import Path

from tests.e2e.harness import BotProcess


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
