"""`python -m bot simulate` as a shop owner runs it: a real process, only the model's
settings (no bot token), a DATABASE_PATH that must stay untouched."""

from __future__ import annotations

import asyncio
from pathlib import Path

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
