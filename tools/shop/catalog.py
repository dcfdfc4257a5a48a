"""`ProductCatalog`: the product tools' one way to the shop's catalogue and its index.

It reads the catalogue through the `ShopDirectory` (so a live shop is asked at most once
per `products_ttl_s`, one request in flight, errors never cached) and keeps the search
index of the snapshot it last saw: a new snapshot that equals the old one keeps the
index, a changed one is indexed again. The semantic half (`SemanticIndexer`), when there
is an embedder, is built in the background from the same snapshot; until it is ready,
and without an embedder, search is lexical only.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Callable, Sequence

from tools.shop.directory import ShopDirectory
from tools.shop.product_search import Filters, ProductIndex, SearchResult, SemanticRanker
from tools.shop.products import Product, StockWords

log = logging.getLogger("tools.shop.catalog")


class ProductCatalog:
    """The catalogue's current index over the directory (module docstring)."""

    def __init__(
        self,
        directory: ShopDirectory,
        stock: StockWords,
        *,
        semantic: Callable[[Sequence[Product]], SemanticBuild] | None = None,
    ) -> None:
        self.directory = directory
        self.stock = stock
        self._semantic = semantic
        self._snapshot: Sequence[Product] | None = None
        self._index = ProductIndex(())
        self._build: SemanticBuild | None = None

    async def index(self) -> ProductIndex:
        """The index of the directory's current snapshot; raises `ShopUnavailable`."""
        snapshot = await self.directory.products()
        if snapshot is not self._snapshot:
            if self._snapshot is None or tuple(snapshot) != tuple(self._snapshot):
                self._index = ProductIndex(snapshot)
                if self._semantic is not None:
                    if self._build is not None:
                        self._build.cancel()
                    self._build = self._semantic(self._index.products)
            self._snapshot = snapshot
        return self._index

    async def search(self, query: str, filters: Filters, *, limit: int) -> SearchResult:
        index = await self.index()
        ranker = self._build.ranker() if self._build is not None else None
        return index.search(query, filters, self.stock, limit=limit, semantic=ranker)

    async def get(self, product_id: str) -> Product | None:
        return (await self.index()).get(product_id)


class SemanticBuild:
    """The meaning half of one snapshot, being built in the background."""

    def __init__(self, task: asyncio.Task[SemanticRanker]) -> None:
        self._task = task
        task.add_done_callback(self._landed)

    def ranker(self) -> SemanticRanker | None:
        """The ranker once built (None meanwhile, or when building failed)."""
        if not self._task.done() or self._task.cancelled() or self._task.exception():
            return None
        return self._task.result()

    def cancel(self) -> None:
        self._task.cancel()

    @staticmethod
    def _landed(task: asyncio.Task[SemanticRanker]) -> None:
        if not task.cancelled() and task.exception() is not None:
            log.warning(
                "products: the search by meaning could not be built (%s); searching by words",
                type(task.exception()).__name__,
            )
