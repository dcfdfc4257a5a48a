"""`python -m bot import-data FILE.json`: upsert orders and return policies, all or nothing.

Needs only DATABASE_PATH (no bot token or API key), so a shop owner can load data
before the bot is configured. Exit status: 0 written; 1 the data is invalid (every
problem is printed, one line each, and nothing is written) or the database refused
the write; 2 the file cannot be read or is not JSON, or DATABASE_PATH is invalid.
"""

from __future__ import annotations

import asyncio
import json
import sqlite3
import sys
from pathlib import Path

from bot.config import SettingsError, load_database_path
from bot.exit_codes import ExitCode
from storage.database import Database
from storage.migrations import MigrationError
from storage.shop import ImportCounts, ShopRepository
from tools.shop.import_document import ShopDataError, plan_import


def _error(text: str) -> None:
    print(f"error: {text}", file=sys.stderr)


def _summary(counts: ImportCounts) -> str:
    parts = [
        f"orders: {counts.orders_inserted} inserted, {counts.orders_updated} updated",
        f"return policies: {counts.policies_inserted} inserted, {counts.policies_updated} updated",
    ]
    parts += [f"{key} set" for key in counts.texts_set]
    parts += [f"{key} removed" for key in counts.texts_cleared]
    return "imported " + "; ".join(parts)


async def run_import(path: str) -> ExitCode:
    """Validate the whole file, then write it in one transaction; return the exit status."""
    try:
        database_path = load_database_path()
    except SettingsError as exc:
        _error(str(exc))
        return ExitCode.CANNOT_START
    try:
        text = await asyncio.to_thread(Path(path).read_text, encoding="utf-8-sig")
    except OSError as exc:
        _error(f"cannot read {path}: {exc.strerror or exc}")
        return ExitCode.CANNOT_START
    except UnicodeDecodeError:
        _error(f"{path} is not UTF-8 text")
        return ExitCode.CANNOT_START
    try:
        raw = json.loads(text)
    except json.JSONDecodeError as exc:
        _error(f"{path} is not valid JSON: line {exc.lineno} column {exc.colno}: {exc.msg}")
        return ExitCode.CANNOT_START

    try:
        plan = plan_import(raw)
    except ShopDataError as exc:
        for problem in exc.problems:
            _error(problem)
        print(f"nothing was written: {len(exc.problems)} problem(s) in {path}", file=sys.stderr)
        return ExitCode.FAILED

    try:
        db = await Database.open(database_path)
    except (OSError, sqlite3.Error, MigrationError) as exc:
        _error(f"cannot open the database {database_path}: {exc}")
        return ExitCode.FAILED
    try:
        counts = await ShopRepository(db).import_shop_data(
            orders=plan.orders, policies=plan.policies, texts=plan.texts
        )
    except sqlite3.Error as exc:
        _error(f"the database refused the import, nothing was written: {exc}")
        return ExitCode.FAILED
    finally:
        await db.close()
    print(_summary(counts))
    return ExitCode.OK
