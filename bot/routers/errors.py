"""The one place an unexpected handler error ends: log it, apologise, never leak it."""

from __future__ import annotations

import logging

from aiogram import Router
from aiogram.types import ErrorEvent

from bot.responder import Outbox
from bot.texts import Texts

log = logging.getLogger(__name__)


def build_errors_router() -> Router:
    router = Router(name="errors")

    @router.error()
    async def on_error(
        event: ErrorEvent, outbox: Outbox | None = None, texts: Texts | None = None
    ) -> None:
        """`texts` comes from `LanguageMiddleware`, in the language of the failed update.

        Both are optional so the error is logged whatever failed: an update fed without
        an outbox, or one that failed before the language was chosen, gets no apology.
        """
        update = event.update
        turn_id = getattr(event.exception, "turn_id", None)
        log.error(
            "update %s failed (turn %s): %s",
            update.update_id,
            turn_id,
            type(event.exception).__name__,
            exc_info=event.exception,
        )
        if outbox is None or outbox.used or update.message is None or texts is None:
            return
        await outbox.send(texts.apology)

    return router
