"""SQL for the shop's knowledge: sources, their documents, passages, the lexical index and
the stored vectors (storage/migrations/0020_knowledge.sql).

No rules here: what a passage is, how words are stemmed, what counts as relevant and how
rankings are fused are decided in tools/knowledge/. Every change of one source is one
transaction and moves the index's generation, so every searcher (on any instance)
reloads its cached vectors. The lexical half is each backend's own full-text search:
SQLite's FTS5 over the stems the caller computed, PostgreSQL's tsvector with its
'russian' configuration over the text; the statements differ by dialect only here.
"""

from __future__ import annotations

from collections.abc import Collection, Sequence
from dataclasses import dataclass

from storage.backend import Database, Row, Tx

KNOWLEDGE_LOCK = "knowledge"


@dataclass(frozen=True, slots=True)
class PassageDraft:
    """A passage to store: `stems` are its heading's and text's stems, space-separated."""

    heading: str
    text: str
    stems: str
    priority: int = 0
    embedding: bytes | None = None


@dataclass(frozen=True, slots=True)
class DocumentDraft:
    """A fetched page or file with its passages; `etag`/`last_modified` as the server sent."""

    location: str
    title: str
    content_hash: str
    passages: Sequence[PassageDraft]
    etag: str | None = None
    last_modified: str | None = None


@dataclass(frozen=True, slots=True)
class SourceCopy:
    """A source as stored, with its documents and their passages (vectors included)."""

    kind: str
    location: str
    title: str
    documents: tuple[DocumentDraft, ...]


@dataclass(frozen=True, slots=True)
class DocumentState:
    """What tells a re-sync whether a document changed."""

    location: str
    etag: str | None
    last_modified: str | None
    content_hash: str


@dataclass(frozen=True, slots=True)
class SourceRecord:
    id: int
    kind: str
    location: str
    title: str
    added_at: float
    synced_at: float | None
    error: str | None
    demo: bool
    documents: int
    passages: int


@dataclass(frozen=True, slots=True)
class PassageRecord:
    id: int
    heading: str
    text: str
    stems: str
    priority: int
    title: str  # its document's
    location: str  # its document's URL or file name
    source_kind: str


@dataclass(frozen=True, slots=True)
class IndexState:
    embedder: str  # "none" before anything was embedded
    dimension: int
    generation: int


@dataclass(frozen=True, slots=True)
class LexicalQuery:
    """A question for the lexical index: its content words as written (PostgreSQL stems
    them itself) and their stems (SQLite's FTS5 holds stems)."""

    words: Sequence[str]
    stems: Sequence[str]


def _fts5_match(query: LexicalQuery) -> str:
    # stems are letters and digits only; quoted, each is a plain term
    return " OR ".join(f'"{stem}"' for stem in query.stems)


def _websearch(query: LexicalQuery) -> str:
    return " or ".join(w.replace('"', " ") for w in query.words)


# per dialect: the ranked lexical search (best first) and its one parameter
_LEXICAL_SQL = {
    "sqlite": (
        "SELECT rowid AS id FROM knowledge_fts WHERE knowledge_fts MATCH ?"
        " ORDER BY bm25(knowledge_fts) LIMIT ?",
        _fts5_match,
    ),
    "postgres": (
        "SELECT id FROM knowledge_passages, websearch_to_tsquery('russian', ?) AS q"
        " WHERE lexemes @@ q ORDER BY ts_rank_cd(lexemes, q) DESC, id LIMIT ?",
        _websearch,
    ),
}

_SOURCE_COLUMNS = (
    "s.id, s.kind, s.location, s.title, s.added_at, s.synced_at, s.error, s.demo,"
    " (SELECT COUNT(*) FROM knowledge_documents d WHERE d.source_id = s.id) AS documents,"
    " (SELECT COUNT(*) FROM knowledge_passages p JOIN knowledge_documents d"
    "  ON d.id = p.document_id WHERE d.source_id = s.id) AS passages"
)


