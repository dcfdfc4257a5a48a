"""`python -m bot import-data FILE.json`: upsert orders, return policies and the FAQ, all or
nothing; `python -m bot remove-demo`: remove the demo shop's rows.

The shop's own data replaces the demo: an import removes every demo row (and says so), and
the demo is never seeded into that database again. The summary names the database written
(the SQLite file's absolute path, or the PostgreSQL host and database), and the orders
with requests to the shop's people nobody answered yet (actions on imported data: answer
them with ✅ Done / ✖ Refuse on their cards in Telegram).

Needs only DATABASE_PATH or DATABASE_URL (no bot token or API key), so a shop owner can
load data before the bot is configured. Exit status: 0 written; 1 the data is invalid (each
problem is printed, one line each, and nothing is written) or the database refused
the write; 2 the file cannot be read or is not JSON, or the database cannot be opened.

Whatever the file is, the result is one of these statuses and lines, never a traceback,
and memory stays bounded: only a regular file is read (a FIFO, a device or a folder is
refused before anything is read, and the open never blocks: services/input_files.py),
at most `MAX_FILE_BYTES` of it, and a file with more JSON objects and arrays than a
valid document can have is refused before it is parsed (parsing `[{},{},...]` costs
about 70 bytes per 3 bytes).
"""

from __future__ import annotations

import asyncio
import json
import sys
from pathlib import Path
from typing import Any

from bot.runtime.config import (
    DatabaseChoice,
    SettingsError,
    load_database_choice,
    load_shop_settings,
)
from bot.runtime.exit_codes import ExitCode
from services.input_files import InputFileError, read_text_file
from storage.actions import ActionRepository, ActionRequest
from storage.database import Database, DatabaseOpenError, is_database_error, open_database
from storage.migrations import MigrationError
from storage.shop import DemoRemoved, ImportCounts, ShopRepository
from tools.shop.import_document import (
    MAX_ALIASES,
    MAX_FAQ_ENTRIES,
    MAX_FILE_ITEMS,
    MAX_FILE_VARIANTS,
    MAX_ORDERS,
    MAX_PRODUCTS,
    MAX_RETURN_POLICIES,
    ShopDataError,
    plan_import,
)
from tools.shop.orders import FOUR_DIGITS, OrderNumberRule

MAX_FILE_BYTES = 10 * 1024 * 1024
# every '{' and '[' of a valid document: the document, its three lists, one object per
# record, an order's items list and total, its items, and one alias list per policy and
# FAQ entry (counted in the raw text, so also inside strings)
MAX_JSON_CONTAINERS = (
    4
    + 3 * MAX_ORDERS
    + MAX_FILE_ITEMS
    + 2 * MAX_RETURN_POLICIES
    + 2 * MAX_FAQ_ENTRIES
    # the products' list, one object and a variants list each, three per variant
    + 1
    + 2 * MAX_PRODUCTS
    + 3 * MAX_FILE_VARIANTS
)


def _error(text: str) -> None:
    print(f"error: {text}", file=sys.stderr)


def _summary(counts: ImportCounts, *, faq: bool, target: str) -> str:
    parts = [
        f"orders: {counts.orders_inserted} inserted, {counts.orders_updated} updated",
        f"return policies: {counts.policies_inserted} inserted, {counts.policies_updated} updated",
    ]
    if faq:  # only when the file had `faq`: it replaces the whole FAQ
        parts.append(
            f"faq: {counts.faq_inserted} inserted, {counts.faq_updated} updated, "
            f"{counts.faq_removed} removed"
        )
    if counts.products_replaced is not None:  # the file had `products`: the whole catalogue
        parts.append(f"products: {counts.products_replaced} (the catalogue replaced)")
    parts += [f"{key} set" for key in counts.texts_set]
    parts += [f"{key} removed" for key in counts.texts_cleared]
    if counts.demo_removed.total:
        parts.append(f"demo data removed ({_demo_rows(counts.demo_removed)})")
    return f"imported into {target}: " + "; ".join(parts)


def open_requests_line(requests: list[ActionRequest]) -> str | None:
    """The owner's line about requests nobody answered yet (None: there are none)."""
    if not requests:
        return None
    orders = ", ".join(dict.fromkeys(r.order_number for r in requests))
    return (
        f"open requests from customers, waiting for ✅ Done / ✖ Refuse in Telegram: "
        f"{len(requests)} (orders {orders})"
    )


def _demo_rows(removed: DemoRemoved) -> str:
    rows = f"{removed.orders} orders, {removed.policies} return policies, {removed.faq} FAQ entries"
    return rows + (f", {removed.products} products" if removed.products else "")


def describe_target(database: DatabaseChoice, *, new: bool = False) -> str:
    """Which database a command wrote, as a person can find it again: the SQLite file's
    absolute path, or the PostgreSQL host and database (never the password)."""
    if database.setting == "DATABASE_PATH":
        shown = f"{Path(database.target).resolve()} (DATABASE_PATH)"
        return f"a new database {shown}" if new else shown
    return f"{database.shown} (DATABASE_URL)"


def read_input(path: str) -> str:
    """The file's text: a regular UTF-8 file of at most MAX_FILE_BYTES, else
    `InputFileError` (services/input_files.py: never blocks, never reads more)."""
    return read_text_file(
        path,
        max_bytes=MAX_FILE_BYTES,
        expected="a JSON file",
        too_large_hint="one import takes; split it into several files",
    )


