"""`ProductCatalog`: the product tools' one way to the shop's catalogue and its index.

It reads the catalogue through the `ShopDirectory` (so a live shop is asked at most once
per `products_ttl_s`, one request in flight, errors never cached) and keeps the search
index of the snapshot it last saw: a new snapshot that equals the old one keeps the
index, a changed one is indexed again (in a thread, once for all the questions
waiting). With an embedder (the knowledge search's `Embedder`), the meaning half of a
snapshot is built in the background: each product's text embedded once (`_vectors`
keeps them by text, so a changed catalogue embeds only what changed). Until it is
ready, search is by words; a search that finds nothing by words waits for it a little
(`wait_s`), so the first question after a start is not answered "not found" for want
of a second.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Sequence
from typing import TYPE_CHECKING

from tools.shop.directory import ShopDirectory
from tools.shop.product_search import (
    Filters,
    ProductIndex,
    SearchResult,
    VectorRanker,
    product_text,
)
from tools.shop.products import Product, StockWords

if TYPE_CHECKING:  # numpy (under the embedder) is imported only with an embedder
    from tools.knowledge.embedder import Embedder, Vectors

log = logging.getLogger("tools.shop.catalog")

# multilingual-e5 cosines of a short product text and a question: unrelated ones stay
# under this on the demo catalogue (an "айфон" asked of a clothes shop: 0.80), the
# product meant is above it ("тёплая куртка на зиму" → the parka: 0.84)
PRODUCT_MIN_SIMILARITY = 0.82
EMBED_BATCH = 8  # small: a question waiting for the engine waits one batch at most
MAX_KEPT_VECTORS = 100_000


class ProductCatalog:
    """The catalogue's current index over the directory (module docstring)."""

    def __init__(
        self,
        directory: ShopDirectory,
        stock: StockWords,
        *,
        embedder: Embedder | None = None,
        min_similarity: float = PRODUCT_MIN_SIMILARITY,
        wait_s: float = 4.0,
    ) -> None:
        self.directory = directory
        self.stock = stock
        self._embedder = embedder
        self._floor = min_similarity
        self._wait_s = wait_s
        self._snapshot: object = None
        self._indexing: tuple[object, asyncio.Future[ProductIndex]] | None = None
        self._index = ProductIndex(())
        self._meaning: asyncio.Task[VectorRanker] | None = None
        self._vectors: dict[str, Vectors] = {}

    async def index(self) -> ProductIndex:
        """The index of the directory's current snapshot; raises `ShopUnavailable`."""
        snapshot = await self.directory.products()
        if snapshot is self._snapshot:
            return self._index
        if self._indexing is None or self._indexing[0] is not snapshot:
            build = asyncio.ensure_future(self._reindex(snapshot))
            self._indexing = (snapshot, build)
        return await asyncio.shield(self._indexing[1])

    async def _reindex(self, snapshot: Sequence[Product]) -> ProductIndex:
        """The new snapshot's index, built in a thread (a big catalogue takes a second:
        the other chats' turns go on meanwhile); an equal snapshot keeps the index."""
        products = tuple(snapshot)
        if products != self._index.products:
            self._index = await asyncio.to_thread(ProductIndex, products)
            self._start_meaning(self._index.products)
        self._snapshot = snapshot
        return self._index

    async def search(self, query: str, filters: Filters, *, limit: int) -> SearchResult:
        index = await self.index()
        found = index.search(query, filters, self.stock, limit=limit)
        meaning = await self._meaning_of(query, limit, wait=not found.hits)
        if not meaning:
            return found
        return index.search(query, filters, self.stock, limit=limit, meaning=meaning)

    async def get(self, product_id: str) -> Product | None:
        return (await self.index()).get(product_id)

    async def warm(self) -> None:
        """Read the catalogue and build the meaning half now (at the bot's start)."""
        await self.index()
        if self._meaning is not None:
            await asyncio.wait({self._meaning})

    # -- the meaning half ----------------------------------------------------------

    def _start_meaning(self, products: tuple[Product, ...]) -> None:
        if self._embedder is None:
            return
        if self._meaning is not None:
            self._meaning.cancel()
        self._meaning = asyncio.create_task(self._build(self._embedder, products))
        self._meaning.add_done_callback(_landed)

    async def _build(self, embedder: Embedder, products: tuple[Product, ...]) -> VectorRanker:
        import numpy as np

        texts = [product_text(p) for p in products]
        missing = list(dict.fromkeys(t for t in texts if t not in self._vectors))
        for start in range(0, len(missing), EMBED_BATCH):
            batch = missing[start : start + EMBED_BATCH]
            for text, vector in zip(batch, await embedder.embed_passages(batch), strict=True):
                self._vectors[text] = vector
        if len(self._vectors) > MAX_KEPT_VECTORS:  # keep only this snapshot's
            wanted = set(texts)
            self._vectors = {t: v for t, v in self._vectors.items() if t in wanted}
        dimension = embedder.dimension or 0
        matrix = (
            np.stack([self._vectors[t] for t in texts]).astype(np.float32)
            if texts
            else np.zeros((0, dimension), dtype=np.float32)
        )
        return VectorRanker(matrix, self._floor)

    async def _meaning_of(self, query: str, limit: int, *, wait: bool) -> list[int]:
        """The meaning half's ranking, or [] while it is not ready (waited for up to
        `wait_s` when `wait`) or when it cannot be had."""
        task = self._meaning
        if task is None or self._embedder is None:
            return []
        if not task.done() and wait:
            await asyncio.wait({task}, timeout=self._wait_s)
        if not task.done() or task.cancelled() or task.exception() is not None:
            return []
        from tools.knowledge.embedder import query_vector

        vector = await query_vector(self._embedder, query)
        if vector is None:
            return []
        return task.result().rank(vector, max(50, limit * 10))


def _landed(task: asyncio.Task[VectorRanker]) -> None:
    if not task.cancelled() and task.exception() is not None:
        log.warning(
            "products: the search by meaning could not be built (%s); searching by words",
            type(task.exception()).__name__,
        )
