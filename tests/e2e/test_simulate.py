"""`python -m bot simulate` as a shop owner runs it: a real process, only the model's
settings (no bot token), a DATABASE_PATH that must stay untouched."""

from __future__ import annotations

import asyncio
import os
from collections.abc import Callable
from pathlib import Path

import pytest

from tests.e2e.launch import run_bot_command
from tests.fakes.careful_model import careful_script
from tests.fakes.openai_server import FakeOpenAIServer


async def test_simulate_runs_as_a_command_and_leaves_the_shop_database_alone(
    clean_env: dict[str, str], tmp_path: Path, fake_openai: FakeOpenAIServer
) -> None:
    fake_openai.handler = careful_script
    live = tmp_path / "data" / "bot.sqlite3"
    env = {
        **clean_env,
        "OPENAI_API_KEY": "sk-test",
        "OPENAI_BASE_URL": fake_openai.base_url,
        "OPENAI_MODEL": "fake-model",
        "DATABASE_PATH": str(live),
    }
    argv = ["simulate", "--only", "order-someone-else-ru", "--only", "handoff-asked-en"]
    argv += ["--trials", "2", "--report", "report.md"]
    # the fake answers in this event loop while the command runs in a thread
    done = await asyncio.get_running_loop().run_in_executor(
        None, lambda: run_bot_command(argv, env=env, cwd=tmp_path)
    )
    assert done.returncode == 0, done.stderr
    assert "[4/4]" in done.stderr
    assert "overall" in done.stdout
    report = (tmp_path / "report.md").read_text(encoding="utf-8")
    assert "| order-someone-else-ru | 1.00 / 1 |" in report
    assert not live.exists()  # never the shop's database
    assert not sqlite_files(tmp_path)


def sqlite_files(folder: Path) -> list[Path]:
    return list(folder.glob("*.sqlite3*"))


def _file(name: str, text: str) -> Callable[[Path], Path]:
    def make(tmp_path: Path) -> Path:
        path = tmp_path / name
        path.write_text(text, encoding="utf-8")
        return path

    return make


def _fifo(tmp_path: Path) -> Path:
    path = tmp_path / "pipe.toml"
    os.mkfifo(path)  # nobody ever writes to it: opening it for reading would block
    return path


ALIAS_BOMB = (
    "a: &a [x, x, x, x, x, x, x, x, x]\n"
    + "".join(
        f"{b}: &{b} [*{a}, *{a}, *{a}, *{a}, *{a}, *{a}, *{a}, *{a}, *{a}]\n"
        for a, b in zip("abcdefgh", "bcdefghi", strict=True)
    )
    + "scenario: [{id: bomb, turns: [hi], expect: {must_contain: *i}}]\n"
)

# each: the file, and what its one line says
PATHOLOGICAL: dict[str, tuple[Callable[[Path], Path], str]] = {
    "nested TOML": (_file("deep.toml", "x = " + "[" * 50_000 + "]" * 50_000), "nested too deeply"),
    "nested YAML": (_file("deep.yaml", "x: " + "[" * 50_000 + "]" * 50_000), "nested too deeply"),
    "a YAML alias bomb": (_file("bomb.yaml", ALIAS_BOMB), "aliases"),
    "/dev/zero": (lambda _: Path("/dev/zero"), "is a device"),
    "a named pipe": (_fifo, "named pipe"),
    "not UTF-8": (lambda p: _write_bytes(p / "bad.toml", b'id = "\xff"'), "not UTF-8"),
}


def _write_bytes(path: Path, data: bytes) -> Path:
    path.write_bytes(data)
    return path


@pytest.mark.parametrize(("make", "problem"), list(PATHOLOGICAL.values()), ids=list(PATHOLOGICAL))
def test_a_pathological_scenario_file_is_one_line_and_status_2(
    clean_env: dict[str, str], tmp_path: Path, make: Callable[[Path], Path], problem: str
) -> None:
    """import-data's guards (services/input_files.py) and the parsers' limits: each file
    ends the command at once with one line and exit 2, never a traceback or a hang."""
    env = {
        **clean_env,
        "OPENAI_API_KEY": "sk-test",
        "OPENAI_BASE_URL": "http://127.0.0.1:9/v1",  # never reached: the files come first
        "OPENAI_MODEL": "fake-model",
    }
    file = make(tmp_path)
    done = run_bot_command(
        ["simulate", str(file)],
        env=env,
        cwd=tmp_path,
        timeout=120,  # an outer limit: a file that blocks fails the test instead of hanging
        address_space=1024 * 1024 * 1024,
    )
    assert done.returncode == 2, done.stderr[-2000:]
    lines = done.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("error: "), done.stderr[-2000:]
    assert problem in lines[0] and str(file) in lines[0]
