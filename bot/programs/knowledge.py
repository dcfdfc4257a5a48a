"""`support-bot knowledge …`: teach the bot the shop's pages and files, from the shell.

    knowledge add SOURCE…     a page URL, a sitemap URL, a site's root, or a file
                              (PDF, DOCX, Markdown, text, HTML)
    knowledge list            sources, documents, passages, last sync, the last error
    knowledge remove SOURCE   forget a source and everything read from it
    knowledge sync            fetch every source again (unchanged pages are skipped,
                              pages gone from the site removed)
    knowledge search "…"      what a customer's question finds, with the scores

Needs only the database settings (and the knowledge ones: docs/knowledge.md), no bot
token. Long work shows a progress line on stderr. Bad input is one line and leaves the
index as it was; exit status 0 when every source worked, 1 when one did not, 2 when the
settings or the database cannot be used.
"""

from __future__ import annotations

import argparse
import sys
import time
from collections.abc import Sequence
from datetime import UTC, datetime

from bot.runtime.config import SettingsError, load_feature_settings
from bot.runtime.exit_codes import ExitCode
from bot.telegram.features.knowledge import KnowledgeSettings, build_knowledge
from storage.database import Database
from storage.shop import ShopRepository
from tools.knowledge.base import KnowledgeBase, Passage
from tools.knowledge.documents import HEADING_SEPARATOR
from tools.knowledge.embedder import EmbedderError
from tools.knowledge.fetch import FetchLimits
from tools.knowledge.shop_sources import sync_shop_sources
from tools.knowledge.sync import KnowledgeSync, SyncReport

SEARCH_SHOWN = 5


