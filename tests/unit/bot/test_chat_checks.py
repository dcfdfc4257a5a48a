"""Which texts count as empty before anything is sent to the model."""

from __future__ import annotations

import pytest

from bot.routers.chat import has_visible_text


@pytest.mark.parametrize("text", ["", "   ", "\n\t", "\u200b\u200b", "\u2060 \ufeff", "\u200d"])
def test_invisible_text_is_empty(text: str) -> None:
    assert not has_visible_text(text)


@pytest.mark.parametrize("text", ["a", "8041", "👍", "שלום\u200f", " ?"])
def test_visible_text_is_not(text: str) -> None:
    assert has_visible_text(text)
