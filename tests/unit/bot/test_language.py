"""`LanguageMiddleware` is the one place a reply's language is chosen, once per update."""

from __future__ import annotations

from typing import Any

import pytest
from aiogram.types import TelegramObject, User

from bot.filters import LanguageMiddleware
from bot.texts import EN, RU, Texts


async def _handler_data(data: dict[str, Any]) -> dict[str, Any]:
    seen: dict[str, Any] = {}

    async def handler(event: TelegramObject, handler_data: dict[str, Any]) -> str:
        seen.update(handler_data)
        return "handled"

    assert await LanguageMiddleware()(handler, TelegramObject(), data) == "handled"
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
