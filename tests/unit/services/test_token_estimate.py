"""The history budget counts tokens close to a real tokenizer, never much under.

The corpus (token_counts.jsonl beside this file) is texts the bot sends to a model — Russian
and English messages and answers, tool results as JSON, instruction text — with their
OpenAI cl100k_base counts (scripts/token_counts.py re-counts them). A budget that
undercounts lets a prompt grow past what the owner set; the old estimate (four
characters a token) was 27-31 % under on Russian + JSON.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from services.history import estimate_tokens, message_tokens, truncate_to_tokens

CORPUS = Path(__file__).resolve().with_name("token_counts.jsonl")


def _rows(kind: str | None = None) -> list[dict[str, object]]:
    rows = [json.loads(line) for line in CORPUS.read_text(encoding="utf-8").splitlines()]
    return [r for r in rows if kind is None or r["kind"] == kind]


@pytest.mark.parametrize("kind", ["ru", "en", "json"])
def test_in_total_the_estimate_is_never_under_and_at_most_a_quarter_over(kind: str) -> None:
    rows = _rows(kind)
    assert len(rows) >= 40
    real = sum(int(str(r["cl100k"])) for r in rows)
    estimated = sum(estimate_tokens(str(r["text"])) for r in rows)
    assert real <= estimated <= 1.25 * real


def test_hardly_any_single_text_is_undercounted_by_more_than_ten_percent() -> None:
    rows = _rows()
    under = [
        r["text"] for r in rows if estimate_tokens(str(r["text"])) < 0.9 * int(str(r["cl100k"]))
    ]
    assert len(under) <= len(rows) // 50, under[:5]


def test_russian_costs_what_a_tokenizer_says_not_a_quarter_of_its_characters() -> None:
    rows = _rows("ru")
    real = sum(int(str(r["cl100k"])) for r in rows)
    characters = sum(len(str(r["text"])) for r in rows)
    assert characters / 4 < 0.9 * real  # what the old estimate missed
    assert sum(estimate_tokens(str(r["text"])) for r in rows) >= real


def test_small_cases() -> None:
    assert estimate_tokens("") == 0
    assert estimate_tokens(" ") == 1
    assert message_tokens("") == 4
    # a long run of one letter is not one token per word
    assert estimate_tokens("x" * 400) > 100


def test_truncate_keeps_the_longest_start_that_fits() -> None:
    text = "слово, word 123\n" * 300
    cut = truncate_to_tokens(text, 50)
    assert text.startswith(cut) and estimate_tokens(cut) <= 50
    assert estimate_tokens(text[: len(cut) + 1]) > 50
    assert truncate_to_tokens("short", 50) == "short"
    assert truncate_to_tokens("short", 0) == ""
