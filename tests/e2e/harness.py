"""Start the real `python -m bot` against the fake Bot API and the fake OpenAI server.

The process is driven only over HTTP (the fakes, the webhook). Readiness and exit are
observed, not slept on: `wait_ready` waits (bounded) for the start-up "ready" log line,
`wait_exit` for the process to end.
"""

from __future__ import annotations

import asyncio
import contextlib
import signal
import socket
import sys
from pathlib import Path
from typing import Any

import aiohttp

from tests.fakes.openai_server import FakeOpenAIServer
from tests.fakes.telegram_server import FakeTelegramServer


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


def free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


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
    (DATABASE_URL) and `database` is not used."""
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
    }
    if database_url is None:
        env["DATABASE_PATH"] = str(database)
    else:
        env["DATABASE_URL"] = database_url
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
    """One run of the real bot process; stderr is collected line by line."""

    def __init__(self, env: dict[str, str], cwd: Path) -> None:
        self._env = env
        self._cwd = cwd
        self.proc: asyncio.subprocess.Process | None = None
        self.lines: list[str] = []
        self._ready = asyncio.Event()
        self._new_line = asyncio.Event()
        self._reader: asyncio.Task[None] | None = None

    async def start(self) -> BotProcess:
        self.proc = await asyncio.create_subprocess_exec(
            sys.executable,
            "-m",
            "bot",
            env=self._env,
            cwd=self._cwd,
            stdin=asyncio.subprocess.DEVNULL,
            stdout=asyncio.subprocess.DEVNULL,
            stderr=asyncio.subprocess.PIPE,
        )
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

    async def wait_ready(self, within: float = 60.0) -> None:
        assert self.proc is not None
        exited = asyncio.create_task(self.proc.wait())
        ready = asyncio.create_task(self._ready.wait())
        done, _ = await asyncio.wait({exited, ready}, timeout=within, return_when="FIRST_COMPLETED")
        exited.cancel()
        ready.cancel()
        if ready not in done:
            raise AssertionError(f"bot did not become ready:\n{self.output}")

    async def wait_for_line(self, fragment: str, within: float = 20.0) -> str:
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

    async def wait_exit(self, within: float = 30.0) -> int:
        assert self.proc is not None
        code = await asyncio.wait_for(self.proc.wait(), within)
        if self._reader is not None:
            with contextlib.suppress(Exception):
                await asyncio.wait_for(self._reader, 5)
        return code

    async def terminate(self, within: float = 30.0) -> int:
        assert self.proc is not None
        if self.proc.returncode is None:
            self.proc.send_signal(signal.SIGTERM)
        return await self.wait_exit(within)

    async def kill(self) -> None:
        assert self.proc is not None
        if self.proc.returncode is None:
            self.proc.kill()
        await self.wait_exit()
