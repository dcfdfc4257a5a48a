"""Reciprocal-rank fusion: agreement wins, weights count, any hashable items."""

from __future__ import annotations

import pytest

from tools.knowledge.fusion import RRF_K, reciprocal_rank_fusion


def test_an_item_both_rankings_like_beats_one_only_one_ranks_first() -> None:
    fused = reciprocal_rank_fusion([["a", "b", "c"], ["d", "b", "e"]])
    assert next(item for item, _ in fused) == "b"
    assert dict(fused)["b"] == pytest.approx(2 / (RRF_K + 2))


def test_weights_tilt_the_fusion() -> None:
    fused = reciprocal_rank_fusion([["x"], ["y"]], weights=[1.0, 2.0])
    assert [item for item, _ in fused] == ["y", "x"]


def test_empty_rankings_and_repeats() -> None:
    assert reciprocal_rank_fusion([[], []]) == []
    fused = dict(reciprocal_rank_fusion([[1, 1, 2]]))
    assert fused[1] == pytest.approx(1 / (RRF_K + 1))
    assert fused[2] == pytest.approx(1 / (RRF_K + 3))
