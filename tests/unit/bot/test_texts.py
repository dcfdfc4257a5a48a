"""Fixed texts exist in both languages, fit one message, and follow the user's language."""

from __future__ import annotations

from bot.formatting import markdown_to_messages
from bot.texts import EN, RU, all_texts, texts_for


def test_language_choice_defaults_to_russian() -> None:
    assert texts_for("en") is EN
    assert texts_for("en-GB") is EN
    assert texts_for("ru") is RU
    assert texts_for("de") is RU
    assert texts_for(None) is RU


def test_every_text_is_filled_and_renders_as_one_message() -> None:
    for language, texts in all_texts().items():
        for name, text in texts.items():
            assert text.strip(), (language, name)
            assert len(markdown_to_messages(text)) == 1, (language, name)


def test_start_names_examples_and_new() -> None:
    for texts in (RU, EN):
        assert "8041" in texts.start and "/new" in texts.start and "/help" in texts.start
        assert "2000" in texts.too_long_for(2000)
