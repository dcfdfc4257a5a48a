"""The one place an unexpected handler error ends: log it, apologise, never leak it.

Storage faults are not such errors: the store may work again in a moment, and the
customer's answer may already exist. They pass through untouched (aiogram re-raises an
error no error handler takes) to the intake, which retries the update or leaves it for
the next start (bot/runtime/intake.py) — an apology now would be a second answer later.
"""

from __future__ import annotations

import logging

from aiogram import Router
from aiogram.types import ErrorEvent

from bot.telegram.context import UpdateContext
from storage.database import StorageUnavailable, storage_fault

log = logging.getLogger(__name__)


def not_a_storage_fault(event: ErrorEvent) -> bool:
    exc = event.exception
    return not isinstance(exc, StorageUnavailable) and storage_fault(exc) is None


def build_errors_router() -> Router:
    router = Router(name="errors")

    @router.error(not_a_storage_fault)
    async def on_error(event: ErrorEvent, ctx: UpdateContext | None = None) -> None:
        """`ctx` (bot/telegram/context.py) is in the language of the failed update.

        It is optional so the error is logged whatever failed: an update fed without an
        outbox, or one that failed before the language was chosen, gets no apology.
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
        if ctx is None or ctx.outbox.used or update.message is None:
            return
        await ctx.outbox.send(ctx.texts.apology)

    return router
