"""DATABASE_URL / DATABASE_POOL_SIZE: PostgreSQL when set, SQLite (DATABASE_PATH) when not,
and the URL's password never in a message or a repr."""

from __future__ import annotations

from pathlib import Path

import pytest

from bot.runtime.config import (
    SettingsError,
    load_database_choice,
    load_settings,
    redacted_database_url,
)

BASE = {"BOT_TOKEN": "1:secret-token", "OPENAI_API_KEY": "sk-secret-key"}
URL = "postgresql://shop:s3cret-pw@db.internal:5433/support?sslmode=require"


def make(monkeypatch: pytest.MonkeyPatch, **env: str):
    for key, value in {**BASE, **env}.items():
        monkeypatch.setenv(key, value)
    return load_settings()


def test_without_a_url_the_database_is_the_sqlite_file(monkeypatch: pytest.MonkeyPatch) -> None:
    settings = make(monkeypatch, DATABASE_PATH="var/shop.sqlite3")
    choice = settings.database
    assert (choice.setting, choice.target, choice.shown) == (
        "DATABASE_PATH",
        Path("var/shop.sqlite3"),
        "var/shop.sqlite3",
    )
    assert choice.pool_size == 10


@pytest.mark.parametrize("blank", ["", "  "])
def test_a_blank_url_is_unset(monkeypatch: pytest.MonkeyPatch, blank: str) -> None:
    assert make(monkeypatch, DATABASE_URL=blank).database.setting == "DATABASE_PATH"


def test_a_url_wins_over_the_path(monkeypatch: pytest.MonkeyPatch) -> None:
    settings = make(monkeypatch, DATABASE_URL=URL, DATABASE_PATH="var/shop.sqlite3")
    choice = settings.database
    assert choice.setting == "DATABASE_URL"
    assert choice.target == URL
    assert choice.shown == "postgresql://db.internal:5433/support"
    assert "s3cret-pw" not in repr(settings) and "s3cret-pw" not in str(settings)
    assert "s3cret-pw" not in repr(choice.shown)


@pytest.mark.parametrize(
    "url",
    [
        "mysql://shop:pw@db/support",
        "sqlite:///data/bot.sqlite3",
        "postgresql+asyncpg://shop:pw@db/support",
        "data/bot.sqlite3",
        "http://shop:pw@db/support",
    ],
)
def test_other_urls_are_refused_by_name_without_echoing_them(
    monkeypatch: pytest.MonkeyPatch, url: str
) -> None:
    with pytest.raises(SettingsError) as info:
        make(monkeypatch, DATABASE_URL=url)
    message = str(info.value)
    assert message.startswith("invalid settings: DATABASE_URL: expected a PostgreSQL URL")
    assert "pw" not in message and "\n" not in message


@pytest.mark.parametrize("scheme", ["postgresql", "postgres"])
def test_both_schemes_are_accepted(monkeypatch: pytest.MonkeyPatch, scheme: str) -> None:
    url = f"{scheme}://shop@localhost/support"
    assert make(monkeypatch, DATABASE_URL=url).database.target == url


@pytest.mark.parametrize(("size", "ok"), [("1", True), ("100", True), ("0", False), ("101", False)])
def test_pool_size_bounds(monkeypatch: pytest.MonkeyPatch, size: str, ok: bool) -> None:
    if ok:
        assert make(monkeypatch, DATABASE_POOL_SIZE=size).database.pool_size == int(size)
    else:
        with pytest.raises(SettingsError, match="DATABASE_POOL_SIZE"):
            make(monkeypatch, DATABASE_POOL_SIZE=size)


@pytest.mark.parametrize(
    ("url", "shown"),
    [
        (URL, "postgresql://db.internal:5433/support"),
        ("postgres://u:p@h/d", "postgres://h/d"),
        ("postgresql:///support?host=/run/postgresql", "postgresql:///support"),
        ("postgresql://u:p@[::1]:5432/d", "postgresql://[::1]:5432/d"),
        ("postgresql://u:p@h:notaport/d", "postgresql://…"),
    ],
)
def test_the_shown_url_has_no_user_password_or_query(url: str, shown: str) -> None:
    assert redacted_database_url(url) == shown


def test_offline_commands_read_the_same_choice(monkeypatch: pytest.MonkeyPatch) -> None:
    """import-data needs no token or key, but follows DATABASE_URL like the bot."""
    monkeypatch.setenv("DATABASE_URL", URL)
    monkeypatch.setenv("DATABASE_POOL_SIZE", "3")
    choice = load_database_choice()
    assert (choice.setting, choice.target, choice.pool_size) == ("DATABASE_URL", URL, 3)
    monkeypatch.setenv("DATABASE_URL", "mysql://x:pw@h/d")
    with pytest.raises(SettingsError, match="DATABASE_URL: expected a PostgreSQL URL"):
        load_database_choice()
