"""Feeds one inbox row to the aiogram dispatcher with its reply channel.

The dispatcher gets `outbox` (bound to this row) and `inbox_update_id`, which the
language middleware turns into the handlers' `ctx` (bot/telegram/context.py). A row no handler
answered (an edited message, a group message not meant for the bot, an update type the
bot does not use) is finished as `ignored`, as is one whose handler sent its messages
itself rather than through the outbox. A row aiogram cannot parse (fields of the wrong
type) is finished as `failed` with reason `unparsable`, logged without its content; the
chat's next update follows as usual.
"""

from __future__ import annotations

import logging

from aiogram import Bot, Dispatcher
from aiogram.dispatcher.event.bases import UNHANDLED
from aiogram.enums import ChatType
from aiogram.types import Update
from pydantic import ValidationError

from bot.runtime.logs import validation_summary
from bot.runtime.responder import Responder
from bot.telegram.outbox import Outbox
from storage.inbox import InboxRow

log = logging.getLogger(__name__)


class UpdateProcessor:
    def __init__(self, bot: Bot, dispatcher: Dispatcher, responder: Responder) -> None:
        self._bot = bot
        self._dispatcher = dispatcher
        self._responder = responder

    async def __call__(self, row: InboxRow) -> None:
        try:
            update = Update.model_validate(row.payload, context={"bot": self._bot})
        except ValidationError as exc:
            log.warning(
                "update %s cannot be parsed, finished as failed: %s",
                row.update_id,
                validation_summary(exc),
            )
            await self._responder.fail(row, "unparsable")
            return
        message = update.message
        # in groups the answer quotes the question, so it is clear whom it answers
        reply_to = (
            message.message_id
            if message is not None and message.chat.type != ChatType.PRIVATE
            else None
        )
        outbox = Outbox(self._responder, row, reply_to_message_id=reply_to)
        result = await self._dispatcher.feed_update(
            self._bot, update, outbox=outbox, inbox_update_id=row.update_id
        )
        if not outbox.used:
            # a handler that sent on its own (not through the outbox) is not tracked here
            reason = "not_handled" if result is UNHANDLED else "sent_directly"
            await self._responder.ignore(row, reason)