class KnowledgeRepository:
    """Reads and writes of the knowledge tables on one `Database`."""

    def __init__(self, db: Database) -> None:
        self._db = db
        self._lexical_sql, self._lexical_param = _LEXICAL_SQL[db.dialect.name]

    # -- sources ------------------------------------------------------------------

    async def ensure_source(
        self, kind: str, location: str, title: str, *, now: float, demo: bool = False
    ) -> int:
        """The id of the source at `location`, added (with no documents) if new."""
        async with self._db.transaction() as tx:
            await tx.lock(KNOWLEDGE_LOCK)
            row = await tx.fetch_one(
                "SELECT id FROM knowledge_sources WHERE location = ?", (location,)
            )
            if row is not None:
                return int(row[0])
            row = await tx.fetch_one(
                "INSERT INTO knowledge_sources(kind, location, title, added_at, demo)"
                " VALUES (?, ?, ?, ?, ?) RETURNING id",
                (kind, location, title, now, int(demo)),
            )
            assert row is not None
            return int(row[0])

    async def sources(self) -> list[SourceRecord]:
        rows = await self._db.fetch_all(
            f"SELECT {_SOURCE_COLUMNS} FROM knowledge_sources s ORDER BY s.id"
        )
        return [_source(row) for row in rows]

    async def source(self, location: str) -> SourceRecord | None:
        row = await self._db.fetch_one(
            f"SELECT {_SOURCE_COLUMNS} FROM knowledge_sources s WHERE s.location = ?",
            (location,),
        )
        return None if row is None else _source(row)

    async def remove_source(self, location: str) -> bool:
        """Forget a source with its documents and passages; False if there was none."""
        async with self._db.transaction() as tx:
            await tx.lock(KNOWLEDGE_LOCK)
            row = await tx.fetch_one(
                "SELECT id FROM knowledge_sources WHERE location = ?", (location,)
            )
            if row is None:
                return False
            await _delete_documents(tx, int(row[0]), keep=None)
            await tx.execute("DELETE FROM knowledge_sources WHERE id = ?", (int(row[0]),))
            await _moved(tx)
            return True

    async def remove_demo(self) -> int:
        """Remove the demo shop's sources (with the rest of the demo); how many."""
        rows = await self._db.fetch_all("SELECT location FROM knowledge_sources WHERE demo = 1")
        for row in rows:
            await self.remove_source(str(row[0]))
        return len(rows)

    async def record_error(self, source_id: int, error: str, *, now: float) -> None:
        """A sync that changed nothing: its one line, kept for `knowledge list`."""
        await self._db.write(
            "UPDATE knowledge_sources SET error = ?, synced_at = ? WHERE id = ?",
            (error, now, source_id),
        )

    # -- documents ----------------------------------------------------------------

    async def document_states(self, source_id: int) -> dict[str, DocumentState]:
        rows = await self._db.fetch_all(
            "SELECT location, etag, last_modified, content_hash FROM knowledge_documents"
            " WHERE source_id = ?",
            (source_id,),
        )
        return {
            str(r["location"]): DocumentState(
                str(r["location"]), r["etag"], r["last_modified"], str(r["content_hash"])
            )
            for r in rows
        }

    async def apply(
        self,
        source_id: int,
        changed: Sequence[DocumentDraft],
        *,
        now: float,
        keep: Collection[str] | None = None,
        title: str | None = None,
    ) -> None:
        """One source's sync in one transaction: each changed document replaces its
        earlier self; with `keep` (the locations found unchanged), every other document
        of the source is removed (gone from the site). `keep=None` removes nothing."""
        async with self._db.transaction() as tx:
            await tx.lock(KNOWLEDGE_LOCK)
            if keep is not None:
                await _delete_documents(tx, source_id, keep={*keep, *(d.location for d in changed)})
            for document in changed:
                await _replace_document(tx, source_id, document, now)
            await tx.execute(
                "UPDATE knowledge_sources SET synced_at = ?, error = NULL,"
                " title = COALESCE(?, title) WHERE id = ?",
                (now, title, source_id),
            )
            await _moved(tx)

    # -- search -------------------------------------------------------------------

    async def lexical(self, query: LexicalQuery, limit: int) -> list[int]:
        """Passage ids matching any of the query's words, best first (BM25 / ts_rank)."""
        if not query.stems or not query.words:
            return []
        rows = await self._db.fetch_all(self._lexical_sql, (self._lexical_param(query), limit))
        return [int(row[0]) for row in rows]

    async def passages(self, ids: Sequence[int]) -> dict[int, PassageRecord]:
        if not ids:
            return {}
        marks = ", ".join("?" for _ in ids)
        rows = await self._db.fetch_all(
            "SELECT p.id, p.heading, p.text, p.stems, p.priority, d.title, d.location, s.kind"
            " FROM knowledge_passages p JOIN knowledge_documents d ON d.id = p.document_id"
            f" JOIN knowledge_sources s ON s.id = d.source_id WHERE p.id IN ({marks})",
            tuple(ids),
        )
        return {
            int(r[0]): PassageRecord(
                int(r[0]),
                str(r[1]),
                str(r[2]),
                str(r[3]),
                int(r[4]),
                str(r[5]),
                str(r[6]),
                str(r[7]),
            )
            for r in rows
        }

    async def index_state(self) -> IndexState:
        row = await self._db.fetch_one(
            "SELECT embedder, dimension, generation FROM knowledge_index WHERE id = 1"
        )
        assert row is not None  # the migration inserts it
        return IndexState(str(row[0]), int(row[1]), int(row[2]))

    async def vectors(self) -> tuple[int, list[tuple[int, bytes, str]]]:
        """The generation and every stored vector with its passage's text, read in one
        transaction."""
        async with self._db.transaction() as tx:
            row = await tx.fetch_one("SELECT generation FROM knowledge_index WHERE id = 1")
            rows = await tx.fetch_all(
                "SELECT id, embedding, text FROM knowledge_passages"
                " WHERE embedding IS NOT NULL ORDER BY id"
            )
        assert row is not None
        return int(row[0]), [(int(r[0]), bytes(r[1]), str(r[2])) for r in rows]

    # -- embeddings -----------------------------------------------------------------

    async def use_embedder(self, name: str, dimension: int) -> bool:
        """Record the embedder of the stored vectors; when it is another one, the old
        vectors are dropped (to be embedded again). Whether they were dropped."""
        async with self._db.transaction() as tx:
            await tx.lock(KNOWLEDGE_LOCK)
            row = await tx.fetch_one("SELECT embedder, dimension FROM knowledge_index WHERE id = 1")
            if row is not None and (str(row[0]), int(row[1])) == (name, dimension):
                return False
            await tx.execute("UPDATE knowledge_passages SET embedding = NULL")
            await tx.execute(
                "UPDATE knowledge_index SET embedder = ?, dimension = ? WHERE id = 1",
                (name, dimension),
            )
            await _moved(tx)
            return True

    async def unembedded(self, limit: int) -> list[tuple[int, str, str]]:
        """Up to `limit` passages with no vector: id, heading, text."""
        rows = await self._db.fetch_all(
            "SELECT id, heading, text FROM knowledge_passages WHERE embedding IS NULL"
            " ORDER BY id LIMIT ?",
            (limit,),
        )
        return [(int(r[0]), str(r[1]), str(r[2])) for r in rows]

    async def set_embeddings(self, embedder: str, vectors: Sequence[tuple[int, bytes]]) -> int:
        """Store vectors made by `embedder`, unless the index moved to another meanwhile."""
        async with self._db.transaction() as tx:
            await tx.lock(KNOWLEDGE_LOCK)
            row = await tx.fetch_one("SELECT embedder FROM knowledge_index WHERE id = 1")
            if row is None or str(row[0]) != embedder:
                return 0
            await tx.executemany(
                "UPDATE knowledge_passages SET embedding = ? WHERE id = ?",
                [(vector, passage_id) for passage_id, vector in vectors],
            )
            await _moved(tx)
            return len(vectors)

    async def counts(self) -> tuple[int, int]:
        """Passages in all, and how many have a vector."""
        row = await self._db.fetch_one("SELECT COUNT(*), COUNT(embedding) FROM knowledge_passages")
        assert row is not None
        return int(row[0]), int(row[1])

    async def source_copies(self, *, leave_out: Collection[str]) -> list[SourceCopy]:
        """Every source not of a kind in `leave_out` and not the demo's, with its
        documents and passages as stored (stems, priority, vector), oldest first, read
        in one transaction: to load into another database (a simulation's copy)."""
        async with self._db.transaction() as tx:
            sources = await tx.fetch_all(
                "SELECT id, kind, location, title FROM knowledge_sources WHERE demo = 0 ORDER BY id"
            )
            documents = await tx.fetch_all(
                "SELECT d.id, d.source_id, d.location, d.title, d.etag, d.last_modified,"
                " d.content_hash FROM knowledge_documents d"
                " JOIN knowledge_sources s ON s.id = d.source_id WHERE s.demo = 0 ORDER BY d.id"
            )
            passages = await tx.fetch_all(
                "SELECT p.document_id, p.heading, p.text, p.stems, p.priority, p.embedding"
                " FROM knowledge_passages p JOIN knowledge_documents d ON d.id = p.document_id"
                " JOIN knowledge_sources s ON s.id = d.source_id WHERE s.demo = 0"
                " ORDER BY p.document_id, p.position"
            )
        wanted = {int(r[0]): r for r in sources if str(r[1]) not in leave_out}
        drafts: dict[int, list[PassageDraft]] = {}
        for r in passages:
            vector = None if r[5] is None else bytes(r[5])
            drafts.setdefault(int(r[0]), []).append(
                PassageDraft(str(r[1]), str(r[2]), str(r[3]), int(r[4]), vector)
            )
        by_source: dict[int, list[DocumentDraft]] = {}
        for r in documents:
            if int(r[1]) in wanted:
                by_source.setdefault(int(r[1]), []).append(
                    DocumentDraft(
                        location=str(r[2]),
                        title=str(r[3]),
                        content_hash=str(r[6]),
                        passages=tuple(drafts.get(int(r[0]), ())),
                        etag=r[4],
                        last_modified=r[5],
                    )
                )
        return [
            SourceCopy(str(r[1]), str(r[2]), str(r[3]), tuple(by_source.get(source_id, ())))
            for source_id, r in wanted.items()
        ]


