"""The real process refuses bad settings with exit status 2 and one clear line."""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest

from tests.e2e.launch import run_bot_command


def run_bot(env: dict[str, str], cwd: Path) -> subprocess.CompletedProcess[str]:
    return run_bot_command([], env=env, cwd=cwd)


def test_webhook_without_secret_exits_2_naming_it(
    clean_env: dict[str, str], tmp_path: Path
) -> None:
    env = {**clean_env, "BOT_MODE": "webhook", "BOT_TOKEN": "1:x", "OPENAI_API_KEY": "k"}
    env["WEBHOOK_URL"] = "https://bot.example.org"
    result = run_bot(env, tmp_path)
    assert result.returncode == 2
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1, result.stderr
    assert "WEBHOOK_SECRET" in lines[0]
    assert "Traceback" not in result.stderr


@pytest.mark.parametrize("path", ["/a{b", "/hook/{token}", "/hook?x=1", "/hook#x", "/hook*"])
def test_a_webhook_path_that_is_not_a_literal_path_exits_2_naming_it(
    clean_env: dict[str, str], tmp_path: Path, path: str
) -> None:
    """The web server would read {…} as a route variable (or fail on a lone brace with a
    traceback); ? and # never reach a path; Caddy reads * as a wildcard."""
    env = {**clean_env, "BOT_MODE": "webhook", "BOT_TOKEN": "1:x", "OPENAI_API_KEY": "k"}
    env.update(WEBHOOK_URL="https://bot.example.org", WEBHOOK_SECRET="s3cr3t", WEBHOOK_PATH=path)
    result = run_bot(env, tmp_path)
    assert result.returncode == 2, result.stderr
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1, result.stderr
    assert "WEBHOOK_PATH: expected a literal path" in lines[0]
    assert "Traceback" not in result.stderr and "fatal" not in result.stderr


def test_missing_token_exits_2_without_echoing_secrets(
    clean_env: dict[str, str], tmp_path: Path
) -> None:
    env = {**clean_env, "OPENAI_API_KEY": "sk-very-secret", "TOOL_MAX_STEPS": "9"}
    result = run_bot(env, tmp_path)
    assert result.returncode == 2
    assert len(result.stderr.strip().splitlines()) == 1
    assert "BOT_TOKEN" in result.stderr and "TOOL_MAX_STEPS" in result.stderr
    assert "sk-very-secret" not in result.stderr + result.stdout


def test_a_dot_env_that_is_not_utf8_exits_2_naming_it(
    clean_env: dict[str, str], tmp_path: Path
) -> None:
    (tmp_path / ".env").write_bytes(b"BOT_TOKEN=1:secret-in-dot-env\nOPENAI_API_KEY=\xff\xfe\n")
    result = run_bot(clean_env, tmp_path)
    assert result.returncode == 2
    assert result.stderr.splitlines() == [
        "error: .env cannot be read: it is not UTF-8 text (byte 45)"
    ], result.stderr
    assert "secret-in-dot-env" not in result.stderr
    imported = run_bot_command(["import-data", "shop.json"], env=clean_env, cwd=tmp_path)
    assert imported.returncode == 2
    assert imported.stderr.splitlines() == [
        "error: .env cannot be read: it is not UTF-8 text (byte 45)"
    ], imported.stderr


# --- placeholders, a malformed token, nothing set at all ---

EXAMPLE_TOKEN = "123456789:replace-with-your-bot-token"
EXAMPLE_KEY = "sk-replace-with-your-key"


def _example_values() -> dict[str, str]:
    """BOT_TOKEN and OPENAI_API_KEY as .env.example ships them (read from the file)."""
    example = Path(__file__).resolve().parents[2] / ".env.example"
    values = dict(
        line.split("=", 1)
        for line in example.read_text(encoding="utf-8").splitlines()
        if line.startswith(("BOT_TOKEN=", "OPENAI_API_KEY="))
    )
    assert values == {"BOT_TOKEN": EXAMPLE_TOKEN, "OPENAI_API_KEY": EXAMPLE_KEY}
    return values


def test_dot_env_copied_unchanged_from_the_example_exits_2_naming_both(
    clean_env: dict[str, str], tmp_path: Path
) -> None:
    example = Path(__file__).resolve().parents[2] / ".env.example"
    (tmp_path / ".env").write_text(example.read_text(encoding="utf-8"), encoding="utf-8")
    _example_values()
    result = run_bot(clean_env, tmp_path)
    assert result.returncode == 2
    assert result.stderr.splitlines() == [
        "error: invalid settings: BOT_TOKEN: still the placeholder from .env.example; put "
        "the token @BotFather gave you there; OPENAI_API_KEY: still the placeholder from "
        ".env.example; put your API key there (any non-empty value for a local server)"
    ], result.stderr
    assert result.stdout == ""
    assert "replace-with-your" not in result.stderr


def test_the_placeholder_token_alone_exits_2_naming_bot_token(
    clean_env: dict[str, str], tmp_path: Path
) -> None:
    env = {**clean_env, **_example_values(), "OPENAI_API_KEY": "sk-real-looking-secret"}
    result = run_bot(env, tmp_path)
    assert result.returncode == 2
    assert result.stderr.splitlines() == [
        "error: invalid settings: BOT_TOKEN: still the placeholder from .env.example; put "
        "the token @BotFather gave you there"
    ], result.stderr
    assert "replace-with-your" not in result.stderr + result.stdout
    assert "sk-real-looking-secret" not in result.stderr + result.stdout


def test_a_malformed_token_is_a_settings_error_naming_bot_token(
    clean_env: dict[str, str], tmp_path: Path
) -> None:
    for token in ("bot-secret-without-id", "12345 :has space", "12345:bad/char?x", "abc:def"):
        env = {**clean_env, "BOT_TOKEN": token, "OPENAI_API_KEY": "sk-secret-value"}
        result = run_bot(env, tmp_path)
        assert result.returncode == 2, (token, result.stderr)
        assert result.stderr.splitlines() == [
            "error: invalid settings: BOT_TOKEN: not a bot token: expected the bot's id, a "
            "colon and the secret as @BotFather gives it (digits:letters, digits, _ or -, "
            "no spaces)"
        ], result.stderr
        assert result.stdout == ""
        leaked = token.split(":")[-1].strip()
        assert leaked not in result.stderr and "sk-secret-value" not in result.stderr


def test_nothing_set_suggests_copying_the_example(
    clean_env: dict[str, str], tmp_path: Path
) -> None:
    result = run_bot(clean_env, tmp_path)
    assert result.returncode == 2
    assert result.stderr.splitlines() == [
        "error: invalid settings: BOT_TOKEN: required but not set; OPENAI_API_KEY: required "
        "but not set (start from the example: cp .env.example .env, then fill them in)"
    ], result.stderr
