"""Project-wide test fixtures: isolated environment, a fresh SQLite file per test."""

from __future__ import annotations

import os
from collections.abc import AsyncIterator
from pathlib import Path

import pytest

from storage.database import Database

SETTING_NAMES = (
    "BOT_TOKEN TELEGRAM_API_URL BOT_MODE WEBHOOK_URL WEBHOOK_PATH WEBHOOK_SECRET WEB_HOST "
    "WEB_PORT ADMIN_IDS OPENAI_API_KEY OPENAI_BASE_URL OPENAI_MODEL OPENAI_FALLBACK_MODELS "
    "OPENAI_TIMEOUT_S OPENAI_MAX_RETRIES PARALLEL_TOOL_CALLS DATABASE_PATH TOOL_MAX_STEPS "
    "TURN_TIMEOUT_S HISTORY_TOKEN_BUDGET SUMMARY_MAX_TOKENS MAX_INPUT_CHARS "
    "ORDER_LOOKUPS_PER_HOUR USER_MESSAGES_PER_MINUTE USER_MESSAGES_PER_DAY "
    "MAX_CONCURRENT_TURNS SHUTDOWN_GRACE_S SEED_DEMO_DATA LOG_LEVEL"
).split()


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
    database = await Database.open(tmp_path / "test.sqlite3")
    try:
        yield database
    finally:
        await database.close()


# The fake OpenAI server as a fixture for every test package (tests/fakes/openai_server.py).
from tests.fakes.openai_server import fake_openai  # noqa: E402, F401