def add_parser(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    parser = sub.add_parser(
        "knowledge",
        help="teach the bot the shop's pages and files (add, list, remove, sync, search)",
    )
    commands = parser.add_subparsers(dest="knowledge_command", required=True)
    add = commands.add_parser("add", help="add pages, sites, sitemaps or files and read them now")
    add.add_argument("sources", nargs="+", metavar="SOURCE", help="a URL or a file path")
    commands.add_parser("list", help="the sources, their passages, last sync and errors")
    remove = commands.add_parser("remove", help="forget a source")
    remove.add_argument("source", metavar="SOURCE")
    commands.add_parser("sync", help="fetch every source again; unchanged content is skipped")
    search = commands.add_parser("search", help="what a question finds, with the scores")
    search.add_argument("question")


class ProgressLine:
    """One line on stderr, rewritten in place on a terminal (a new line per step else)."""

    def __init__(self) -> None:
        self._tty = sys.stderr.isatty()
        self._last = 0.0

    def __call__(self, done: int, total: int, what: str) -> None:
        now = time.monotonic()
        if self._tty and now - self._last < 0.1 and done < total:
            return
        self._last = now
        width = 24
        filled = width * done // max(total, 1)
        line = f"[{'#' * filled}{'.' * (width - filled)}] {done}/{total} {what[:60]}"
        if self._tty:
            print(f"\r\x1b[K{line}", end="", file=sys.stderr, flush=True)
        else:
            print(line, file=sys.stderr, flush=True)

    def end(self) -> None:
        if self._tty:
            print("\r\x1b[K", end="", file=sys.stderr, flush=True)


def report_line(report: SyncReport) -> str:
    if report.error is not None:
        return f"error: {report.error}"
    parts = [
        f"{report.added} added",
        f"{report.updated} updated",
        f"{report.unchanged} unchanged",
        f"{report.removed} removed",
        f"{report.passages} passages indexed",
    ]
    line = f"{report.title or report.location}: " + ", ".join(parts)
    for location, why in report.skipped[:10]:
        line += f"\n  skipped {location}: {why}"
    if len(report.skipped) > 10:
        line += f"\n  … and {len(report.skipped) - 10} more skipped"
    return line


def _when(stamp: float | None) -> str:
    if stamp is None:
        return "never"
    return datetime.fromtimestamp(stamp, UTC).strftime("%Y-%m-%d %H:%M UTC")


async def list_sources(knowledge: KnowledgeBase) -> int:
    sources = await knowledge.repo.sources()
    if not sources:
        print("no knowledge yet: add a page, a site or a file with `support-bot knowledge add`")
        return ExitCode.OK
    for source in sources:
        line = (
            f"{source.location}  [{source.kind}] {source.documents} documents,"
            f" {source.passages} passages, synced {_when(source.synced_at)}"
        )
        if source.title and source.title != source.location:
            line += f"  «{source.title}»"
        print(line)
        if source.error:
            print(f"  last error: {source.error}")
    total, embedded = await knowledge.repo.counts()
    if total and embedded < total and knowledge.embedder is not None:
        print(f"{total - embedded} of {total} passages not embedded yet (searched by words)")
    return ExitCode.OK


def _hit_line(rank: int, hit: Passage) -> str:
    where = hit.link or hit.file_name or "(the shop's own answer)"
    similarity = "-" if hit.similarity is None else f"{hit.similarity:.3f}"
    mark = "" if hit.relevant else "  (not relevant)"
    heading = hit.heading.removeprefix(f"{hit.title}{HEADING_SEPARATOR}")
    head = f"{HEADING_SEPARATOR}{heading}" if heading and heading != hit.title else ""
    text = " ".join(hit.text.split())
    return (
        f"{rank}. {hit.title}{head}  {where}\n"
        f"   score {hit.score:.4f}  similarity {similarity}  words {hit.word_share:.2f}{mark}\n"
        f"   {text[:200]}{'…' if len(text) > 200 else ''}"
    )


async def search(knowledge: KnowledgeBase, db: Database, question: str) -> int:
    await sync_shop_sources(knowledge, ShopRepository(db), now=time.time())
    await knowledge.embed_missing()
    hits = await knowledge.search(question, limit=SEARCH_SHOWN, everything=True)
    if not any(h.relevant for h in hits):
        print("nothing relevant: the bot would say it does not know and give the contacts")
    for rank, hit in enumerate(hits, start=1):
        print(_hit_line(rank, hit))
    return ExitCode.OK


async def run_knowledge(args: argparse.Namespace, db: Database) -> int:
    try:
        conf = load_feature_settings(KnowledgeSettings)
    except SettingsError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return ExitCode.CANNOT_START
    knowledge = build_knowledge(db, conf)
    limits = FetchLimits(
        max_bytes=conf.knowledge_max_bytes,
        timeout_s=conf.knowledge_fetch_timeout_s,
        allow_private=conf.knowledge_allow_private_addresses,
    )
    sync = KnowledgeSync(knowledge, limits, max_pages=conf.knowledge_max_pages)
    command = args.knowledge_command
    try:
        if command == "list":
            return await list_sources(knowledge)
        if command == "search":
            return await search(knowledge, db, args.question)
        if command == "remove":
            if await sync.remove(args.source):
                print(f"removed {args.source}")
                return ExitCode.OK
            print(f"error: {args.source} is not a source (see `knowledge list`)", file=sys.stderr)
            return ExitCode.FAILED
        return await _add_or_sync(sync, knowledge, args.sources if command == "add" else None)
    except EmbedderError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return ExitCode.FAILED


async def _add_or_sync(
    sync: KnowledgeSync, knowledge: KnowledgeBase, sources: Sequence[str] | None
) -> int:
    progress = ProgressLine()
    if sources is None:
        reports = await sync.sync(progress)
        if not reports:
            print("no pages or files to sync: add some with `support-bot knowledge add`")
    else:
        reports = [await sync.add(source, progress) for source in sources]
    await knowledge.embed_missing(lambda done, total: progress(done, total, "embedding"))
    progress.end()
    failed = False
    for report in reports:
        line = report_line(report)
        failed = failed or report.error is not None
        print(line, file=sys.stderr if report.error else sys.stdout)
    return ExitCode.FAILED if failed else ExitCode.OK


async def knowledge_command(args: argparse.Namespace) -> int:
    """The command with the database of DATABASE_PATH / DATABASE_URL opened and closed."""
    from bot.programs.data_import import _database_or_error, _open

    database = _database_or_error()
    if database is None:
        return ExitCode.CANNOT_START
    db, _new = await _open(database)
    if db is None:
        return ExitCode.CANNOT_START
    try:
        return await run_knowledge(args, db)
    finally:
        await db.close()
