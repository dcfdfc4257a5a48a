"""Fixtures for end-to-end tests: both fakes in the test's event loop, the real process."""

from __future__ import annotations

from collections.abc import AsyncIterator, Awaitable, Callable
from pathlib import Path

import aiohttp
import pytest

from tests.e2e.harness import BotProcess, PgDatabasePath, bot_env
from tests.fakes.openai_server import FakeOpenAIServer
from tests.fakes.openai_server import fake_openai as fake_openai
from tests.fakes.telegram_server import FakeTelegramServer
from tests.fakes.telegram_server import fake_telegram as fake_telegram

StartBot = Callable[..., Awaitable[BotProcess]]


def pytest_generate_tests(metafunc: pytest.Metafunc) -> None:
    """A test marked `both_backends` runs on SQLite and on PostgreSQL (`database_path` is
    then a `PgDatabasePath`); every other e2e test on SQLite only."""
    if metafunc.definition.get_closest_marker("both_backends") is None:
        return
    if "e2e_backend" in metafunc.fixturenames:
        postgres = pytest.param("postgres", marks=pytest.mark.postgres)
        metafunc.parametrize("e2e_backend", ["sqlite", postgres])


@pytest.fixture(autouse=True)
async def _no_bot_outlives_its_test() -> AsyncIterator[None]:
    """Whatever the outcome (a failed assertion, a timeout), the test's bots are killed and
    reaped before the next test starts; tests/conftest.py checks at the session's end."""
    yield
    await BotProcess.end_all()


@pytest.fixture
async def http() -> AsyncIterator[aiohttp.ClientSession]:
    """An HTTP client for the bot's web server (webhook, /healthz, /metrics)."""
    async with aiohttp.ClientSession() as session:
        yield session


@pytest.fixture
def e2e_backend() -> str:
    """The bot's storage backend; "postgres" only for tests marked `both_backends`."""
    return "sqlite"


@pytest.fixture
def database_path(tmp_path: Path, e2e_backend: str, request: pytest.FixtureRequest) -> Path:
    path = tmp_path / "data" / "bot.sqlite3"
    if e2e_backend == "postgres":
        return PgDatabasePath.of(path, request.getfixturevalue("pg_url"))
    return path


@pytest.fixture
def bot_base_env(
    clean_env: dict[str, str],
    fake_telegram: FakeTelegramServer,
    fake_openai: FakeOpenAIServer,
    database_path: Path,
) -> dict[str, str]:
    return bot_env(
        clean_env,
        telegram=fake_telegram,
        openai=fake_openai,
        database=database_path,
        database_url=database_path.url if isinstance(database_path, PgDatabasePath) else None,
    )


@pytest.fixture
async def start_bot(bot_base_env: dict[str, str], tmp_path: Path) -> AsyncIterator[StartBot]:
    """`await start_bot(**env_overrides)` → a ready bot process; all are stopped at the end.
    `spawn=True`: a fresh `python -m bot` instead of a fork (tests of the interpreter start)."""
    started: list[BotProcess] = []

    async def start(
        env: dict[str, str] | None = None, *, spawn: bool = False, **overrides: str
    ) -> BotProcess:
        process = BotProcess({**(env or bot_base_env), **overrides}, tmp_path, spawn=spawn)
        started.append(process)
        await process.start()
        await process.wait_ready()
        return process

    yield start
    for process in started:
        if process.proc is not None and process.proc.returncode is None:
            await process.kill()
