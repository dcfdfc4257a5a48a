"""Fixtures for end-to-end tests: both fakes in the test's event loop, the real process."""

from __future__ import annotations

from collections.abc import AsyncIterator, Awaitable, Callable
from pathlib import Path

import pytest

from tests.e2e.harness import BotProcess, bot_env
from tests.fakes.openai_server import FakeOpenAIServer
from tests.fakes.openai_server import fake_openai as fake_openai
from tests.fakes.telegram_server import FakeTelegramServer
from tests.fakes.telegram_server import fake_telegram as fake_telegram

StartBot = Callable[..., Awaitable[BotProcess]]


@pytest.fixture
def database_path(tmp_path: Path) -> Path:
    return tmp_path / "data" / "bot.sqlite3"


@pytest.fixture
def bot_base_env(
    clean_env: dict[str, str],
    fake_telegram: FakeTelegramServer,
    fake_openai: FakeOpenAIServer,
    database_path: Path,
) -> dict[str, str]:
    return bot_env(clean_env, telegram=fake_telegram, openai=fake_openai, database=database_path)


@pytest.fixture
async def start_bot(bot_base_env: dict[str, str], tmp_path: Path) -> AsyncIterator[StartBot]:
    """`await start_bot(**env_overrides)` → a ready bot process; all are stopped at the end."""
    started: list[BotProcess] = []

    async def start(env: dict[str, str] | None = None, **overrides: str) -> BotProcess:
        process = BotProcess({**(env or bot_base_env), **overrides}, tmp_path)
        started.append(process)
        await process.start()
        await process.wait_ready()
        return process

    yield start
    for process in started:
        if process.proc is not None and process.proc.returncode is None:
            await process.kill()