def parse_input(path: str, text: str) -> Any:
    """Decode the JSON text, or InputFileError with one line saying why not."""
    containers = text.count("{") + text.count("[")
    if containers > MAX_JSON_CONTAINERS:
        raise InputFileError(
            f"{path} has {containers} JSON objects and arrays ('{{' and '['), more than a "
            f"shop data file can have ({MAX_ORDERS} orders with {MAX_FILE_ITEMS} items, "
            f"{MAX_RETURN_POLICIES} return "
            f"policies and {MAX_FAQ_ENTRIES} FAQ entries with {MAX_ALIASES} aliases each); "
            "split it into several files"
        )
    try:
        return json.loads(text)
    except json.JSONDecodeError as exc:
        raise InputFileError(
            f"{path} is not valid JSON: line {exc.lineno} column {exc.colno}: {exc.msg}"
        ) from None
    except RecursionError:
        raise InputFileError(
            f"{path} is nested too deeply (a shop data file is 4 levels deep)"
        ) from None
    except ValueError:  # an integer of more than 4300 digits
        raise InputFileError(f"{path} has a number too long to read") from None


def _database_or_error() -> DatabaseChoice | None:
    """DATABASE_URL or DATABASE_PATH, or None after printing one line why not."""
    try:
        return load_database_choice()
    except SettingsError as exc:
        _error(str(exc))
    except (UnicodeDecodeError, OSError) as exc:
        from bot.programs.cli import env_file_problem

        _error(env_file_problem(exc))
    return None


async def _open(database: DatabaseChoice) -> tuple[Database | None, bool]:
    """The opened database (one connection does: each command is one transaction) and
    whether it is a new SQLite file; None after printing one line why not."""
    new = database.setting == "DATABASE_PATH" and not await asyncio.to_thread(
        Path(database.target).exists
    )
    try:
        return await open_database(database.target, pool_size=2), new
    except (DatabaseOpenError, MigrationError) as exc:
        _error(f"{database.setting} {database.shown}: {exc}")
        return None, new


def _number_rule_or_error() -> tuple[bool, OrderNumberRule]:
    """The shop's order-number rule (ORDER_NUMBER_PATTERN, else the demo's four digits);
    False after printing one line why not."""
    try:
        rule = load_shop_settings().order_number_rule()
    except SettingsError as exc:
        _error(str(exc))
        return False, FOUR_DIGITS
    except (UnicodeDecodeError, OSError):
        return True, FOUR_DIGITS  # the database choice reports an unreadable .env
    return True, rule or FOUR_DIGITS


async def run_import(path: str) -> ExitCode:
    """Validate the whole file, then write it in one transaction; return the exit status."""
    database = _database_or_error()
    if database is None:
        return ExitCode.CANNOT_START
    ok, number_rule = _number_rule_or_error()
    if not ok:
        return ExitCode.CANNOT_START
    try:
        text = await asyncio.to_thread(read_input, path)
        raw = parse_input(path, text)
    except InputFileError as exc:
        _error(str(exc))
        return ExitCode.CANNOT_START
    del text

    try:
        plan = plan_import(raw, number_rule)
    except ShopDataError as exc:
        for problem in exc.problems:
            _error(problem)
        shown = "" if exc.total == len(exc.problems) else f" (the first {len(exc.problems)} shown)"
        print(f"nothing was written: {exc.total} problem(s) in {path}{shown}", file=sys.stderr)
        return ExitCode.FAILED
    del raw

    db, new = await _open(database)
    if db is None:
        return ExitCode.CANNOT_START
    try:
        counts = await ShopRepository(db).import_shop_data(
            orders=plan.orders,
            policies=plan.policies,
            texts=plan.texts,
            faq=plan.faq,
            products=plan.products,
        )
        waiting = await ActionRepository(db).open_requests()
    except Exception as exc:
        if not (isinstance(exc, OverflowError) or is_database_error(exc)):
            raise
        _error(f"the database refused the import, nothing was written: {exc}")
        return ExitCode.FAILED
    finally:
        await db.close()
    target = describe_target(database, new=new)
    print(_summary(counts, faq=plan.faq is not None, target=target))
    line = open_requests_line(waiting)
    if line is not None:
        print(line)
    return ExitCode.OK


async def run_remove_demo() -> ExitCode:
    """`remove-demo`: delete the demo orders, return policies and FAQ, and never seed them
    again (SEED_DEMO_DATA then has nothing to do); the shop's own rows stay."""
    database = _database_or_error()
    if database is None:
        return ExitCode.CANNOT_START
    db, new = await _open(database)
    if db is None:
        return ExitCode.CANNOT_START
    try:
        removed = await ShopRepository(db).remove_demo()
    except Exception as exc:
        if not is_database_error(exc):
            raise
        _error(f"the database refused the removal, nothing was changed: {exc}")
        return ExitCode.FAILED
    finally:
        await db.close()
    target = describe_target(database, new=new)
    if removed.total:
        print(f"removed the demo data from {target}: {_demo_rows(removed)}")
    else:
        print(f"no demo data in {target}; it will not be seeded there again")
    return ExitCode.OK
