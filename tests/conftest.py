"""Project-wide test fixtures: isolated environment, a fresh SQLite file per test."""

from __future__ import annotations

import os
from collections.abc import AsyncIterator
from pathlib import Path

import pytest

from bot.config import Settings
from storage.database import Database, open_database

# every setting the bot reads, so a developer's environment never leaks into a test
SETTING_NAMES = tuple(name.upper() for name in Settings.model_fields)


@pytest.fixture(autouse=True)
def _isolated_settings_env(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    """No test sees the developer's environment or `.env`."""
    for name in SETTING_NAMES:
        monkeypatch.delenv(name, raising=False)
    monkeypatch.chdir(tmp_path)


@pytest.fixture
def clean_env() -> dict[str, str]:
    """An environment for subprocesses with none of the bot's settings in it."""
    env = {k: v for k, v in os.environ.items() if k not in SETTING_NAMES}
    env["PYTHONUNBUFFERED"] = "1"
    return env


@pytest.fixture
async def db(tmp_path: Path) -> AsyncIterator[Database]:
    database = await open_database(tmp_path / "test.sqlite3")
    try:
        yield database
    finally:
        await database.close()


# The fake OpenAI server as a fixture for every test package (tests/fakes/openai_server.py).
from tests.fakes.openai_server import fake_openai  # noqa: E402, F401
