"""The one way the bot talks to Telegram: paced, retried where that is safe, never twice.

aiogram leaves flood control, transient network failures and message pacing to the
application. Doing that in one place keeps every outgoing call honest about three facts:

* Telegram's `retry_after` is a promise that a later attempt will be accepted, so it is
  honoured (a bounded number of times, for a bounded wait).
* A request that never reached Telegram (connection refused, connect timeout) can be
  repeated safely; it is retried with exponential backoff.
* A `sendMessage` whose response was lost (read timeout, dropped connection) may have
  been delivered. Repeating it could show the customer the same answer twice, so the
  result is reported as ``"unknown"`` and the caller decides (the inbox records it).

Sends are paced: one message per `per_chat_interval_s` in each chat, in call order, and at
most `global_per_second` requests overall. Per-chat state exists only while a chat is
busy or inside its interval, so idle chats cost no memory. Typing indicators are
cosmetic: tried once, and skipped when the global queue is long, so they never delay
an answer.
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections import OrderedDict
from collections.abc import AsyncIterator, Awaitable, Callable
from contextlib import asynccontextmanager
from dataclasses import dataclass, field
from typing import Any, Literal, TypeVar

from aiogram import Bot
from aiogram.exceptions import (
    ClientDecodeError,
    TelegramAPIError,
    TelegramBadRequest,
    TelegramEntityTooLarge,
    TelegramForbiddenError,
    TelegramMigrateToChat,
    TelegramNetworkError,
    TelegramNotFound,
    TelegramRetryAfter,
    TelegramServerError,
    TelegramUnauthorizedError,
)
from aiogram.methods import SendMessage, SendPhoto, TelegramMethod
from aiogram.types import BufferedInputFile, Message, ReplyParameters
from aiohttp import ClientConnectorError, ConnectionTimeoutError

logger = logging.getLogger(__name__)

T = TypeVar("T")

SendStatus = Literal["delivered", "unknown", "failed"]

# Methods whose repetition creates a second visible message. Everything else the bot
# calls (sendChatAction, setMyCommands, getMe, deleteWebhook, ...) is safe to repeat.
_NON_IDEMPOTENT_PREFIXES = ("send", "forward", "copy")
_IDEMPOTENT_SENDS = frozenset({"sendChatAction"})
# Cosmetic calls (the typing indicator, refreshed every few seconds by the caller) must
# not crowd out answers: one attempt, and skipped when the global queue is long.
_COSMETIC = frozenset({"sendChatAction"})
_COSMETIC_MAX_BACKLOG_S = 0.5

# Fragments of Telegram's descriptions when it cannot parse the requested formatting,
# e.g. "Bad Request: can't parse entities: Can't find end of the entity starting at ...".
_FORMATTING_ERROR_MARKERS = (
    "can't parse",
    "cant parse",
    "parse entities",
    "entity",
    "unsupported start tag",
    "unexpected end tag",
    "unclosed start tag",
)


@dataclass(frozen=True, slots=True)
class SendResult:
    """What happened to one outgoing message.

    ``delivered``: Telegram accepted it (``message_id`` is set). ``unknown``: the request
    may have been delivered but the answer was lost; do not resend automatically.
    ``failed``: it was certainly not delivered; ``reason`` is a short code safe to store
    and log (never a token or a raw exception text).
    """

    status: SendStatus
    message_id: int | None = None
    reason: str | None = None

    @property
    def delivered(self) -> bool:
        return self.status == "delivered"


class _Outcome(Exception):
    """Internal: the request ended without a result; carries the status and reason."""

    def __init__(self, status: SendStatus, reason: str, cause: BaseException) -> None:
        super().__init__(reason)
        self.status: SendStatus = status
        self.reason = reason
        self.cause = cause


@dataclass
class _ChatSlot:
    lock: asyncio.Lock = field(default_factory=asyncio.Lock)
    next_at: float = 0.0
    users: int = 0


class Sender:
    """Sends every outgoing Bot API request; see the module docstring for the guarantees."""

    def __init__(
        self,
        bot: Bot,
        *,
        per_chat_interval_s: float = 1.0,
        global_per_second: float = 25.0,
        max_attempts: int = 5,
        max_network_attempts: int = 8,
        max_retry_after_s: float = 120.0,
        backoff_base_s: float = 0.5,
        backoff_max_s: float = 15.0,
        clock: Callable[[], float] = time.monotonic,
        sleep: Callable[[float], Awaitable[Any]] = asyncio.sleep,
    ) -> None:
        if max_attempts < 1:
            raise ValueError("max_attempts must be at least 1")
        if global_per_second <= 0:
            raise ValueError("global_per_second must be positive")
        self._bot = bot
        self._per_chat_interval_s = max(0.0, per_chat_interval_s)
        self._global_interval_s = 1.0 / global_per_second
        self._max_attempts = max_attempts
        self._max_network_attempts = max(max_attempts, max_network_attempts)
        self._max_retry_after_s = max_retry_after_s
        self._backoff_base_s = backoff_base_s
        self._backoff_max_s = backoff_max_s
        self._clock = clock
        self._sleep = sleep
        self._chats: OrderedDict[int | str, _ChatSlot] = OrderedDict()
        self._next_global_at = 0.0

    @property
    def tracked_chats(self) -> int:
        """How many chats currently hold pacing state (busy or inside their interval)."""
        return len(self._chats)

    async def send_text(
        self,
        chat_id: int | str,
        text: str,
        *,
        parse_mode: str | None = None,
        plain_text: str | None = None,
        reply_to_message_id: int | None = None,
    ) -> SendResult:
        """Send one message; if Telegram rejects the formatting, send `plain_text` instead.

        `plain_text` defaults to `text` sent without a parse mode.
        """
        reply = (
            ReplyParameters(message_id=reply_to_message_id, allow_sending_without_reply=True)
            if reply_to_message_id is not None
            else None
        )
        async with self._chat_turn(chat_id) as slot:
            method = SendMessage(
                chat_id=chat_id, text=text, parse_mode=parse_mode, reply_parameters=reply
            )
            try:
                message = await self._attempt(method, slot)
                return _delivered(message)
            except _Outcome as outcome:
                if not (parse_mode and _is_formatting_error(outcome.cause)):
                    return self._report(chat_id, "sendMessage", outcome)
                logger.warning(
                    "telegram rejected %s formatting in chat %s; sending plain text",
                    parse_mode,
                    chat_id,
                )
            fallback = SendMessage(
                chat_id=chat_id,
                text=plain_text if plain_text is not None else text,
                parse_mode=None,
                entities=None,
                reply_parameters=reply,
            )
            try:
                return _delivered(await self._attempt(fallback, slot))
            except _Outcome as outcome:
                return self._report(chat_id, "sendMessage", outcome)

    async def send_photo(
        self, chat_id: int | str, png_bytes: bytes, *, caption: str | None = None
    ) -> SendResult:
        """Send a PNG image (e.g. a chart) with an optional plain-text caption."""
        method = SendPhoto(
            chat_id=chat_id,
            photo=BufferedInputFile(png_bytes, filename="image.png"),
            caption=caption,
            parse_mode=None,
        )
        async with self._chat_turn(chat_id) as slot:
            try:
                return _delivered(await self._attempt(method, slot))
            except _Outcome as outcome:
                return self._report(chat_id, "sendPhoto", outcome)

    async def call(self, method: TelegramMethod[T]) -> T:
        """Run any other Bot API method with the same flood-control and network handling.

        Returns the method's result. When the call cannot succeed, the last aiogram
        exception is raised (a `TelegramAPIError` subclass), as `bot(method)` would.
        Only the global rate applies here, so a typing indicator is never queued behind
        a chat's messages. A typing indicator (`sendChatAction`) is made once, without
        retries, and is skipped — returning False — when the global queue already holds
        more than half a second of requests, so under load indicators give way to answers.
        """
        cosmetic = method.__api_method__ in _COSMETIC
        if cosmetic and self._next_global_at - self._clock() > _COSMETIC_MAX_BACKLOG_S:
            return False  # type: ignore[return-value]  # sendChatAction returns a bool
        try:
            return await self._attempt(method, attempts=1 if cosmetic else None)
        except _Outcome as outcome:
            raise outcome.cause from None

    # -- pacing ---------------------------------------------------------------------

    @asynccontextmanager
    async def _chat_turn(self, chat_id: int | str) -> AsyncIterator[_ChatSlot]:
        """Hold the chat's turn: FIFO per chat, one request per interval.

        The interval is counted from the moment a request is actually made (see
        `_attempt`), so waiting for the global rate never shortens the gap in a chat.
        """
        slot = self._chats.get(chat_id)
        if slot is None:
            slot = _ChatSlot()
            self._chats[chat_id] = slot
        self._chats.move_to_end(chat_id)
        slot.users += 1
        try:
            async with slot.lock:
                wait = slot.next_at - self._clock()
                if wait > 0:
                    await self._sleep(wait)
                yield slot
        finally:
            slot.users -= 1
            self._chats.move_to_end(chat_id)
            self._forget_idle_chats()

    def _forget_idle_chats(self) -> None:
        now = self._clock()
        while self._chats:
            chat_id, slot = next(iter(self._chats.items()))
            if slot.users > 0 or slot.next_at > now:
                break
            del self._chats[chat_id]

    async def _global_turn(self) -> None:
        """Reserve the next global send slot (no burst: evenly spaced requests)."""
        now = self._clock()
        at = max(now, self._next_global_at)
        self._next_global_at = at + self._global_interval_s
        if at > now:
            await self._sleep(at - now)

    # -- retries ----------------------------------------------------------------------

    async def _attempt(
        self,
        method: TelegramMethod[T],
        slot: _ChatSlot | None = None,
        *,
        attempts: int | None = None,
    ) -> T:
        """Call the method with bounded retries; raise `_Outcome` when it cannot succeed.

        Flood control, server errors and bad responses get `max_attempts` in all; a
        request that certainly never reached Telegram (no connection) may be repeated
        more often, `max_network_attempts` (about 45 s of backoff by default), because
        a short outage should not cost the customer the answer. `attempts` overrides
        both; `slot` is the chat's pacing state when the call is a chat message.
        """
        max_attempts = attempts or self._max_attempts
        max_network_attempts = attempts or self._max_network_attempts
        name = method.__api_method__
        resend_is_visible = name.startswith(_NON_IDEMPOTENT_PREFIXES) and (
            name not in _IDEMPOTENT_SENDS
        )
        attempt = 0
        while True:
            attempt += 1
            last = attempt >= max_attempts
            await self._global_turn()
            if slot is not None:
                slot.next_at = self._clock() + self._per_chat_interval_s
            try:
                return await self._bot(method)
            except TelegramRetryAfter as exc:
                if last or exc.retry_after > self._max_retry_after_s:
                    raise _Outcome("failed", "flood_control", exc) from None
                logger.warning(
                    "flood control on %s: retry in %s s (attempt %d/%d)",
                    name,
                    exc.retry_after,
                    attempt,
                    max_attempts,
                )
                await self._sleep(float(exc.retry_after))
            except TelegramEntityTooLarge as exc:
                raise _Outcome("failed", "too_large", exc) from None
            except TelegramNetworkError as exc:
                not_sent = _never_reached_telegram(exc)
                if resend_is_visible and not not_sent:
                    raise _Outcome("unknown", _lost_response_reason(exc), exc) from None
                limit = max_network_attempts if not_sent else max_attempts
                if attempt >= limit:
                    raise _Outcome("failed", "network", exc) from None
                delay = self._backoff(attempt)
                logger.warning(
                    "network error on %s (%s); retry in %.1f s (attempt %d/%d)",
                    name,
                    _cause_name(exc),
                    delay,
                    attempt,
                    limit,
                )
                await self._sleep(delay)
            except TelegramServerError as exc:
                # Telegram answered with an error: the request was not carried out.
                if last:
                    raise _Outcome("failed", "server_error", exc) from None
                delay = self._backoff(attempt)
                logger.warning(
                    "telegram server error on %s; retry in %.1f s (attempt %d/%d)",
                    name,
                    delay,
                    attempt,
                    max_attempts,
                )
                await self._sleep(delay)
            except ClientDecodeError as exc:
                # Something answered, but not with a Bot API response (e.g. a proxy page).
                if resend_is_visible:
                    raise _Outcome("unknown", "bad_response", exc) from None
                if last:
                    raise _Outcome("failed", "bad_response", exc) from None
                await self._sleep(self._backoff(attempt))
            except TelegramMigrateToChat as exc:
                raise _Outcome("failed", "chat_migrated", exc) from None
            except TelegramForbiddenError as exc:
                raise _Outcome("failed", "forbidden", exc) from None
            except TelegramUnauthorizedError as exc:
                raise _Outcome("failed", "unauthorized", exc) from None
            except TelegramNotFound as exc:
                raise _Outcome("failed", "not_found", exc) from None
            except TelegramBadRequest as exc:
                raise _Outcome("failed", "bad_request", exc) from None
            except TelegramAPIError as exc:
                raise _Outcome("failed", "telegram_error", exc) from None

    def _backoff(self, attempt: int) -> float:
        return float(min(self._backoff_max_s, self._backoff_base_s * 2 ** (attempt - 1)))

    def _report(self, chat_id: int | str, name: str, outcome: _Outcome) -> SendResult:
        logger.warning(
            "%s to chat %s ended %s (%s): %s",
            name,
            chat_id,
            outcome.status,
            outcome.reason,
            _describe(outcome.cause, self._bot.token),
        )
        return SendResult(status=outcome.status, message_id=None, reason=outcome.reason)


# `failed` reasons that mean "Telegram certainly did not deliver it, and a later try may
# work" (it was unreachable, overloaded or asked us to wait too long); a stored answer that
# failed this way is tried again on the next start. Other reasons (blocked by the user,
# bad request, …) would fail the same way again.
RETRYABLE_FAILURES = frozenset({"network", "server_error", "flood_control"})


def _delivered(message: Message) -> SendResult:
    return SendResult(status="delivered", message_id=message.message_id)


def _is_formatting_error(exc: BaseException) -> bool:
    if not isinstance(exc, TelegramBadRequest):
        return False
    description = exc.message.lower()
    return any(marker in description for marker in _FORMATTING_ERROR_MARKERS)


def _never_reached_telegram(exc: TelegramNetworkError) -> bool:
    """True when the request certainly was not sent: the connection was never made."""
    cause = exc.__cause__
    return isinstance(cause, ClientConnectorError | ConnectionTimeoutError | ConnectionRefusedError)


def _lost_response_reason(exc: TelegramNetworkError) -> str:
    return "timeout" if isinstance(exc.__cause__, TimeoutError) else "connection_lost"


def _cause_name(exc: BaseException) -> str:
    cause = exc.__cause__
    return type(cause).__name__ if cause is not None else type(exc).__name__


def _describe(exc: BaseException, token: str) -> str:
    """A log-safe description: Telegram's own text for API errors, a type name otherwise."""
    if isinstance(exc, TelegramNetworkError):
        return _cause_name(exc)
    if isinstance(exc, TelegramAPIError):
        text = exc.message
    else:
        text = type(exc).__name__
    return text.replace(token, "***") if token else text
