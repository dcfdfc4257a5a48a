"""`python -m bot import-data` with DATABASE_URL, as a shop owner on PostgreSQL runs it.

The same files go through the real command once with DATABASE_PATH (SQLite) and once
with DATABASE_URL (PostgreSQL) — an import, a rejected file, a re-import: the exit
statuses, everything printed and the stored shop must be the same. A URL that names no
database ends with status 2 and one line that does not show the URL's password.
"""

from __future__ import annotations

import asyncio
import json
import re
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

import pytest

from storage.database import open_database
from tests.e2e.launch import run_bot_command

pytestmark = pytest.mark.postgres

SECRET = "import-Pg-Secret_7"
FILES: tuple[dict[str, Any], ...] = (
    {
        "orders": [
            {"order_id": "1234", "status": "in_transit", "owner_telegram_id": 42},
            {"order_id": "8041", "status": "delivered", "pickup_point": "ПВЗ, ул. Ленина, 1"},
        ],
        "return_policies": [
            {
                "product": "Ноутбук",
                "return_days": 14,
                "conditions": "Без следов.",
                "aliases": ["laptop"],
            }
        ],
        "general_return_policy": "Остальные товары — 7 дней.",
        "faq": [{"topic": "Доставка", "answer": "Курьером.", "aliases": ["delivery"]}],
    },
    {  # rejected: nothing of it may be written
        "orders": [{"order_id": "5555", "status": "shipped"}],
        "return_policies": [{"product": "Ноутбук", "return_days": "two weeks", "conditions": "c"}],
    },
    {
        "orders": [
            {"order_id": "1234", "status": "delivered"},
            {"order_id": "7777", "status": "processing"},
        ],
        "return_policies": [{"product": "ноутбук", "return_days": 30, "conditions": "Новые."}],
        "general_return_policy": None,
        "faq": [],
    },
)
SHOP_TABLES = ("orders", "return_policies", "return_policy_aliases", "shop_texts", "faq_entries")


def _with_password(url: str) -> str:
    """The test server trusts local connections: the password is there to be kept secret."""
    parts = urlsplit(url)
    return f"postgresql://postgres:{SECRET}@{parts.path}?{parts.query}"


def _import(env: dict[str, str], cwd: Path, document: dict[str, Any]) -> tuple[int, str, str]:
    file = cwd / "shop.json"
    file.write_text(json.dumps(document, ensure_ascii=False), encoding="utf-8")
    result = run_bot_command(["import-data", str(file)], env=env, cwd=cwd)
    return result.returncode, result.stdout, result.stderr.replace(str(file), "FILE")


def _stored(target: str | Path) -> dict[str, list[tuple[object, ...]]]:
    async def read() -> dict[str, list[tuple[object, ...]]]:
        db = await open_database(target, migrate=False)
        try:
            return {
                table: sorted(
                    (tuple(r) for r in await db.fetch_all(f"SELECT * FROM {table}")), key=repr
                )
                for table in SHOP_TABLES
            }
        finally:
            await db.close()

    return asyncio.run(read())


def _target_masked(seen: list[Any]) -> list[Any]:
    """The runs with the database each summary names (which differs) replaced."""
    return [
        (item[0], re.sub(r"^imported into .*? \(DATABASE_(PATH|URL)\): ", "", item[1]), item[2])
        if isinstance(item, tuple)
        else item
        for item in seen
    ]


def _run(env: dict[str, str], cwd: Path, target: str | Path) -> list[Any]:
    seen: list[Any] = []
    for document in FILES:
        seen.append(_import(env, cwd, document))
        seen.append(_stored(target))
    return seen


def test_import_data_on_postgres_matches_sqlite(
    clean_env: dict[str, str], tmp_path: Path, pg_url: str
) -> None:
    sqlite_file = tmp_path / "shop.sqlite3"
    on_sqlite = _run({**clean_env, "DATABASE_PATH": str(sqlite_file)}, tmp_path, sqlite_file)
    url = _with_password(pg_url)
    on_postgres = _run({**clean_env, "DATABASE_URL": url}, tmp_path, pg_url)
    assert _target_masked(on_postgres) == _target_masked(on_sqlite)
    database = urlsplit(pg_url).path  # "/name": the summary names it, never the password
    assert on_postgres[0][1].startswith(f"imported into postgresql://{database} (DATABASE_URL): ")
    assert on_sqlite[0][1].startswith(f"imported into a new database {sqlite_file} (DATABASE_PATH)")

    first, after_first, rejected, after_rejected, again, after_again = on_postgres
    assert first[0] == 0 and "orders: 2 inserted, 0 updated" in first[1]
    assert rejected[0] == 1 and "nothing was written" in rejected[2]
    assert "orders[0] (order_id '5555').status:" in rejected[2]
    assert after_rejected == after_first
    assert again[0] == 0 and "orders: 1 inserted, 1 updated" in again[1]
    assert "faq: 0 inserted, 0 updated, 1 removed" in again[1]
    assert ("1234", "delivered") in {row[:2] for row in after_again["orders"]}
    assert after_again["shop_texts"] == [] and after_again["faq_entries"] == []
    assert all(SECRET not in out + err for _, out, err in on_postgres[::2])


def test_a_url_without_its_database_is_status_2_without_the_password(
    clean_env: dict[str, str], tmp_path: Path, pg_url: str
) -> None:
    parts = urlsplit(pg_url)
    missing = f"postgresql://postgres:{SECRET}@/no_such_database?{parts.query}"
    status, out, err = _import({**clean_env, "DATABASE_URL": missing}, tmp_path, FILES[0])
    assert status == 2, err
    assert err.startswith("error: DATABASE_URL ") and len(err.strip().splitlines()) == 1
    assert SECRET not in out + err and "Traceback" not in err
