"""`python -m bot import-data FILE.json` as a shop owner runs it: only DATABASE_PATH set."""

from __future__ import annotations

import json
import sqlite3
import subprocess
import sys
from pathlib import Path

SHOP = {
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
}


def import_data(env: dict[str, str], cwd: Path, file: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "bot", "import-data", str(file)],
        env=env,
        cwd=cwd,
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )


def rows(database: Path, sql: str) -> list[tuple[object, ...]]:
    with sqlite3.connect(database) as conn:
        return list(conn.execute(sql))


def test_import_then_reimport_updates(clean_env: dict[str, str], tmp_path: Path) -> None:
    database = tmp_path / "db" / "shop.sqlite3"
    env = {**clean_env, "DATABASE_PATH": str(database)}  # no BOT_TOKEN, no OPENAI_API_KEY
    file = tmp_path / "shop.json"
    file.write_text(json.dumps(SHOP, ensure_ascii=False), encoding="utf-8")

    first = import_data(env, tmp_path, file)
    assert first.returncode == 0, first.stderr
    assert "orders: 2 inserted, 0 updated" in first.stdout
    assert "return policies: 1 inserted, 0 updated" in first.stdout
    assert rows(database, "SELECT order_id, status, owner_telegram_id FROM orders ORDER BY 1") == [
        ("1234", "in_transit", 42),
        ("8041", "delivered", None),
    ]

    # the owner is left out, so it is kept; aliases are left out, so they are kept
    update = {
        "orders": [{"order_id": "1234", "status": "delivered"}],
        "return_policies": [{"product": "ноутбук", "return_days": 30, "conditions": "Новые."}],
    }
    file.write_text(json.dumps(update, ensure_ascii=False), encoding="utf-8")
    second = import_data(env, tmp_path, file)
    assert second.returncode == 0, second.stderr
    assert "orders: 0 inserted, 1 updated" in second.stdout
    assert "return policies: 0 inserted, 1 updated" in second.stdout
    assert rows(database, "SELECT status, owner_telegram_id FROM orders WHERE order_id='1234'") == [
        ("delivered", 42)
    ]
    assert rows(database, "SELECT return_days FROM return_policies") == [(30,)]
    assert rows(database, "SELECT alias, product FROM return_policy_aliases") == [
        ("laptop", "ноутбук")
    ]


def test_invalid_file_writes_nothing_and_names_record_and_field(
    clean_env: dict[str, str], tmp_path: Path
) -> None:
    database = tmp_path / "shop.sqlite3"
    env = {**clean_env, "DATABASE_PATH": str(database)}
    bad = json.loads(json.dumps(SHOP))
    bad["orders"].append({"order_id": "5555", "status": "shipped"})
    bad["return_policies"][0]["return_days"] = "two weeks"
    file = tmp_path / "bad.json"
    file.write_text(json.dumps(bad, ensure_ascii=False), encoding="utf-8")

    result = import_data(env, tmp_path, file)
    assert result.returncode == 1
    assert "orders[2] (order_id '5555').status:" in result.stderr
    assert "return_policies[0] (product 'Ноутбук').return_days:" in result.stderr
    assert "nothing was written" in result.stderr
    assert "Traceback" not in result.stderr
    if database.exists():
        assert rows(database, "SELECT COUNT(*) FROM orders") == [(0,)]


def test_not_json_is_status_2(clean_env: dict[str, str], tmp_path: Path) -> None:
    env = {**clean_env, "DATABASE_PATH": str(tmp_path / "shop.sqlite3")}
    file = tmp_path / "shop.json"
    file.write_text("{orders: [", encoding="utf-8")
    result = import_data(env, tmp_path, file)
    assert result.returncode == 2
    assert "not valid JSON" in result.stderr and "Traceback" not in result.stderr
