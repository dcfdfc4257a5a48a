"""`KnowledgeBase`: add passages and search them, by words and by meaning, fused by rank.

Search: the lexical index (stems, BM25) and the vectors (cosine, plain numpy over a
matrix cached in memory and reloaded when the stored generation moves) each give their
best candidates; reciprocal-rank fusion orders the union. A candidate is kept only when
it is about the question: its cosine reaches the embedder's calibrated floor, or it holds
most of the question's content words. Nothing kept is the honest "nothing relevant".
The shop's own exact answers (FAQ entries, entries added one at a time) weigh more.

Without an embedder (or while the stored vectors are another embedder's) the lexical
half works alone.
"""

from __future__ import annotations

import asyncio
import hashlib
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, replace

import numpy as np
import numpy.typing as npt

from storage.knowledge import (
    DocumentDraft,
    IndexState,
    KnowledgeRepository,
    LexicalQuery,
    PassageDraft,
    PassageRecord,
    SourceCopy,
)
from tools.knowledge.embedder import Embedder, EmbedderError, Vectors, similarities
from tools.knowledge.fusion import reciprocal_rank_fusion
from tools.knowledge.text import query_stems, query_words, script_of, stems

CANDIDATES = 20  # from each half, before fusion
# a passage holding at least this share of the question's content words is about it
# (lexically), e.g. 1 of 1, 1 of 2, 2 of 3, 2 of 4
MIN_WORD_SHARE = 0.5
# with vectors, a passage found by words joins the fusion only holding this share of the
# question's words (measured on the evaluation help centre: docs/knowledge.md)
LEXICAL_FUSION_SHARE = 0.67
# a passage is about the question when its cosine is within this of the best one:
# the larger of MIN_MARGIN and MARGIN_SHARE of the best cosine's lead over the floor
MIN_MARGIN = 0.03
MARGIN_SHARE = 0.5
# the shop's own exact answers (FAQ, entries) count from this much below the floor: an
# admin's one-tap answer is found by a paraphrase at 0.80 (tests/integration/test_gaps_meaning.py)
OWN_ANSWERS_FLOOR_DROP = 0.045
PRIORITY_WEIGHT = 1.5  # the shop's own exact answers count this much more in the fusion
EMBED_BATCH = 16
# an alphabet's passages are centred (`_centred_by_script`) only with this many to average
SCRIPT_MIN_PASSAGES = 5

ENTRIES_SOURCE = "entries"  # the source of entries added one at a time
ENTRIES_TITLE = "Answers added by the shop"
ENTRY_PREFIX = "entry:"  # the location of an entry added without a URL
FAQ_LOCATION_PREFIX = "faq:"  # the location of an FAQ entry (its key follows)

Progress = Callable[[int, int], None]  # done, total


@dataclass(frozen=True, slots=True)
class Passage:
    """A search hit: what the customer can be told and where it comes from."""

    id: int
    title: str  # the page's or file's title
    location: str  # the page's URL or the file's name
    heading: str  # the heading path inside the document ("" at its top)
    text: str
    score: float  # the fused score (higher is better; for ordering only)
    similarity: float | None  # cosine to the question (None without vectors)
    word_share: float  # share of the question's content words the passage holds
    relevant: bool
    priority: int

    @property
    def link(self) -> str | None:
        """The page's URL for the customer to open (None for a file or an entry)."""
        return self.location if self.location.startswith(("https://", "http://")) else None

    @property
    def file_name(self) -> str | None:
        """The file's name (None for a page or an entry)."""
        if self.link is not None or self.location.startswith((ENTRY_PREFIX, FAQ_LOCATION_PREFIX)):
            return None
        return self.location


def vector_bytes(vector: Vectors) -> bytes:
    return np.asarray(vector, dtype="<f4").tobytes()


