"""A mistyped setting is named at start, with the real name, and never stops the bot."""

from __future__ import annotations

from pathlib import Path

from tests.e2e.conftest import StartBot
from tests.e2e.launch import run_bot_command

TYPOS = (
    "ADMIN_ID=5\n"  # ADMIN_IDS
    "SHOPNAME=Чайная лавка\n"  # SHOP_NAME
    "stats_timezon=Europe/Moscow\n"  # STATS_TIMEZONE, in lower case as pydantic reads it
    # compose's own, another tool's, and a name nothing like ours: no warning
    "POSTGRES_PASSWORD=secret\n"
    "COMPOSE_PROJECT_NAME=shop\n"
    "GREETING=hello\n"
)
WARNINGS = [
    "warning: .env: ADMIN_ID is not a setting of this bot; did you mean ADMIN_IDS?",
    "warning: .env: SHOPNAME is not a setting of this bot; did you mean SHOP_NAME?",
    "warning: .env: STATS_TIMEZON is not a setting of this bot; did you mean STATS_TIMEZONE?",
]


def warnings_in(output: str) -> list[str]:
    return [line for line in output.splitlines() if line.startswith("warning:")]


async def test_typos_in_dot_env_are_named_and_the_bot_starts(
    start_bot: StartBot, tmp_path: Path
) -> None:
    (tmp_path / ".env").write_text(TYPOS, encoding="utf-8")
    bot = await start_bot()  # ready: a warning never stops the start
    assert warnings_in(bot.output) == WARNINGS, bot.output
    assert "secret" not in bot.output
    assert await bot.terminate() == 0


def test_a_misspelt_name_in_the_environment_is_named_and_the_rest_left_alone(
    clean_env: dict[str, str], tmp_path: Path
) -> None:
    (tmp_path / ".env").write_text("SHOPNAME=Чайная лавка\n", encoding="utf-8")
    env = {**clean_env, "DATABASE_URI": "postgresql://x", "HOSTNAME": "box", "TZ": "UTC"}
    result = run_bot_command(["texts"], env=env, cwd=tmp_path)
    assert result.returncode == 0, result.stderr
    assert result.stderr.splitlines() == [
        "warning: .env: SHOPNAME is not a setting of this bot; did you mean SHOP_NAME?",
        "warning: environment: DATABASE_URI is not a setting of this bot; "
        "did you mean DATABASE_URL?",
    ]
    assert "Чайная лавка" not in result.stdout  # the misspelt setting really did nothing
