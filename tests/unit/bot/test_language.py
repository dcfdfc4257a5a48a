"""`LanguageMiddleware` is the one place a reply's language is chosen, once per update."""

from __future__ import annotations

from typing import Any

import pytest
from aiogram.types import TelegramObject, User

from bot.telegram.filters import LanguageMiddleware
from bot.telegram.texts import EN, RU, Language, Texts, build_text_table


async def _handler_data(
    data: dict[str, Any], middleware: LanguageMiddleware | None = None
) -> dict[str, Any]:
    seen: dict[str, Any] = {}

    async def handler(event: TelegramObject, handler_data: dict[str, Any]) -> str:
        seen.update(handler_data)
        return "handled"

    middleware = middleware or LanguageMiddleware()
    assert await middleware(handler, TelegramObject(), data) == "handled"
    return seen


@pytest.mark.parametrize(
    ("language_code", "language", "texts"),
    [("en-GB", "en", EN), ("ru", "ru", RU), ("de", "ru", RU), (None, "ru", RU)],
)
async def test_handlers_get_the_language_and_its_texts(
    language_code: str | None, language: str, texts: Texts
) -> None:
    user = User(id=1, is_bot=False, first_name="A", language_code=language_code)
    data = {"event_from_user": user}
    seen = await _handler_data(data)
    assert (seen["language"], seen["texts"]) == (language, texts)
    # the same dict: an error handler wrapped around the update sees them too
    assert (data["language"], data["texts"]) == (language, texts)


async def test_an_update_without_a_user_gets_the_default_language() -> None:
    seen = await _handler_data({})
    assert (seen["language"], seen["texts"]) == ("ru", RU)


@pytest.mark.parametrize("default", ["ru", "en"])
@pytest.mark.parametrize("language_code", ["de", "uk", "pt-BR", "", None])
async def test_a_language_of_neither_gets_the_default_languages_effective_texts(
    default: Language, language_code: str | None
) -> None:
    table = build_text_table(shop_name="Кофейный двор", default_language=default)
    user = User(id=1, is_bot=False, first_name="A", language_code=language_code)
    seen = await _handler_data({"event_from_user": user}, LanguageMiddleware(table))
    assert seen["language"] == default
    assert seen["texts"] is table.by_language[default]
    assert "Кофейный двор" in seen["texts"].start  # the shop's texts, not the built-in ones


@pytest.mark.parametrize("default", ["ru", "en"])
async def test_our_languages_keep_theirs_whatever_the_default(default: Language) -> None:
    table = build_text_table(default_language=default)
    middleware = LanguageMiddleware(table)
    for code, language in (("ru", "ru"), ("en-US", "en")):
        user = User(id=1, is_bot=False, first_name="A", language_code=code)
        seen = await _handler_data({"event_from_user": user}, middleware)
        assert seen["language"] == language
    assert (await _handler_data({}, middleware))["language"] == default
