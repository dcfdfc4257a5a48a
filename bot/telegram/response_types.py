"""Keeps aiogram's parsed-answer classes alive, so no Bot API call builds one again.

aiogram parses every Bot API answer with `Response[method.__returning__]`, a pydantic
generic class made on first use. Pydantic caches those classes only weakly and nothing
else holds them, so the garbage collector frees one at its next pass and the next
request builds it again: about 2.6 ms of CPU each time, some 3 % of the bot's CPU under
load (docs/benchmarks.md). This request middleware holds the class of each
method the bot calls, from its first call on.
"""

from __future__ import annotations

from typing import Any

from aiogram import Bot
from aiogram.client.session.base import BaseSession
from aiogram.client.session.middlewares.base import (
    BaseRequestMiddleware,
    NextRequestMiddlewareType,
)
from aiogram.methods import Response, TelegramMethod
from aiogram.methods.base import TelegramType


class KeepResponseTypes(BaseRequestMiddleware):
    """Holds `Response[...]` of every method called through the session."""

    def __init__(self) -> None:
        self._held: dict[type[Any], type[Any]] = {}

    async def __call__(
        self,
        make_request: NextRequestMiddlewareType[TelegramType],
        bot: Bot,
        method: TelegramMethod[TelegramType],
    ) -> Response[TelegramType]:
        kind = type(method)
        if kind not in self._held:
            self._held[kind] = Response[method.__returning__]  # type: ignore[name-defined]
        return await make_request(bot, method)


def keep_response_types(session: BaseSession) -> None:
    """Install `KeepResponseTypes` on the bot's session (once, when the bot is built)."""
    session.middleware(KeepResponseTypes())
