"""The reply channel of one update, handed to handlers in their `ctx`.

Handlers answer with Markdown and aiogram keyboards; the `Outbox` renders the text for
the channel, turns a keyboard into the Bot API's JSON (stored with the reply, so a
resumed delivery sends the same one) and hands the parts to the runtime's `Responder`
(bot/runtime/responder.py), which stores them before they are sent.
"""

from __future__ import annotations

import logging
from collections.abc import Sequence

from bot.runtime.channel import Rendered
from bot.runtime.responder import Responder
from bot.telegram.keyboards import markup_to_json
from bot.telegram.sender import ReplyMarkup
from storage.inbox import InboxRow, StoredReply

log = logging.getLogger(__name__)


class Outbox:
    """The reply channel of one inbox row, handed to handlers in their `ctx`."""

    def __init__(
        self, responder: Responder, row: InboxRow, *, reply_to_message_id: int | None
    ) -> None:
        self._responder = responder
        self._row = row
        self._reply_to = reply_to_message_id
        self.used = False

    @property
    def update_id(self) -> int:
        return self._row.update_id

    async def send(
        self,
        markdown: str,
        *,
        turn_id: str | None = None,
        reply_markup: ReplyMarkup | None = None,
        also: Sequence[StoredReply] = (),
    ) -> None:
        """Answer the update with text in the Markdown subset of `bot.telegram.formatting`;
        `reply_markup` (a keyboard) goes with the last part; `also`: ready parts sent
        after it, e.g. to another chat (see `send_parts`)."""
        await self.send_rendered(
            self._responder.render(markdown),
            turn_id=turn_id,
            reply_markup=reply_markup,
            also=also,
        )

    async def send_rendered(
        self,
        parts: Sequence[Rendered],
        *,
        turn_id: str | None = None,
        reply_markup: ReplyMarkup | None = None,
        also: Sequence[StoredReply] = (),
    ) -> None:
        if self.used:
            log.warning("update %s answered twice by handlers; keeping the first", self.update_id)
            return
        self.used = True
        markup = None if reply_markup is None else markup_to_json(reply_markup)
        stored = [
            StoredReply(
                html=part.html,
                plain=part.plain,
                reply_to_message_id=self._reply_to if index == 0 else None,
                reply_markup=markup if index == len(parts) - 1 else None,
            )
            for index, part in enumerate(parts)
        ]
        stored += also
        if not stored:
            await self.ignore("empty_reply")
            return
        await self._responder.reply(self._row, stored, turn_id=turn_id)

    async def send_parts(self, parts: Sequence[StoredReply]) -> None:
        """Answer the update with ready parts, some of which may go to other chats or be
        copies (the handoff's relays and mirrors): stored, then sent, like any answer."""
        if self.used:
            log.warning("update %s answered twice by handlers; keeping the first", self.update_id)
            return
        self.used = True
        if not parts:
            await self.ignore("empty_reply")
            return
        await self._responder.reply(self._row, parts)

    async def drop_contact(self) -> None:
        """After the reply is stored: remove a shared contact from the stored update."""
        await self._responder.drop_contact(self._row)

    async def ignore(self, reason: str) -> None:
        """Nothing will be sent for this update (e.g. silenced by a limit)."""
        self.used = True
        await self._responder.ignore(self._row, reason)
