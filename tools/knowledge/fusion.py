"""Reciprocal-rank fusion: one ranking out of several, by rank alone.

Scores of different retrievers (BM25, cosine) are not comparable; their ranks are. Each
item scores Σ weight / (k + rank) over the rankings it appears in (rank from 1), the
standard RRF of Cormack, Clarke and Büttcher (2009) with its usual k = 60. Usable for any
rankings of hashable items: knowledge passages, products."""

from __future__ import annotations

from collections.abc import Hashable, Iterable, Sequence
from typing import TypeVar

K = TypeVar("K", bound=Hashable)

RRF_K = 60


def reciprocal_rank_fusion(
    rankings: Iterable[Sequence[K]],
    *,
    k: int = RRF_K,
    weights: Sequence[float] | None = None,
) -> list[tuple[K, float]]:
    """Items of all `rankings` (each best first) with their fused score, best first;
    ties keep the order in which items were first seen. An item repeated inside one
    ranking counts at its best rank there."""
    scores: dict[K, float] = {}
    for index, ranking in enumerate(rankings):
        weight = 1.0 if weights is None else weights[index]
        seen: set[K] = set()
        for rank, item in enumerate(ranking, start=1):
            if item in seen:
                continue
            seen.add(item)
            scores[item] = scores.get(item, 0.0) + weight / (k + rank)
    return sorted(scores.items(), key=lambda pair: -pair[1])
