"""The /stats block of actions (bot/stats_view/actions.py) over the repository's counts."""

from __future__ import annotations

import pytest

from bot.stats_view.actions import actions_block
from storage.actions import ActionCounts


@pytest.mark.parametrize(
    ("language", "title", "done"),
    [("ru", "ДЕЙСТВИЯ С ПОДТВЕРЖДЕНИЕМ", "выполнено"), ("en", "CONFIRMED ACTIONS", "done")],
)
def test_the_block_names_each_count(language: str, title: str, done: str) -> None:
    counts = ActionCounts(proposed=9, confirmed=5, declined=2, expired=1, done=4, failed=1)
    lines = actions_block(counts, language)  # type: ignore[arg-type]
    assert len(lines) == 6
    assert lines[0].startswith(title) and lines[0].rstrip().endswith("9")
    assert any(done in line and line.rstrip().endswith("4") for line in lines)
