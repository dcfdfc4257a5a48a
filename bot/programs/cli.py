"""Command line: `support-bot` runs the bot; `support-bot import-data FILE.json` loads shop data;
`support-bot remove-demo` removes the demo shop's data; `support-bot knowledge …` teaches the
bot the shop's pages and files (bot/programs/knowledge.py); `support-bot texts` prints the fixed
texts customers will read (after SHOP_NAME and TEXTS_FILE); `support-bot simulate` runs
test conversations against the model (bot/programs/simulate.py).

Configuration problems end the process with status 2 and one line on stderr that names
the setting — never a traceback and never a secret. A name in `.env` that is no setting
but looks like one (ADMIN_ID for ADMIN_IDS) gets a warning line naming the closest real
one, and the command goes on.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import sys
from collections.abc import Callable

from bot.programs.export import add_parser as add_export_parser
from bot.programs.knowledge import add_parser as add_knowledge_parser
from bot.programs.setting_names import unknown_setting_warnings
from bot.programs.simulate import add_parser as add_simulate_parser
from bot.runtime.config import (
    Settings,
    SettingsError,
    ShopSettings,
    load_settings,
    load_shop_settings,
)
from bot.runtime.exit_codes import ExitCode
from bot.runtime.feature_catalog import words_of
from bot.telegram.features.registry import FEATURES
from bot.telegram.texts import TextsError, TextTable, describe_table, load_text_table


def _parse_args(argv: list[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(prog="support-bot", description=__doc__)
    sub = parser.add_subparsers(dest="command")
    sub.add_parser("run", help="run the bot (the default)")
    importer = sub.add_parser(
        "import-data",
        help="load the shop's orders, return policies and FAQ from JSON (replaces the demo)",
    )
    importer.add_argument("file", help="path to the JSON file")
    sub.add_parser("remove-demo", help="remove the demo orders, return policies and FAQ")
    sub.add_parser("texts", help="print the fixed texts customers will read, per language")
    add_simulate_parser(sub)
    add_export_parser(sub)
    add_knowledge_parser(sub)
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


def _texts_or_exit(shop: ShopSettings) -> TextTable:
    """The effective texts, or one line naming TEXTS_FILE (or SHOP_NAME) and status 2."""
    try:
        return load_text_table(
            texts_file=shop.texts_file,
            shop_name=shop.shop_name,
            default_language=shop.default_language,
            features=words_of(FEATURES),
        )
    except TextsError as exc:
        print(f"error: invalid settings: {exc}", file=sys.stderr)
    raise SystemExit(ExitCode.CANNOT_START)


def print_texts() -> int:
    """`texts`: what customers will read; needs no token or API key."""
    try:
        shop = load_shop_settings()
    except SettingsError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return ExitCode.CANNOT_START
    except (UnicodeDecodeError, OSError) as exc:
        print(f"error: {env_file_problem(exc)}", file=sys.stderr)
        return ExitCode.CANNOT_START
    text = describe_table(_texts_or_exit(shop))
    try:  # UTF-8 whatever the locale: the texts are Russian and English
        sys.stdout.buffer.write(text.encode("utf-8"))
        sys.stdout.flush()
    except BrokenPipeError:  # `texts | head`: the reader has what it wanted
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
    return ExitCode.OK


def event_loop_factory(use_uvloop: bool) -> Callable[[], asyncio.AbstractEventLoop] | None:
    """uvloop's loop when wanted and installed (docs/benchmarks.md: less CPU per turn in
    both modes), else None: asyncio's own."""
    if not use_uvloop:
        return None
    try:
        import uvloop
    except ImportError:  # not installable here (e.g. Windows): asyncio's loop does the job
        return None
    return uvloop.new_event_loop


def warn_about_unknown_settings() -> None:
    """One stderr line per name in `.env` (or misspelt in the environment) that is no
    setting of the bot but looks like one; never stops the command."""
    for line in unknown_setting_warnings(environ=os.environ):
        print(line, file=sys.stderr)


def main(argv: list[str] | None = None) -> None:
    args = _parse_args(argv)
    warn_about_unknown_settings()
    if args.command == "import-data":
        from bot.programs.data_import import run_import

        raise SystemExit(asyncio.run(run_import(args.file)))
    if args.command == "remove-demo":
        from bot.programs.data_import import run_remove_demo

        raise SystemExit(asyncio.run(run_remove_demo()))
    if args.command == "texts":
        raise SystemExit(print_texts())
    if args.command == "export":
        from bot.programs.export import export

        raise SystemExit(export(args))
    if args.command == "knowledge":
        from bot.programs.knowledge import knowledge_command

        raise SystemExit(asyncio.run(knowledge_command(args)))
    if args.command == "simulate":
        from bot.programs.simulate import simulate

        raise SystemExit(simulate(args))
    settings = _settings_or_exit()
    texts = _texts_or_exit(settings)
    from bot.telegram.app import run

    try:
        with asyncio.Runner(loop_factory=event_loop_factory(settings.uvloop_enabled)) as runner:
            runner.run(run(settings, texts))
    except KeyboardInterrupt:
        pass
