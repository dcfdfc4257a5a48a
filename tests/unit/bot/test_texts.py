"""Fixed texts exist in both languages, fit one message, and follow the user's language."""

from __future__ import annotations

import pytest

from bot.runtime.feature_catalog import words_of
from bot.telegram.features.registry import FEATURES
from bot.telegram.formatting import markdown_to_messages
from bot.telegram.texts import (
    BUILT_IN,
    EN,
    LANGUAGES,
    RU,
    TEXT_KEYS,
    build_text_table,
    language_for,
)
from tools.shop.demo import DEMO_ORDER_IDS


@pytest.mark.parametrize(
    ("language_code", "language"),
    [
        ("en", "en"),
        ("en-GB", "en"),
        ("EN-us", "en"),
        ("ru", "ru"),
        ("de", "ru"),
        ("uk", "ru"),
        ("", "ru"),
        (None, "ru"),
    ],
)
def test_language_choice_defaults_to_russian(language_code: str | None, language: str) -> None:
    assert language_for(language_code) == language


@pytest.mark.parametrize(
    ("language_code", "language"),
    [("en", "en"), ("ru-RU", "ru"), ("de", "en"), ("uk", "en"), ("", "en"), (None, "en")],
)
def test_language_choice_with_english_as_the_default(
    language_code: str | None, language: str
) -> None:
    assert language_for(language_code, default="en") == language


def test_every_language_has_its_texts() -> None:
    assert BUILT_IN.by_language["en"] is EN
    assert BUILT_IN.by_language["ru"] is RU
    assert set(BUILT_IN.by_language) == set(LANGUAGES)


def test_every_text_is_filled_and_renders_as_one_message() -> None:
    """The bot's own texts and every feature's words."""
    table = build_text_table(features=words_of(FEATURES))
    for language in LANGUAGES:
        texts = table.by_language[language]
        shown = {name: getattr(texts, name) for name in TEXT_KEYS} | dict(texts.features)
        assert set(texts.features) == set(words_of(FEATURES)[language])
        for name, text in shown.items():
            assert text.strip(), (language, name)
            assert len(markdown_to_messages(text)) == 1, (language, name)


def test_start_names_examples_and_new() -> None:
    for texts in (RU, EN):
        assert "/new" in texts.start and "/help" in texts.start
        assert "2000" in texts.too_long_for(2000)


def test_the_built_in_examples_name_no_demo_order() -> None:
    """A shop with its own data must not be told to ask about the demo's orders."""
    for texts in (RU, EN):
        for order_id in DEMO_ORDER_IDS:
            assert order_id not in texts.start and order_id not in texts.help
