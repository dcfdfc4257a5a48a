"""Command line: `support-bot` runs the bot; `support-bot import-data FILE.json` loads shop data.

Configuration problems end the process with status 2 and one line on stderr that names
the setting — never a traceback and never a secret.
"""

from __future__ import annotations

import argparse
import asyncio
import sys

from bot.config import Settings, SettingsError, load_settings
from bot.exit_codes import ExitCode


def _parse_args(argv: list[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(prog="support-bot", description=__doc__)
    sub = parser.add_subparsers(dest="command")
    sub.add_parser("run", help="run the bot (the default)")
    importer = sub.add_parser("import-data", help="upsert orders and return policies from JSON")
    importer.add_argument("file", help="path to the JSON file")
    return parser.parse_args(argv)


def env_file_problem(exc: UnicodeDecodeError | OSError) -> str:
    """One line for a `.env` file that cannot be read (its content is never quoted)."""
    if isinstance(exc, UnicodeDecodeError):
        return f".env cannot be read: it is not UTF-8 text (byte {exc.start})"
    return f".env cannot be read: {exc.strerror or exc}"


def _settings_or_exit() -> Settings:
    try:
        return load_settings()
    except SettingsError as exc:
        print(f"error: {exc}", file=sys.stderr)
    except (UnicodeDecodeError, OSError) as exc:
        print(f"error: {env_file_problem(exc)}", file=sys.stderr)
    raise SystemExit(ExitCode.CANNOT_START)


def main(argv: list[str] | None = None) -> None:
    args = _parse_args(argv)
    if args.command == "import-data":
        from bot.data_import import run_import

        raise SystemExit(asyncio.run(run_import(args.file)))
    settings = _settings_or_exit()
    from bot.app import run

    try:
        asyncio.run(run(settings))
    except KeyboardInterrupt:
        pass