def _source(row: Row) -> SourceRecord:
    return SourceRecord(
        id=int(row["id"]),
        kind=str(row["kind"]),
        location=str(row["location"]),
        title=str(row["title"]),
        added_at=float(row["added_at"]),
        synced_at=None if row["synced_at"] is None else float(row["synced_at"]),
        error=row["error"],
        demo=bool(row["demo"]),
        documents=int(row["documents"]),
        passages=int(row["passages"]),
    )


async def _moved(tx: Tx) -> None:
    await tx.execute("UPDATE knowledge_index SET generation = generation + 1 WHERE id = 1")


async def _delete_documents(tx: Tx, source_id: int, *, keep: Collection[str] | None) -> None:
    """Delete the source's documents (all, or those not in `keep`) with their passages
    (one by one through the FTS trigger)."""
    rows = await tx.fetch_all(
        "SELECT id, location FROM knowledge_documents WHERE source_id = ?", (source_id,)
    )
    for row in rows:
        if keep is not None and str(row[1]) in keep:
            continue
        await tx.execute("DELETE FROM knowledge_passages WHERE document_id = ?", (int(row[0]),))
        await tx.execute("DELETE FROM knowledge_documents WHERE id = ?", (int(row[0]),))


async def _replace_document(tx: Tx, source_id: int, document: DocumentDraft, now: float) -> None:
    old = await tx.fetch_one(
        "SELECT id FROM knowledge_documents WHERE source_id = ? AND location = ?",
        (source_id, document.location),
    )
    if old is not None:
        await tx.execute("DELETE FROM knowledge_passages WHERE document_id = ?", (int(old[0]),))
        await tx.execute("DELETE FROM knowledge_documents WHERE id = ?", (int(old[0]),))
    row = await tx.fetch_one(
        "INSERT INTO knowledge_documents(source_id, location, title, etag, last_modified,"
        " content_hash, fetched_at) VALUES (?, ?, ?, ?, ?, ?, ?) RETURNING id",
        (
            source_id,
            document.location,
            document.title,
            document.etag,
            document.last_modified,
            document.content_hash,
            now,
        ),
    )
    assert row is not None
    document_id = int(row[0])
    await tx.executemany(
        "INSERT INTO knowledge_passages(document_id, position, heading, text, stems, priority,"
        " embedding) VALUES (?, ?, ?, ?, ?, ?, ?)",
        [
            (document_id, position, p.heading, p.text, p.stems, p.priority, p.embedding)
            for position, p in enumerate(document.passages)
        ],
    )
