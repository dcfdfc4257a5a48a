"""`import-data` gives the same shop on SQLite and PostgreSQL.

The same files are imported with `run_import` once with DATABASE_PATH (SQLite) and once
with DATABASE_URL (PostgreSQL): the exit statuses, the printed counts and problems, and
the stored shop (every row of the shop tables, and what the tools read through the
repository) must be the same — for a first import, a re-import that updates, removes a
text and replaces the FAQ, and a rejected file that writes nothing.
"""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import pytest

from bot.programs.data_import import run_import
from storage.database import open_database
from storage.shop import ShopRepository

pytestmark = pytest.mark.postgres

FIRST: dict[str, Any] = {
    "orders": [
        {
            "order_id": "1234",
            "status": "in_transit",
            "owner_telegram_id": 4_503_599_627_370_495,  # the largest allowed: BIGINT
            "expected_date": "2026-12-01",
            "updated_at": "2026-11-29T10:00:00+03:00",
        },
        {"order_id": "8041", "status": "delivered", "owner_phone": "+44 20 7946 0958"},
        {"order_id": "0007", "status": "processing"},
    ],
    "return_policies": [
        {
            "product": "  Ноутбук ",
            "return_days": 14,
            "conditions": "Без следов использования.",
            "aliases": ["Laptop", "ноутбука"],
        },
        {"product": "Zebra mug", "return_days": 0, "conditions": "Final sale.", "aliases": []},
        {"product": "äpfel", "return_days": 7, "conditions": "Fresh.", "aliases": ["Apfel"]},
    ],
    "general_return_policy": "Остальные товары — 7 дней.",
    "faq": [
        {"topic": "Доставка", "answer": "Курьером — 500 ₽.", "aliases": ["delivery"]},
        {"topic": "Оплата", "answer": "Картой.", "aliases": ["payment", "pay"]},
    ],
}
AGAIN: dict[str, Any] = {
    "orders": [
        {"order_id": "1234", "status": "delivered", "owner_telegram_id": None},
        {"order_id": "5555", "status": "cancelled"},
    ],
    "return_policies": [
        {"product": "ноутбук", "return_days": 30, "conditions": "Новые.", "aliases": ["laptop"]},
        {"product": "Zebra mug", "return_days": 3, "conditions": "Unused."},
    ],
    "general_return_policy": None,
    "faq": [{"topic": "Оплата", "answer": "Картой или наличными.", "aliases": ["pay"]}],
}
REJECTED: dict[str, Any] = {
    "orders": [
        {"order_id": "9999", "status": "delivered"},
        {"order_id": "99999", "status": "lost"},
    ],
    "return_policies": [{"product": "x", "return_days": -1, "conditions": "c"}],
}
SHOP_TABLES = (
    "orders",
    "return_policies",
    "return_policy_aliases",
    "shop_texts",
    "faq_entries",
    "faq_aliases",
)


async def _import(
    document: dict[str, Any], tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> tuple[int, str, str]:
    path = tmp_path / "shop.json"
    path.write_text(json.dumps(document, ensure_ascii=False), encoding="utf-8")
    status = await run_import(str(path))
    out, err = capsys.readouterr()
    return int(status), out, err.replace(str(path), "FILE")


async def _shop(target: str | Path) -> dict[str, Any]:
    """Every row of the shop's tables (sorted here, not by a collation), and what the
    tools read through the repository."""
    db = await open_database(target)
    try:
        rows = {
            table: sorted(
                (tuple(row) for row in await db.fetch_all(f"SELECT * FROM {table}")), key=repr
            )
            for table in SHOP_TABLES
        }
        shop = ShopRepository(db)
        found = {
            "orders": [await shop.get_order(o) for o in ("1234", "8041", "0007", "5555", "9999")],
            "policies": [
                await shop.find_return_policy(k)
                for k in ("laptop", "ноутбук", "zebra mug", "apfel")
            ],
            "text": await shop.get_text("general_return_policy"),
            "faq": await shop.find_faq_entries(["доставка", "оплата", "delivery", "pay"]),
            "topics": await shop.faq_topics(10),
        }
        return {"rows": rows, "found": found}
    finally:
        await db.close()


async def _run_on(
    setting: str,
    target: str | Path,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> list[Any]:
    """Import FIRST, the rejected file, then AGAIN; what was printed and stored after each."""
    monkeypatch.setenv(setting, str(target))
    seen: list[Any] = []
    for document in (FIRST, REJECTED, AGAIN):
        seen.append(await _import(document, tmp_path, capsys))
        seen.append(await _shop(target))
    monkeypatch.delenv(setting)
    return seen


async def test_import_data_gives_the_same_shop_on_both_backends(
    tmp_path: Path,
    pg_url: str,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    on_sqlite = await _run_on(
        "DATABASE_PATH", tmp_path / "shop.sqlite3", tmp_path, monkeypatch, capsys
    )
    on_postgres = await _run_on("DATABASE_URL", pg_url, tmp_path, monkeypatch, capsys)
    for step, (sqlite_seen, postgres_seen) in enumerate(zip(on_sqlite, on_postgres, strict=True)):
        assert _target_masked(postgres_seen) == _target_masked(sqlite_seen), step

    first, after_first, rejected, after_rejected, again, after_again = on_postgres
    assert first[0] == 0 and "orders: 3 inserted, 0 updated" in first[1]
    assert "return policies: 3 inserted, 0 updated" in first[1]
    assert "faq: 2 inserted, 0 updated, 0 removed" in first[1]
    assert len(after_first["rows"]["orders"]) == 3
    assert after_first["found"]["orders"][0].owner_telegram_id == 4_503_599_627_370_495

    assert rejected[0] == 1 and rejected[1] == ""
    assert "orders[1] (order_id '99999').order_id: must be exactly 4 digits" in rejected[2]
    assert "nothing was written" in rejected[2]
    assert after_rejected == after_first

    assert again[0] == 0 and "orders: 1 inserted, 1 updated" in again[1]
    assert "return policies: 0 inserted, 2 updated" in again[1]
    assert "faq: 0 inserted, 1 updated, 1 removed" in again[1]
    assert "general_return_policy removed" in again[1]
    order = after_again["found"]["orders"][0]
    assert order.status == "delivered" and order.owner_telegram_id is None
    assert after_again["found"]["text"] is None
    assert after_again["found"]["topics"] == ["Оплата"]


def _target_masked(seen: Any) -> Any:
    """What was printed, with the database the summary names (which differs) left out."""
    if not isinstance(seen, tuple) or len(seen) != 3 or not isinstance(seen[1], str):
        return seen
    code, out, err = seen
    return code, re.sub(r"^imported into .*? \(DATABASE_(PATH|URL)\): ", "", out), err
