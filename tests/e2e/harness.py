"""Start the real bot process against the fake Bot API and the fake OpenAI server.

The process is the real `bot.programs.cli.main()` in an OS process of its own, forked from the
warm fork server (tests/e2e/launch.py) unless `spawn=True` (a test about the interpreter's
own start) or E2E_START=spawn (every start a fresh `python -m bot`, the old way).

The process is driven only over HTTP (the fakes, the webhook). Readiness and exit are
observed, not slept on: `wait_ready` waits for the start-up "ready" log line (or the
exit), `wait_exit` for the process to end. Their outer limits are generous on purpose:
they only turn a hang into a failure, and the per-test timeout bounds them anyway.

Every BotProcess is ended and reaped when its test ends, whatever the outcome
(`end_all`, called by tests/e2e/conftest.py).
"""

from __future__ import annotations

import asyncio
import contextlib
import itertools
import os
import random
import signal
import socket
from collections.abc import Iterator
from pathlib import Path
from typing import Any, ClassVar

import aiohttp

from tests.e2e.launch import start_bot_process
from tests.fakes.openai_server import FakeOpenAIServer
from tests.fakes.telegram_server import FakeTelegramServer
from tests.waits import OUTER_LIMIT_S


class PgDatabasePath(type(Path())):  # type: ignore[misc]
    """`database_path` of an e2e test run on PostgreSQL (marker `both_backends`).

    The bot gets `url` as DATABASE_URL and no file is used; the helpers that read the
    bot's database (`chat_helpers.query`, `wait_for_db`) see the URL on the path, so a
    test written against `database_path` runs unchanged on both backends.
    """

    url: str

    @classmethod
    def of(cls, path: Path, url: str) -> PgDatabasePath:
        located = cls(path)
        located.url = url
        return located


READY_MARKER = "bot: ready"
READY_MARKER_JSON = '"logger": "bot", "message": "ready"'  # LOG_FORMAT=json
WEBHOOK_SECRET = "e2e-secret_TOKEN-123"
WEBHOOK_PATH = "/telegram/webhook"
# outer limits only: a healthy start or stop takes a fraction of them even on a loaded
# machine; they exist so that a hang fails with the bot's output instead of waiting for
# the per-test timeout
READY_WITHIN_S = 180.0
EXIT_WITHIN_S = OUTER_LIMIT_S
LINE_WITHIN_S = OUTER_LIMIT_S
# Product delays that would set the pace of e2e tests, small in `bot_env`. Messages to one
# chat are not spaced (ordering never depended on the gap: the intake runs a chat's updates
# one at a time). A killed bot's chats are taken over after this lease instead of 15 s;
# the lease must still be well above a busy machine's event-loop stalls, because a claim
# not renewed within two thirds of it stops its work (bot/runtime/claimed.py): 5 s, the order of
# the 3-4 s the multi-instance tests already use.
TEST_CHAT_INTERVAL_S = "0"
TEST_CLAIM_LEASE_S = "5"


async def post_update(
    http: aiohttp.ClientSession,
    port: int,
    update: dict[str, Any],
    secret: str | None = WEBHOOK_SECRET,
) -> int:
    """POST one update to a bot's webhook on this machine, as Telegram does; the status."""
    headers = {"X-Telegram-Bot-Api-Secret-Token": secret} if secret is not None else {}
    url = f"http://127.0.0.1:{port}{WEBHOOK_PATH}"
    async with http.post(url, json=update, headers=headers) as response:
        return response.status


# `free_port` hands out ports from below the kernel's ephemeral range (32768 and up by
# default), a block of its own for each pytest-xdist worker (PYTEST_XDIST_WORKER=gwN), as
# many blocks as `-n auto` starts workers at most (tests/conftest.py, MAX_AUTO_WORKERS)
PORT_BLOCK_START = 20_000
PORT_BLOCK_SIZE = 1_500
PORT_BLOCKS = 8
_port_picks: Iterator[int] | None = None


def _port_candidates() -> Iterator[int]:
    worker = os.environ.get("PYTEST_XDIST_WORKER", "gw0").removeprefix("gw")
    index = int(worker) if worker.isdigit() else 0
    first = PORT_BLOCK_START + (index % PORT_BLOCKS) * PORT_BLOCK_SIZE
    offset = random.randrange(PORT_BLOCK_SIZE)  # another suite on this machine starts elsewhere
    return itertools.cycle([first + (offset + i) % PORT_BLOCK_SIZE for i in range(PORT_BLOCK_SIZE)])


def free_port() -> int:
    """A port on 127.0.0.1 for a bot's web server that nothing listens on right now.

    Not the kernel's pick for port 0: a port handed out that way and closed again can be
    handed to the very next socket bound to port 0 (a fake server, another worker's test)
    before the bot binds it. These come from a block below the ephemeral range, one block
    per xdist worker, in turn, so within a run a port is not handed out twice until the
    block is used up.
    """
    global _port_picks
    if _port_picks is None:
        _port_picks = _port_candidates()
    for _ in range(PORT_BLOCK_SIZE):
        port = next(_port_picks)
        with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
            try:
                sock.bind(("127.0.0.1", port))
            except OSError:
                continue
            return port
    raise RuntimeError(f"no free port in the block after {PORT_BLOCK_SIZE} tries")


