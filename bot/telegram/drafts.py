"""Streamed answers in Telegram: the "Thinking…" draft, the growing draft, the stop button.

Bot API 10.x `sendMessageDraft` (private chats only) shows an ephemeral, animated draft
under the chat: an empty text shows a "Thinking…" placeholder, updates of the same
`draft_id` are animated, and a draft disappears after about 30 s or as soon as the bot
sends a message. With `can_stop` the customer gets a button to stop generation; pressing
it sends the bot a `stopped_message_generation` update naming the chat and `draft_id`.
So a draft is never the answer: the answer is still the normal message the responder
stores before sending it.

`Drafts` is the process-wide part (built by bot/telegram/features/streaming.py with
STREAM_ANSWERS on): whether drafts are still on (off for the rest of the process after
the first time the Bot API server rejects one — logged once), and the stop buttons of
running turns. `DraftStream` is one turn's draft; it implements
`services.answer_stream.DraftSink`. It never blocks the turn: the latest text waits in
one slot and a background task sends it through `Sender.send_draft` (lowest priority:
dropped, never queued, under load). Where no draft could be shown (drafts off or
rejected, a placeholder dropped) it shows the typing indicator instead, refreshed like
`Responder.typing`, and a draft that stays unchanged is shown again before Telegram lets
it expire.

Load: a streamed answer costs CPU for every token (the stream) and every draft (about
25 ms more per 300-token answer than a whole one, measured in bench/streaming.py). So a
new turn streams only while at most `max_busy_chats` chats are being answered at once
(STREAM_MAX_CHATS: the turns running or waiting for a slot, `services.limits.TurnSlots`,
read through `busy_chats`); beyond that it gets the typing indicator and
the whole answer, as with streaming off — under load, drafts are the first thing
dropped, before any answer is delayed.

The draft id is the update id of the question (Telegram's ids are unique per bot),
folded into a positive 31-bit number, so a stop press names the update it stops.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import AsyncIterator, Callable
from typing import Any

from aiogram.enums import ChatAction
from aiogram.methods import SendChatAction

from bot.runtime.responder import TYPING_REFRESH_S
from bot.telegram.formatting import markdown_to_messages
from bot.telegram.sender import Sender

log = logging.getLogger(__name__)

DRAFT_REFRESH_S = 20.0  # a draft lasts about 30 s unless updated
_DRAFT_ID_SPACE = 2_147_483_647


def draft_id_for(update_id: int) -> int:
    """The non-zero draft id of the answer to `update_id`."""
    return update_id % _DRAFT_ID_SPACE or 1


class Drafts:
    """Whether drafts are on, and which running turn each stop button belongs to."""

    def __init__(
        self,
        sender: Sender,
        *,
        enabled: bool = True,
        max_busy_chats: int = 100,
        busy_chats: Callable[[], int] | None = None,
    ) -> None:
        self._sender = sender
        self._enabled = enabled
        self._max_busy_chats = max_busy_chats
        # chats being answered right now, this one included (the wiring reads the turn
        # slots); by default, the streams
        self._busy_chats: Callable[[], int] = busy_chats or (lambda: len(self._stops))
        self._stops: dict[tuple[int, int], asyncio.Event] = {}
        self.stops_pressed = 0
        self.streams_declined = 0  # turns answered whole because too many chats were busy

    @property
    def enabled(self) -> bool:
        return self._enabled

    def can_stream(self) -> bool:
        """Whether a new turn may stream now: drafts are on and at most `max_busy_chats`
        chats (this one included) are being answered."""
        if not self._enabled:
            return False
        if self._busy_chats() > self._max_busy_chats:
            self.streams_declined += 1
            return False
        return True

    def disable(self) -> None:
        """The Bot API server rejected a draft: typing indicators from now on (logged once)."""
        if self._enabled:
            self._enabled = False
            log.warning(
                "the Bot API server rejected sendMessageDraft; streamed answers are off "
                "until restart (customers see the typing indicator and the whole answer)"
            )

    @contextlib.asynccontextmanager
    async def stream(self, chat_id: int, update_id: int) -> AsyncIterator[DraftStream]:
        """One turn's draft, its stop button registered while the block runs."""
        stream = DraftStream(self, chat_id, draft_id_for(update_id))
        key = (chat_id, stream.draft_id)
        self._stops[key] = stream.stop
        stream.start()
        try:
            yield stream
        finally:
            if self._stops.get(key) is stream.stop:
                del self._stops[key]
            await stream.close()

    def signal(self, payload: dict[str, Any]) -> None:
        """Intake hook, called as soon as an update is stored (before the chat's queue):
        a stop press reaches its running turn at once, not after it."""
        stopped = payload.get("stopped_message_generation")
        if not isinstance(stopped, dict):
            return
        chat = stopped.get("chat")
        chat_id = chat.get("id") if isinstance(chat, dict) else None
        draft_id = stopped.get("draft_id")
        if not isinstance(chat_id, int) or not isinstance(draft_id, int):
            return
        event = self._stops.get((chat_id, draft_id))
        if event is not None and not event.is_set():
            self.stops_pressed += 1
            event.set()
            log.info("stop pressed in chat %s", chat_id)

    async def send(self, chat_id: int, draft_id: int, text: str) -> bool:
        """Send one draft (Markdown, "" for the placeholder); True if it is shown."""
        if not self._enabled:
            return False
        html = ""
        if text:
            parts = markdown_to_messages(text)
            if not parts:
                return False
            html = parts[-1].html  # the part being written; each part fits 4096
        status = await self._sender.send_draft(
            chat_id, draft_id, html, parse_mode="HTML" if html else None
        )
        if status == "rejected":
            self.disable()
        return status == "shown"

    async def typing(self, chat_id: int) -> None:
        try:
            await self._sender.call(SendChatAction(chat_id=chat_id, action=ChatAction.TYPING))
        except Exception as exc:  # cosmetic: never fail a turn over it
            log.debug("chat action failed in chat %s: %s", chat_id, type(exc).__name__)


class DraftStream:
    """One turn's draft (a `services.answer_stream.DraftSink`); see the module docstring."""

    def __init__(self, drafts: Drafts, chat_id: int, draft_id: int) -> None:
        self._drafts = drafts
        self.chat_id = chat_id
        self.draft_id = draft_id
        self.stop = asyncio.Event()
        self._pending: str | None = ""  # "" = the placeholder, first of all
        self._last = ""
        self._visible = False  # a draft was shown this turn
        self._wake = asyncio.Event()
        self._task: asyncio.Task[None] | None = None

    def start(self) -> None:
        self._task = asyncio.create_task(self._run(), name=f"draft-{self.chat_id}")

    def show(self, text: str) -> None:
        if not self.stop.is_set():
            self._pending = text
            self._wake.set()

    def thinking(self) -> None:
        self.show("")

    async def close(self) -> None:
        if self._task is not None:
            self._task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await self._task

    async def _run(self) -> None:
        while True:
            self._wake.clear()
            if not self._drafts.enabled:
                self._pending = None
            if self._pending is not None:
                text, self._pending = self._pending, None
                if await self._drafts.send(self.chat_id, self.draft_id, text):
                    self._visible = True
                    self._last = text
                continue
            drafting = self._visible and self._drafts.enabled
            if not drafting:
                await self._drafts.typing(self.chat_id)
                if self._wake.is_set():
                    continue
            try:
                async with asyncio.timeout(DRAFT_REFRESH_S if drafting else TYPING_REFRESH_S):
                    await self._wake.wait()
            except TimeoutError:
                if drafting and self._pending is None and not self.stop.is_set():
                    self._pending = self._last  # shown again before it expires
