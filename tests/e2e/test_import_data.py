"""`python -m bot import-data FILE.json` as a shop owner runs it: only DATABASE_PATH set."""

from __future__ import annotations

import json
import os
import sqlite3
import subprocess
from collections.abc import Callable
from pathlib import Path

import pytest

from tests.e2e.launch import run_bot_command

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
    return run_bot_command(["import-data", str(file)], env=env, cwd=cwd)


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


# --- pathological input files: a listed problem and an exit status, never a traceback ---

MEMORY_LIMIT_BYTES = 512 * 1024 * 1024  # address space of the import process in these tests
LIMIT_S = 300  # an outer limit: a file that blocks the import fails instead of hanging


def import_bounded(env: dict[str, str], cwd: Path, file: Path) -> subprocess.CompletedProcess[str]:
    """`import-data` under a 512 MB address-space limit; a file that blocks times out.
    Forked, the limit also counts the warm process's imports (some 40 MB more than the
    import alone needs): the headroom is a little smaller than in a fresh interpreter."""
    return run_bot_command(
        ["import-data", str(file)],
        env=env,
        cwd=cwd,
        timeout=LIMIT_S,
        address_space=MEMORY_LIMIT_BYTES,
    )


def _write(text: str | bytes) -> Callable[[Path], Path]:
    def make(tmp_path: Path) -> Path:
        path = tmp_path / "input.json"
        if isinstance(text, str):
            path.write_text(text, encoding="utf-8")
        else:
            path.write_bytes(text)
        return path

    return make


def _fifo(tmp_path: Path) -> Path:
    path = tmp_path / "pipe.json"
    os.mkfifo(path)  # nobody ever writes to it: opening it for reading would block
    return path


def _sparse(tmp_path: Path) -> Path:
    path = tmp_path / "big.json"
    with path.open("wb") as file:
        file.truncate(11 * 1024 * 1024)
    return path


def _folder(tmp_path: Path) -> Path:
    path = tmp_path / "folder.json"
    path.mkdir()
    return path


def _order(order_id: str, **fields: object) -> dict[str, object]:
    return {"order_id": order_id, "status": "delivered", **fields}


PATHOLOGICAL: dict[str, tuple[Callable[[Path], Path], int, str]] = {
    "nested 20,000 deep": (_write("[" * 20_000 + "]" * 20_000), 2, "nested too deeply"),
    "nested deep inside orders": (
        _write('{"orders": ' + "[" * 5_000 + "]" * 5_000 + "}"),
        2,
        "nested too deeply",
    ),
    "owner id beyond 64 bits": (
        _write(json.dumps({"orders": [_order("1234", owner_telegram_id=2**64)]})),
        1,
        "orders[0] (order_id '1234').owner_telegram_id:",
    ),
    "a number of 5000 digits": (
        _write(
            '{"orders": [{"order_id": "1234", "status": "delivered", "owner_telegram_id": '
            + "9" * 5000
            + "}]}"
        ),
        2,
        "number too long",
    ),
    "larger than 10 MB": (_sparse, 2, "10 MB"),
    "a 4-million-character string": (
        _write(json.dumps({"general_return_policy": "я" * 4_000_000}, ensure_ascii=False)),
        1,
        "general_return_policy: String should have at most 4000 characters",
    ),
    "too many objects": (_write("[" + "{}," * 300_000 + "{}]"), 2, "JSON objects and arrays"),
    "too many orders": (
        _write(json.dumps({"orders": [_order(f"{i % 10_000:04d}") for i in range(10_001)]})),
        1,
        "orders: 10001 records, at most 10000 per file",
    ),
    "thousands of invalid records": (
        _write(json.dumps({"orders": [{}] * 5000})),
        1,
        "nothing was written: 10000 problem(s)",
    ),
    "a named pipe": (_fifo, 2, "named pipe"),
    "/dev/zero": (lambda _: Path("/dev/zero"), 2, "is a device"),
    "/dev/urandom": (lambda _: Path("/dev/urandom"), 2, "is a device"),
    "a folder": (_folder, 2, "is a folder"),
    "a missing file": (lambda tmp_path: tmp_path / "missing.json", 2, "No such file"),
    "not UTF-8": (_write(b'{"general_return_policy": "\xff\xfe"}'), 2, "not UTF-8"),
    "an empty file": (_write(" \n"), 2, "is empty"),
}