def content_hash(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def passage_text(heading: str, text: str) -> str:
    """What is embedded for a passage: its heading path gives the text its topic."""
    return f"{heading}\n{text}" if heading else text


@dataclass(frozen=True, slots=True)
class Nearest:
    """The nearest passages to a question: (id, cosine centred by alphabet), best first,
    and the best plain cosine (whether anything is relevant at all is judged on it)."""

    hits: list[tuple[int, float]]
    best_cosine: float


class _VectorCache:
    """All stored vectors as one matrix, reloaded when the generation moves, with the
    rows of each alphabet's passages (when the knowledge holds two)."""

    def __init__(self) -> None:
        self.generation = -1
        self.ids = np.zeros(0, dtype=np.int64)
        self.matrix = np.zeros((0, 0), dtype=np.float32)
        self.scripts: list[npt.NDArray[np.int64]] = []
        self._lock = asyncio.Lock()

    async def current(self, repo: KnowledgeRepository, generation: int) -> _VectorCache:
        if generation == self.generation:
            return self
        async with self._lock:
            if generation != self.generation:
                stored_generation, rows = await repo.vectors()
                if rows:
                    self.ids = np.fromiter((r[0] for r in rows), dtype=np.int64, count=len(rows))
                    self.matrix = np.vstack([np.frombuffer(r[1], dtype="<f4") for r in rows])
                else:
                    self.ids = np.zeros(0, dtype=np.int64)
                    self.matrix = np.zeros((0, 0), dtype=np.float32)
                self.scripts = _rows_by_script([r[2] for r in rows])
                self.generation = stored_generation
        return self

    def nearest(self, query: Vectors, limit: int) -> Nearest:
        if not len(self.ids) or self.matrix.shape[1] != query.shape[0]:
            return Nearest([], 0.0)
        cosines = similarities(self.matrix, query)
        scores = _centred_by_script(cosines, self.scripts)
        count = min(limit, len(scores))
        best = np.argpartition(-scores, count - 1)[:count]
        best = best[np.argsort(-scores[best])]
        return Nearest([(int(self.ids[i]), float(scores[i])) for i in best], float(cosines.max()))


def _rows_by_script(texts: Sequence[str]) -> list[npt.NDArray[np.int64]]:
    """The row numbers of each alphabet's passages, when the knowledge holds two
    alphabets with enough passages each to average (else none: nothing to centre)."""
    rows: dict[str, list[int]] = {}
    for row, text in enumerate(texts):
        rows.setdefault(script_of(text), []).append(row)
    if len(rows) < 2 or min(len(r) for r in rows.values()) < SCRIPT_MIN_PASSAGES:
        return []
    return [np.array(r, dtype=np.int64) for r in rows.values()]


def _centred_by_script(
    cosines: npt.NDArray[np.float32], scripts: Sequence[npt.NDArray[np.int64]]
) -> npt.NDArray[np.float32]:
    """The cosines with each alphabet's passages lifted by how much lower their mean is
    than the closest alphabet's. A small multilingual model scores every passage in the
    question's language higher (docs/knowledge.md: "размеры пододеяльников" put the
    clothing size chart before the English bedding sizes); the gap between the means
    measures that bias on this very knowledge, so no constant is tuned."""
    if not scripts:
        return cosines
    means = [float(cosines[rows].mean()) for rows in scripts]
    top = max(means)
    centred = cosines.copy()
    for rows, mean in zip(scripts, means, strict=True):
        centred[rows] += top - mean
    return centred


class KnowledgeBase:
    """The shop's knowledge over one repository and an optional embedder."""

    def __init__(
        self,
        repo: KnowledgeRepository,
        embedder: Embedder | None,
        *,
        clock: Callable[[], float] = time.time,
    ) -> None:
        self._repo = repo
        self._embedder = embedder
        self._clock = clock
        self._cache = _VectorCache()

    @property
    def repo(self) -> KnowledgeRepository:
        return self._repo

    @property
    def embedder(self) -> Embedder | None:
        return self._embedder

    # -- writing ----------------------------------------------------------------------

    async def passages_of(
        self, sections: Sequence[tuple[str, str]], *, priority: int = 0
    ) -> list[PassageDraft]:
        """Drafts of (heading, text) passages, stemmed and (with an embedder) embedded;
        an embedder that fails leaves them to be embedded later (`embed_missing`)."""
        vectors: Vectors | None = None
        if self._embedder is not None and sections:
            try:
                vectors = await self._embedder.embed_passages(
                    [passage_text(h, t) for h, t in sections]
                )
            except EmbedderError:
                vectors = None
            else:
                await self._repo.use_embedder(self._embedder.name, int(vectors.shape[1]))
        return [
            PassageDraft(
                heading=heading,
                text=text,
                stems=" ".join(stems(passage_text(heading, text))),
                priority=priority,
                embedding=None if vectors is None else vector_bytes(vectors[i]),
            )
            for i, (heading, text) in enumerate(sections)
        ]

    async def add_entry(self, title: str, text: str, *, url: str | None = None) -> int:
        """Add one answer of the shop's own now (e.g. from a one-tap answer to a question
        the bot could not answer): searchable as soon as this returns, with the weight
        of the shop's exact answers. An entry with the same title replaces the earlier
        one. Returns the source's id."""
        source_id = await self._repo.ensure_source(
            "entries", ENTRIES_SOURCE, ENTRIES_TITLE, now=self._clock()
        )
        drafts = await self.passages_of([(title, text)], priority=1)
        location = url or f"{ENTRY_PREFIX}{title}"
        document = DocumentDraft(
            location=location,
            title=title,
            content_hash=content_hash(f"{title}\n{text}".encode()),
            passages=drafts,
        )
        await self._repo.apply(source_id, [document], now=self._clock())
        return source_id

    async def copy_in(self, sources: Sequence[SourceCopy], stored: IndexState) -> bool:
        """Sources read from another database (`KnowledgeRepository.source_copies`, whose
        index is `stored`) added as they are, nothing fetched again: their passages keep
        their vectors when this base's embedder made them, else they are embedded here,
        as the bot embeds at start (an embedder that fails leaves them to words). Whether
        the vectors were kept."""
        embedder = self._embedder
        keep = embedder is not None and stored.embedder == embedder.name and stored.dimension > 0
        if keep:
            await self._repo.use_embedder(stored.embedder, stored.dimension)
        for source in sources:
            source_id = await self._repo.ensure_source(
                source.kind, source.location, source.title, now=self._clock()
            )
            documents = source.documents if keep else [_unembedded(d) for d in source.documents]
            await self._repo.apply(source_id, documents, now=self._clock())
        if not keep and embedder is not None and sources:
            try:
                await self.embed_missing()
            except EmbedderError:
                pass  # searched by words, as the bot does until its embedder answers
        return keep

    async def embed_missing(self, progress: Progress | None = None) -> int:
        """Embed every passage without a vector (after the embedder changed, or one that
        was unreachable): how many were embedded. Without an embedder, none."""
        embedder = self._embedder
        if embedder is None:
            return 0
        state = await self._repo.index_state()
        if state.embedder != embedder.name:
            probe = await embedder.embed_query("probe")
            await self._repo.use_embedder(embedder.name, int(probe.shape[0]))
        total, embedded = await self._repo.counts()
        done = 0
        while True:
            batch = await self._repo.unembedded(EMBED_BATCH)
            if not batch:
                return done
            vectors = await embedder.embed_passages([passage_text(h, t) for _, h, t in batch])
            stored = await self._repo.set_embeddings(
                embedder.name,
                [(pid, vector_bytes(vectors[i])) for i, (pid, _, _) in enumerate(batch)],
            )
            if not stored:  # another embedder took over meanwhile
                return done
            done += stored
            if progress is not None:
                progress(done, total - embedded)

    # -- searching --------------------------------------------------------------------

    async def search(
        self, query: str, *, limit: int = 5, everything: bool = False
    ) -> list[Passage]:
        """The best passages about `query`, best first; only relevant ones unless
        `everything` (the owner's `knowledge search` shows the rest with their scores)."""
        lexical_query = LexicalQuery(words=query_words(query), stems=query_stems(query))
        # the question's vector is made in a worker thread while the database searches
        lexical_ids, nearest = await asyncio.gather(
            self._repo.lexical(lexical_query, CANDIDATES), self._semantic(query)
        )
        semantic = nearest.hits
        similarity = dict(semantic)
        candidates = set(lexical_ids) | set(similarity)
        records = await self._repo.passages(sorted(candidates))
        wanted = set(lexical_query.stems)
        shares = {i: _word_share(wanted, records[i]) for i in records}
        lexical = [i for i in lexical_ids if i in records]
        if semantic:
            # with meaning to go by, a passage sharing a common word or two ("order",
            # "доставка") would outrank the right page in the other language: the words'
            # ranking brings in only passages holding most of the question's words
            lexical = [i for i in lexical if shares[i] >= LEXICAL_FUSION_SHARE]
        fused = reciprocal_rank_fusion(
            [lexical, [i for i, _ in semantic if i in records]], weights=[1.0, 1.0]
        )
        relevant_to = self._relevance(nearest)
        hits: list[Passage] = []
        for passage_id, score in fused:
            record = records[passage_id]
            share = shares[passage_id]
            sim = similarity.get(passage_id)
            if record.priority:
                score *= PRIORITY_WEIGHT
            relevant = relevant_to(sim, share, record.priority)
            hits.append(_passage(record, score, sim, share, relevant))
        hits.sort(key=lambda p: (not p.relevant, -p.score))
        if not everything:
            hits = [p for p in hits if p.relevant]
        return hits[:limit]

    def _relevance(self, nearest: Nearest) -> Callable[[float | None, float, int], bool]:
        """Whether a passage (its cosine, its share of the question's words, its
        priority) is about the question. With vectors the question is judged first, by
        its best plain cosine against the embedder's floor (a question nothing answers
        still has a nearest passage, at a cosine only a little lower); then a passage
        counts when its cosine (centred by alphabet) is near the best one. The shop's own
        exact answers (FAQ, entries: short, curated) count from a lower floor, and any
        passage holding half the question's words counts whatever its cosine. Without
        vectors: the words alone."""
        floor = None if self._embedder is None else self._embedder.min_similarity
        if not nearest.hits or floor is None:
            return lambda _sim, share, _priority: share >= MIN_WORD_SHARE
        best = nearest.hits[0][1]
        answered = nearest.best_cosine >= floor
        near = best - max(MIN_MARGIN, (best - floor) * MARGIN_SHARE) if answered else 2.0
        own_floor = floor - OWN_ANSWERS_FLOOR_DROP

        def relevant(sim: float | None, share: float, priority: int) -> bool:
            if share >= MIN_WORD_SHARE:
                return True
            if sim is None:
                return False
            return sim >= near or (priority > 0 and sim >= own_floor)

        return relevant

    async def _semantic(self, query: str) -> Nearest:
        embedder = self._embedder
        if embedder is None:
            return Nearest([], 0.0)
        # the question's vector is made while the index's state is read (the database
        # is busy with the words' search first): one does not wait for the other
        state, vector = await asyncio.gather(
            self._repo.index_state(), embedder.embed_query(query), return_exceptions=True
        )
        if isinstance(state, BaseException):
            raise state
        if state.embedder != embedder.name or isinstance(vector, EmbedderError):
            # the stored vectors are another embedder's: words only until re-embedded;
            # an embedder that fails leaves the words too
            return Nearest([], 0.0)
        if isinstance(vector, BaseException):
            raise vector
        cache = await self._cache.current(self._repo, state.generation)
        return cache.nearest(vector, CANDIDATES)


def _unembedded(document: DocumentDraft) -> DocumentDraft:
    passages = tuple(replace(p, embedding=None) for p in document.passages)
    return replace(document, passages=passages)


def _word_share(wanted: set[str], record: PassageRecord) -> float:
    if not wanted:
        return 0.0
    held = set(record.stems.split())
    return len(wanted & held) / len(wanted)


def _passage(
    record: PassageRecord, score: float, similarity: float | None, share: float, relevant: bool
) -> Passage:
    return Passage(
        id=record.id,
        title=record.title,
        location=record.location,
        heading=record.heading,
        text=record.text,
        score=score,
        similarity=similarity,
        word_share=share,
        relevant=relevant,
        priority=record.priority,
    )
