"""`support-bot export --since DATE`: the conversations as JSON Lines (services/export.py).

Needs only DATABASE_PATH / DATABASE_URL. Writes to `--output FILE` (created or
replaced) or to the standard output; masked unless `--unmasked`. A bad date is one line
and exit 2.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import sys
from datetime import UTC, date, datetime

from bot.programs.data_import import _database_or_error, _open
from bot.runtime.exit_codes import ExitCode
from services.export import conversations
from storage.outcomes import OutcomeRepository


def add_parser(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    parser = sub.add_parser(
        "export", help="write the conversations as JSON Lines (customer data masked)"
    )
    parser.add_argument(
        "--since", required=True, help="the first day, YYYY-MM-DD (UTC), e.g. 2026-11-01"
    )
    parser.add_argument("--output", help="the file to write (default: standard output)")
    parser.add_argument(
        "--unmasked",
        action="store_true",
        help="write phones, e-mails, order numbers, names and chat ids as they are",
    )
    parser.add_argument(
        "--language", choices=("ru", "en"), default="en", help="the words of the masks"
    )


def since_of(text: str) -> float | None:
    """Midnight UTC of a YYYY-MM-DD date, or None for anything else."""
    try:
        day = date.fromisoformat(text.strip())
    except ValueError:
        return None
    return datetime(day.year, day.month, day.day, tzinfo=UTC).timestamp()


async def run_export(args: argparse.Namespace) -> int:
    since = since_of(args.since)
    if since is None:
        print(f"error: --since {args.since!r} is not a date like 2026-11-01", file=sys.stderr)
        return ExitCode.CANNOT_START
    database = _database_or_error()
    if database is None:
        return ExitCode.CANNOT_START
    db, _new = await _open(database)
    if db is None:
        return ExitCode.CANNOT_START
    try:
        lines = [
            json.dumps(record, ensure_ascii=False) + "\n"
            async for record in conversations(
                OutcomeRepository(db), since=since, masked=not args.unmasked, language=args.language
            )
        ]
    finally:
        await db.close()
    try:
        await asyncio.to_thread(_write, args.output, lines)
    except OSError as exc:
        print(f"error: cannot write {args.output}: {exc.strerror or exc}", file=sys.stderr)
        return ExitCode.FAILED
    written = len(lines)
    where = "standard output" if args.output is None else args.output
    shown = "unmasked" if args.unmasked else "masked"
    print(f"exported {written} conversations ({shown}) to {where}", file=sys.stderr)
    return ExitCode.OK


def _write(path: str | None, lines: list[str]) -> None:
    if path is None:
        sys.stdout.writelines(lines)
        sys.stdout.flush()
        return
    with open(path, "w", encoding="utf-8") as out:
        out.writelines(lines)


def export(args: argparse.Namespace) -> int:
    return asyncio.run(run_export(args))