@pytest.mark.parametrize(
    ("make", "status", "problem"), list(PATHOLOGICAL.values()), ids=list(PATHOLOGICAL)
)
def test_a_pathological_file_is_a_listed_problem_and_writes_nothing(
    clean_env: dict[str, str],
    tmp_path: Path,
    make: Callable[[Path], Path],
    status: int,
    problem: str,
) -> None:
    database = tmp_path / "shop.sqlite3"
    env = {**clean_env, "DATABASE_PATH": str(database)}
    valid = tmp_path / "shop-valid.json"
    valid.write_text(json.dumps(SHOP, ensure_ascii=False), encoding="utf-8")
    assert import_data(env, tmp_path, valid).returncode == 0
    before = dump(database)

    file = make(tmp_path)
    result = import_bounded(env, tmp_path, file)

    assert result.returncode == status, result.stderr[-2000:]
    assert "Traceback" not in result.stderr, result.stderr[-2000:]
    lines = result.stderr.splitlines()
    assert any(problem in line for line in lines), result.stderr[-2000:]
    assert all(line.startswith(("error: ", "nothing was written")) for line in lines), lines[:5]
    assert len(lines) <= 102  # at most 100 problems are listed, then the count
    assert str(file) in result.stderr or status == 1
    assert dump(database) == before


def dump(database: Path) -> list[str]:
    with sqlite3.connect(database) as conn:
        return list(conn.iterdump())


def test_an_unusable_database_path_is_status_2_and_one_line(
    clean_env: dict[str, str], tmp_path: Path
) -> None:
    folder = tmp_path / "db-folder"
    folder.mkdir()
    env = {**clean_env, "DATABASE_PATH": str(folder)}
    file = tmp_path / "shop.json"
    file.write_text(json.dumps(SHOP, ensure_ascii=False), encoding="utf-8")
    result = import_data(env, tmp_path, file)
    assert result.returncode == 2
    assert result.stderr.splitlines() == [
        f"error: DATABASE_PATH {folder}: is a folder, not a database file"
    ]


def test_the_summary_names_the_database_it_wrote(clean_env: dict[str, str], tmp_path: Path) -> None:
    """Run from another folder, a relative DATABASE_PATH is a new file there: said so."""
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    env = {**clean_env, "DATABASE_PATH": "data/bot.sqlite3"}
    file = tmp_path / "shop.json"
    file.write_text(json.dumps(SHOP, ensure_ascii=False), encoding="utf-8")
    database = elsewhere / "data" / "bot.sqlite3"

    first = import_data(env, elsewhere, file)
    assert first.returncode == 0, first.stderr
    assert first.stdout.startswith(
        f"imported into a new database {database} (DATABASE_PATH): orders: 2 inserted"
    ), first.stdout
    again = import_data(env, elsewhere, file)
    assert again.stdout.startswith(f"imported into {database} (DATABASE_PATH): orders: 0 "), (
        again.stdout
    )


def test_a_shops_own_order_numbers_import_with_order_number_pattern(
    clean_env: dict[str, str], tmp_path: Path
) -> None:
    database = tmp_path / "shop.sqlite3"
    env = {
        **clean_env,
        "DATABASE_PATH": str(database),
        "ORDER_NUMBER_PATTERN": "AB-[0-9]{6}",
        "ORDER_NUMBER_EXAMPLE": "AB-123456",
    }
    file = tmp_path / "shop.json"
    orders = [
        {"order_id": "AB-123456", "status": "in_transit", "owner_telegram_id": 42},
        {"order_id": "AB-000001", "status": "delivered", "owner_telegram_id": 42},
    ]
    file.write_text(json.dumps({"orders": orders}), encoding="utf-8")
    done = import_data(env, tmp_path, file)
    assert done.returncode == 0, done.stderr
    assert rows(database, "SELECT order_id FROM orders ORDER BY 1") == [
        ("AB-000001",),
        ("AB-123456",),
    ]

    # without the setting the demo's four digits apply, and the file is refused
    file.write_text(json.dumps({"orders": [{"order_id": "1234567", "status": "delivered"}]}))
    refused = import_data(
        {**env, "ORDER_NUMBER_PATTERN": "", "ORDER_NUMBER_EXAMPLE": ""}, tmp_path, file
    )
    assert refused.returncode != 0
    assert "must be exactly 4 digits" in refused.stderr

    # a pattern that is not a regular expression is one line, nothing written
    bad = import_data({**env, "ORDER_NUMBER_PATTERN": "AB-[0-9"}, tmp_path, file)
    assert bad.returncode == 2
    assert "ORDER_NUMBER_PATTERN" in bad.stderr and "Traceback" not in bad.stderr
