"""The running bot hands the GIL over within 1 ms (bot/telegram/app.py `SWITCH_INTERVAL_S`).

Every database call crosses from the event loop to SQLite's worker thread and back; with
CPython's 5 ms default a finished query could wait that long for the loop to let go of the
GIL. The bench measured the difference (docs/benchmarks.md); this holds the setting.
"""

from __future__ import annotations

import sys
from collections.abc import Iterator

import pytest

from bot.telegram.app import SWITCH_INTERVAL_S, shorten_switch_interval


@pytest.fixture
def interval_restored() -> Iterator[None]:
    before = sys.getswitchinterval()
    try:
        yield
    finally:
        sys.setswitchinterval(before)


@pytest.mark.usefixtures("interval_restored")
def test_the_running_bot_switches_threads_every_millisecond() -> None:
    shorten_switch_interval()

    assert sys.getswitchinterval() == pytest.approx(SWITCH_INTERVAL_S) == pytest.approx(0.001)
