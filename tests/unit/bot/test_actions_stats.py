"""The /stats block of actions (bot/telegram/stats_view/actions.py) over the repository's counts."""

from __future__ import annotations

import pytest

from bot.telegram.stats_view.actions import actions_block
from storage.actions import ActionCounts


@pytest.mark.parametrize(
    ("language", "title", "done", "resolved"),
    [
        ("ru", "ДЕЙСТВИЯ С ПОДТВЕРЖДЕНИЕМ", "выполнено", "вопросов решено действием"),
        ("en", "CONFIRMED ACTIONS", "done", "questions resolved by an action"),
    ],
)
def test_the_block_names_each_count(language: str, title: str, done: str, resolved: str) -> None:
    counts = ActionCounts(
        proposed=9, confirmed=5, declined=2, expired=1, done=4, failed=1, resolved_questions=3
    )
    lines = actions_block(counts, language)  # type: ignore[arg-type]
    assert len(lines) == 8
    assert lines[0].startswith(title) and lines[0].rstrip().endswith("9")
    assert any(done in line and line.rstrip().endswith("4") for line in lines)
    assert lines[-1].strip().startswith(resolved) and lines[-1].rstrip().endswith("3")
    assert all(len(line) == len(lines[0]) for line in lines)  # one column, as the table