def bot_env(
    base: dict[str, str],
    *,
    telegram: FakeTelegramServer,
    openai: FakeOpenAIServer,
    database: Path,
    database_url: str | None = None,
    **overrides: str,
) -> dict[str, str]:
    """The bot's environment; with `database_url` it runs on that PostgreSQL database
    (DATABASE_URL) and `database` is not used.

    Two product delays that only set a test's pace are small here (a test about them sets
    its own value through `overrides`): the gap between two messages to one chat (Telegram's
    limit, 1 s by default; bot/telegram/pacer.py is tested against it on a virtual clock) and, on
    PostgreSQL, the claim lease a killed bot's chats wait out before a restarted bot takes
    them (15 s by default; see `TEST_CLAIM_LEASE_S`). Products are searched by words only
    (PRODUCTS_EMBEDDER=none): the bundled model would be loaded and the demo catalogue
    embedded by every bot started; the products' own tests turn it on.
    """
    env = {
        **base,
        "BOT_TOKEN": telegram.token,
        "TELEGRAM_API_URL": telegram.base_url,
        "OPENAI_API_KEY": "sk-test-not-a-real-key",
        "OPENAI_BASE_URL": openai.base_url,
        "OPENAI_MODEL": "fake-model",
        "OPENAI_MAX_RETRIES": "0",
        "SHUTDOWN_GRACE_S": "20",
        "LOG_LEVEL": "INFO",
        "TELEGRAM_CHAT_INTERVAL_S": TEST_CHAT_INTERVAL_S,
        "PRODUCTS_EMBEDDER": "none",
    }
    if database_url is None:
        env["DATABASE_PATH"] = str(database)
    else:
        env["DATABASE_URL"] = database_url
        env["CLAIM_LEASE_S"] = TEST_CLAIM_LEASE_S
    env.update(overrides)
    return env


def webhook_env(env: dict[str, str], port: int) -> dict[str, str]:
    return {
        **env,
        "BOT_MODE": "webhook",
        "WEBHOOK_URL": "https://bot.example.test",
        "WEBHOOK_PATH": WEBHOOK_PATH,
        "WEBHOOK_SECRET": WEBHOOK_SECRET,
        "WEB_HOST": "127.0.0.1",
        "WEB_PORT": str(port),
    }


class BotProcess:
    """One run of the real bot process; stderr is collected line by line.

    `argv` are the command-line arguments (`python -m bot ARGV`); `spawn=True` starts a
    fresh interpreter instead of forking (for tests of the interpreter start itself).
    """

    running: ClassVar[set[BotProcess]] = set()  # started and not yet reaped

    def __init__(
        self, env: dict[str, str], cwd: Path, *, argv: list[str] | None = None, spawn: bool = False
    ) -> None:
        self._env = env
        self._cwd = cwd
        self._argv = argv or []
        self._spawn = spawn
        self.proc: Any = None  # asyncio.subprocess.Process or launch.ForkedProcess
        self.lines: list[str] = []
        self._ready = asyncio.Event()
        self._new_line = asyncio.Event()
        self._reader: asyncio.Task[None] | None = None

    async def start(self) -> BotProcess:
        self.proc = await start_bot_process(
            self._argv, env=self._env, cwd=self._cwd, spawn=self._spawn
        )
        BotProcess.running.add(self)
        self._reader = asyncio.create_task(self._read())
        return self

    async def _read(self) -> None:
        assert self.proc is not None and self.proc.stderr is not None
        async for raw in self.proc.stderr:
            line = raw.decode("utf-8", "replace").rstrip("\n")
            self.lines.append(line)
            if READY_MARKER in line or READY_MARKER_JSON in line:
                self._ready.set()
            new_line, self._new_line = self._new_line, asyncio.Event()
            new_line.set()

    @property
    def output(self) -> str:
        return "\n".join(self.lines)

    async def wait_ready(self, within: float = READY_WITHIN_S) -> None:
        assert self.proc is not None
        exited = asyncio.create_task(self.proc.wait())
        ready = asyncio.create_task(self._ready.wait())
        done, _ = await asyncio.wait({exited, ready}, timeout=within, return_when="FIRST_COMPLETED")
        exited.cancel()
        ready.cancel()
        if ready not in done:
            raise AssertionError(f"bot did not become ready:\n{self.output}")

    async def wait_for_line(self, fragment: str, within: float = LINE_WITHIN_S) -> str:
        """The first log line containing `fragment`, waiting (bounded) for it to appear."""

        async def find() -> str:
            while True:
                for line in self.lines:
                    if fragment in line:
                        return line
                await self._new_line.wait()

        try:
            return await asyncio.wait_for(find(), within)
        except TimeoutError:
            raise AssertionError(f"no log line with {fragment!r}:\n{self.output}") from None

    async def wait_exit(self, within: float = EXIT_WITHIN_S) -> int:
        assert self.proc is not None
        code: int = await asyncio.wait_for(self.proc.wait(), within)
        BotProcess.running.discard(self)
        if self._reader is not None:
            with contextlib.suppress(Exception):
                await asyncio.wait_for(self._reader, within)
        if hasattr(self.proc, "close"):
            self.proc.close()
        return code

    async def terminate(self, within: float = EXIT_WITHIN_S) -> int:
        assert self.proc is not None
        if self.proc.returncode is None:
            self.proc.send_signal(signal.SIGTERM)
        return await self.wait_exit(within)

    async def kill(self) -> None:
        assert self.proc is not None
        if self.proc.returncode is None:
            self.proc.kill()
        await self.wait_exit()

    @classmethod
    async def end_all(cls) -> list[BotProcess]:
        """Kill and reap every bot process still running (a test's teardown); those it ended."""
        left = [process for process in cls.running if process.proc is not None]
        for process in left:
            with contextlib.suppress(ProcessLookupError):
                process.proc.kill()
        for process in left:
            with contextlib.suppress(Exception):
                await process.wait_exit()
        cls.running.clear()
        return [process for process in left if process.proc.returncode == -signal.SIGKILL]
