"""The one place an unexpected handler error ends: log it, apologise, never leak it."""

from __future__ import annotations

import logging

from aiogram import Router
from aiogram.types import ErrorEvent

from bot.responder import Outbox
from bot.texts import texts_for

log = logging.getLogger(__name__)


def build_errors_router() -> Router:
    router = Router(name="errors")

    @router.error()
    async def on_error(event: ErrorEvent, outbox: Outbox | None = None) -> None:
        update = event.update
        turn_id = getattr(event.exception, "turn_id", None)
        log.error(
            "update %s failed (turn %s): %s",
            update.update_id,
            turn_id,
            type(event.exception).__name__,
            exc_info=event.exception,
        )
        message = update.message
        if outbox is None or outbox.used or message is None:
            return
        user = message.from_user
        await outbox.send(texts_for(user.language_code if user else None).apology)

    return router
