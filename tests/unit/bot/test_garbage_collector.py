"""The garbage collector settings of a running bot: fewer, cheaper collections, still on.

`freeze_startup_objects` (bot/telegram/app.py) freezes what the start built and raises the
collector's thresholds, so a busy bot stops spending a fifth of its CPU on collections
that find nothing (docs/benchmarks.md). These tests hold what that must not break: the
thresholds are the ones measured, and cyclic garbage made after the start is still
collected automatically — without anyone calling `gc.collect()`.
"""

from __future__ import annotations

import gc
import weakref
from collections.abc import Iterator

import pytest

from bot.telegram.app import GC_THRESHOLDS, freeze_startup_objects


@pytest.fixture
def collector_restored() -> Iterator[None]:
    """Give the test process its collector back as it was (the settings are global)."""
    thresholds = gc.get_threshold()
    enabled = gc.isenabled()
    gc.enable()
    try:
        yield
    finally:
        gc.unfreeze()
        gc.set_threshold(*thresholds)
        if not enabled:
            gc.disable()


class Node:
    """A container object that can be part of a reference cycle."""

    def __init__(self) -> None:
        self.other: Node | None = None


def make_cycle() -> weakref.ref[Node]:
    """Two objects that refer to each other: only the cyclic collector frees them."""
    first, second = Node(), Node()
    first.other, second.other = second, first
    return weakref.ref(first)


@pytest.mark.usefixtures("collector_restored")
def test_start_up_objects_are_frozen_and_thresholds_raised() -> None:
    gc.unfreeze()
    kept = [Node() for _ in range(10)]  # stands in for what the start built

    freeze_startup_objects()

    assert gc.get_freeze_count() >= len(kept)
    assert gc.get_threshold() == GC_THRESHOLDS
    young = GC_THRESHOLDS[0]
    assert young > 700, "the young generation must be larger than CPython's default"


@pytest.mark.usefixtures("collector_restored")
def test_cycles_made_after_the_start_are_still_collected_automatically() -> None:
    freeze_startup_objects()
    young = GC_THRESHOLDS[0]
    # each cycle adds two tracked objects; three thresholds' worth runs several young
    # collections, each of which frees the unreachable cycles made before it
    refs = [make_cycle() for _ in range(3 * young // 2)]

    freed = sum(1 for ref in refs if ref() is None)

    assert freed >= len(refs) // 2, f"only {freed} of {len(refs)} cycles were collected"
