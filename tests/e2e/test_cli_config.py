"""The real process refuses bad settings with exit status 2 and one clear line."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path


def run_bot(env: dict[str, str], cwd: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "bot"],
        env=env,
        cwd=cwd,
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )


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
    imported = subprocess.run(
        [sys.executable, "-m", "bot", "import-data", "shop.json"],
        env=clean_env,
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert imported.returncode == 2
    assert imported.stderr.splitlines() == [
        "error: .env cannot be read: it is not UTF-8 text (byte 45)"
    ], imported.stderr
