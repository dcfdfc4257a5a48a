"""The Dockerfile's HEALTHCHECK command, run as Docker would run it, against the real bot
process configured like the image (polling, HEALTH_ENABLED): it passes while the bot is
up and fails once the bot has stopped (SIGTERM drains and exits 0). The bot is a fresh
`python -m bot`, as the image's ENTRYPOINT starts it (not a fork, tests/e2e/launch.py)."""

from __future__ import annotations

import asyncio
import json
import re
import sys
from pathlib import Path

from tests.e2e.conftest import StartBot
from tests.e2e.harness import EXIT_WITHIN_S, free_port

ROOT = Path(__file__).resolve().parents[2]


def health_check_command() -> list[str]:
    text = re.sub(r"\\\n", " ", (ROOT / "Dockerfile").read_text())
    [line] = [line for line in text.splitlines() if line.startswith("HEALTHCHECK")]
    command: list[str] = json.loads(line[line.index("CMD") + 3 :].strip())
    assert command[0] == "python"
    return [sys.executable, *command[1:]]


async def run_check(port: int) -> int:
    proc = await asyncio.create_subprocess_exec(
        *health_check_command(),
        env={"WEB_PORT": str(port), "PATH": "/usr/bin:/bin"},
        stdout=asyncio.subprocess.DEVNULL,
        stderr=asyncio.subprocess.DEVNULL,
    )
    return await asyncio.wait_for(proc.wait(), EXIT_WITHIN_S)


async def test_the_image_health_check_follows_the_bot(start_bot: StartBot) -> None:
    port = free_port()
    bot = await start_bot(
        spawn=True, HEALTH_ENABLED="true", WEB_HOST="127.0.0.1", WEB_PORT=str(port)
    )
    assert await run_check(port) == 0
    assert await bot.terminate() == 0
    assert await run_check(port) != 0
