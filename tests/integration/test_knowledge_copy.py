"""The owner's knowledge copied into a simulation's throwaway database, on both backends:
the pages, files and own answers come with their passages, and with their stored vectors
when the run's embedder made them (nothing fetched or embedded again); the FAQ and the
demo's pages stay behind (each run indexes its own copy of the shop); the bot's
database is only read.

A counting embedder stands in for the model here, so what is embedded again is
observable; the real bundled model's copy is the simulate command's test
(tests/integration/test_simulate_cli.py).
"""

from __future__ import annotations

import hashlib
from collections.abc import Sequence
from pathlib import Path

import numpy as np

from services.simulation.own_shop import read_own_knowledge
from storage.database import Database, open_database
from storage.knowledge import KnowledgeRepository
from storage.shop import ShopRepository
from tests.fakes.help_site import HelpSite
from tools.knowledge.base import KnowledgeBase
from tools.knowledge.embedder import Vectors, normalised
from tools.knowledge.fetch import FetchLimits
from tools.knowledge.shop_sources import sync_shop_sources
from tools.knowledge.sync import KnowledgeSync
from tools.shop.demo import seed_demo_shop

LOCAL = FetchLimits(max_bytes=2_000_000, timeout_s=5.0, allow_private=True)


class CountingEmbedder:
    """Words hashed into 64 dimensions (texts sharing words are near); counts what it
    is asked to embed."""

    def __init__(self, name: str) -> None:
        self._name = name
        self.passages = 0

    @property
    def name(self) -> str:
        return self._name

    @property
    def dimension(self) -> int:
        return 64

    @property
    def min_similarity(self) -> float:
        return 0.3

    def _vectors(self, texts: Sequence[str]) -> Vectors:
        out = np.zeros((len(texts), 64), dtype=np.float32)
        for row, text in enumerate(texts):
            for word in text.lower().split():
                out[row, hashlib.sha256(word.encode()).digest()[0] % 64] += 1.0
        return normalised(out)

    async def embed_passages(self, texts: Sequence[str]) -> Vectors:
        self.passages += len(texts)
        return self._vectors(texts)

    async def embed_query(self, text: str) -> Vectors:
        row: Vectors = self._vectors([text])[0]
        return row


async def owners_knowledge(db: Database, help_site: HelpSite, tmp_path: Path) -> None:
    """A page, a file, an answer of the owner's own, the demo shop's FAQ and pages."""
    await seed_demo_shop(ShopRepository(db))
    knowledge = KnowledgeBase(KnowledgeRepository(db), CountingEmbedder("words-64"))
    await sync_shop_sources(knowledge, ShopRepository(db), now=1000.0)
    sync = KnowledgeSync(knowledge, LOCAL, max_pages=10)
    assert (await sync.add(help_site.url("/vozvrat.html"))).error is None
    note = tmp_path / "engraving.md"
    note.write_text(
        "# Гравировка\n\nГравируем кружки и термосы: 300 ₽, готово за 2 дня.\n", encoding="utf-8"
    )
    assert (await sync.add(str(note))).error is None
    note.unlink()  # the copy never reads it again
    await knowledge.add_entry("Подарочная упаковка", "Упаковываем в подарочную коробку бесплатно.")


async def snapshot(db: Database) -> list[tuple[object, ...]]:
    rows = await db.fetch_all(
        "SELECT s.kind, d.location, p.text, p.embedding FROM knowledge_passages p"
        " JOIN knowledge_documents d ON d.id = p.document_id"
        " JOIN knowledge_sources s ON s.id = d.source_id ORDER BY d.location, p.position"
    )
    index = await db.fetch_one("SELECT embedder, generation FROM knowledge_index")
    return [tuple(r) for r in rows] + [tuple(index or ())]


async def test_the_owners_pages_files_and_answers_are_copied_with_their_vectors(
    db: Database, help_site: HelpSite, tmp_path: Path
) -> None:
    await owners_knowledge(db, help_site, tmp_path)
    before = await snapshot(db)
    fetched = len(help_site.requests)

    own = await read_own_knowledge(KnowledgeRepository(db))
    assert sorted(s.kind for s in own.sources) == ["entries", "file", "page"]
    assert own.describe() == ", 1 answer(s) of your own, 1 page(s), 1 file(s) in the knowledge"

    run = await open_database(tmp_path / "run.sqlite3")
    try:
        embedder = CountingEmbedder("words-64")
        copy = KnowledgeBase(KnowledgeRepository(run), embedder)
        assert await copy.copy_in(own.sources, own.index) is True
        assert embedder.passages == 0  # the stored vectors were kept
        total, embedded = await copy.repo.counts()
        assert total == embedded == sum(len(d.passages) for s in own.sources for d in s.documents)
        engraving = await copy.search("сколько стоит гравировка кружки")
        assert any("300 ₽" in hit.text for hit in engraving)
        gift = await copy.search("подарочная коробка")
        assert gift and gift[0].priority == 1  # an own answer keeps its weight
        # the FAQ and the demo's pages are the run's own shop's, not copied
        kinds = {str(r[0]) for r in await run.fetch_all("SELECT kind FROM knowledge_sources")}
        assert kinds == {"entries", "file", "page"}
    finally:
        await run.close()
    assert len(help_site.requests) == fetched  # nothing fetched again
    assert await snapshot(db) == before  # the bot's knowledge only read


async def test_vectors_of_another_embedder_are_made_again_in_the_copy(
    db: Database, help_site: HelpSite, tmp_path: Path
) -> None:
    """As the bot does when its embedder changed: the passages come without the other
    model's vectors and are embedded by the run's own."""
    await owners_knowledge(db, help_site, tmp_path)
    own = await read_own_knowledge(KnowledgeRepository(db))
    run = await open_database(tmp_path / "run.sqlite3")
    try:
        embedder = CountingEmbedder("another-model")
        copy = KnowledgeBase(KnowledgeRepository(run), embedder)
        assert await copy.copy_in(own.sources, own.index) is False
        total, embedded = await copy.repo.counts()
        assert embedder.passages == total == embedded
        assert (await copy.repo.index_state()).embedder == "another-model"
        hits = await copy.search("гравировка кружки")
        assert any("300 ₽" in hit.text for hit in hits)
    finally:
        await run.close()
