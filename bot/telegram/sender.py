"""The one way the bot talks to Telegram: pace → call → classify → act.

aiogram leaves flood control, transient network failures and message pacing to the
application. Every outgoing call goes through `Sender`, which composes two parts:

* `bot.telegram.pacer.Pacer` — one message per `per_chat_interval_s` in each chat and at most
  `global_per_second` requests overall;
* `bot.telegram.send_outcome.classify` — a pure decision on each attempt: delivered, retry after
  Telegram's `retry_after`, retry with backoff, `unknown` (the response was lost; a
  message is never resent blindly, the caller decides — the inbox records it) or failed
  with a short reason.

The sender only acts on the decision: sleeps and tries again, sends the plain-text
version when Telegram rejects the formatting, or reports the result. It does not order
anything: a chat's messages are already sequential when they get here (the intake runs
one update of a chat at a time), so pacing is all a chat needs.

Typing indicators are cosmetic: tried once, and skipped when the global queue is long,
so they never delay an answer. Drafts (`send_draft`, sendMessageDraft) are lower still:
sent only when the global rate has a slot free within one slot's time, once, never
retried and never queued behind other requests, and they do not move the chat's next
message; under load they are simply dropped (the final answer is a normal message).

A request that does not come through the sender — a handler calling `message.answer()`
or `bot.send_message(...)` — is still paced: `Sender` installs `PacingMiddleware` on the
bot's session. It gets no retries and no classification, because only a caller that goes
through the sender can be told the outcome (and a lost response of a message must be
reported, not silently retried).
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import Awaitable, Callable, Iterator
from contextlib import contextmanager
from contextvars import ContextVar
from dataclasses import dataclass
from typing import Any, Generic, Literal, TypeVar

from aiogram import Bot
from aiogram.client.session.middlewares.base import (
    BaseRequestMiddleware,
    NextRequestMiddlewareType,
)
from aiogram.exceptions import (
    ClientDecodeError,
    TelegramAPIError,
    TelegramBadRequest,
    TelegramNetworkError,
    TelegramNotFound,
    TelegramRetryAfter,
)
from aiogram.methods import (
    CopyMessage,
    Response,
    SendMessage,
    SendMessageDraft,
    SendPhoto,
    TelegramMethod,
)
from aiogram.methods.base import TelegramType
from aiogram.types import (
    BufferedInputFile,
    ForceReply,
    InlineKeyboardMarkup,
    Message,
    MessageId,
    ReplyKeyboardMarkup,
    ReplyKeyboardRemove,
    ReplyParameters,
)

from bot.runtime.channel import SendResult as SendResult
from bot.runtime.channel import SendStatus
from bot.telegram.pacer import ChatId, Pacer
from bot.telegram.send_outcome import AttemptError, RetryPolicy, Verdict, classify, creates_message
from services.text_visibility import without_unsafe_controls

logger = logging.getLogger(__name__)

T = TypeVar("T")

# shown; shed (no free slot, or flood control); rejected (the server refuses drafts: a
# bad request or an unknown method); failed (anything else: network, 5xx, blocked, …)
DraftStatus = Literal["shown", "shed", "rejected", "failed"]
ReplyMarkup = InlineKeyboardMarkup | ReplyKeyboardMarkup | ReplyKeyboardRemove | ForceReply

# Cosmetic calls (the typing indicator, refreshed every few seconds by the caller) must
# not crowd out answers: one attempt, and skipped when the global queue is long.
_COSMETIC = frozenset({"sendChatAction"})
_COSMETIC_MAX_BACKLOG_S = 0.5
# Never paced: the long poll that receives updates (it is not an outgoing message).
_UNPACED = frozenset({"getUpdates"})

_RETRY_LOG = {
    "flood_control": "flood control on",
    "network": "network error on",
    "server_error": "telegram server error on",
    "bad_response": "bad response to",
}

# Set while the sender makes a request, so the pacing middleware lets it through.
_paced_by_sender: ContextVar[bool] = ContextVar("paced_by_sender", default=False)


# `failed` reasons that mean "Telegram certainly did not deliver it, and a later try may
# work" (it was unreachable, overloaded or asked us to wait too long); a stored answer that
# failed this way is tried again on the next start. Other reasons (blocked by the user,
# bad request, …) would fail the same way again.
RETRYABLE_FAILURES = frozenset({"network", "server_error", "flood_control"})


@dataclass(frozen=True, slots=True)
class _Attempted(Generic[T]):
    """The final verdict on a method after its retries, with the result or last error."""

    verdict: Verdict
    value: T | None = None
    error: AttemptError | None = None


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
        self._bot = bot
        self._policy = RetryPolicy(
            max_attempts=max_attempts,
            max_network_attempts=max_network_attempts,
            max_retry_after_s=max_retry_after_s,
            backoff_base_s=backoff_base_s,
            backoff_max_s=backoff_max_s,
        )
        self._pacer = Pacer(
            per_chat_interval_s=per_chat_interval_s,
            global_per_second=global_per_second,
            clock=clock,
            sleep=sleep,
        )
        self._sleep = sleep
        # Flood control (429 retry_after) waited out so far; read by the metrics at scrape
        # time, so the send path only adds two numbers.
        self.flood_waits = 0
        self.flood_wait_s = 0.0
        bot.session.middleware(PacingMiddleware(self._pacer))

    @property
    def bot(self) -> Bot:
        return self._bot

    @property
    def tracked_chats(self) -> int:
        """How many chats currently hold pacing state (inside their interval)."""
        return self._pacer.tracked_chats

    @property
    def queued_requests(self) -> int:
        """Outgoing requests waiting for their pacing turn (the send queue, for metrics)."""
        return self._pacer.waiting

    @property
    def global_per_second(self) -> float:
        return self._pacer.global_per_second

    def set_global_rate(self, per_second: float) -> None:
        """This instance's share of Telegram's global rate (several instances share it)."""
        self._pacer.set_global_rate(per_second)

    async def send_text(
        self,
        chat_id: ChatId,
        text: str,
        *,
        parse_mode: str | None = None,
        plain_text: str | None = None,
        reply_to_message_id: int | None = None,
        reply_markup: ReplyMarkup | None = None,
        message_thread_id: int | None = None,
        business_connection_id: str | None = None,
    ) -> SendResult:
        """Send one message; if Telegram rejects the formatting, send `plain_text` instead.

        `plain_text` defaults to `text` sent without a parse mode. `reply_markup` (a
        keyboard) goes with the message and with its plain-text fallback.
        `message_thread_id`: the forum topic to post in (the operators' group).
        `business_connection_id`: sent on behalf of the owner of that business connection.
        """
        # the one place answers, notices and briefs leave for Telegram: no control or bidi
        # override characters from model output or names reach a reader
        text = without_unsafe_controls(text)
        plain_text = None if plain_text is None else without_unsafe_controls(plain_text)
        reply = (
            ReplyParameters(message_id=reply_to_message_id, allow_sending_without_reply=True)
            if reply_to_message_id is not None
            else None
        )
        method = SendMessage(
            chat_id=chat_id,
            text=text,
            parse_mode=parse_mode,
            reply_parameters=reply,
            reply_markup=reply_markup,
            message_thread_id=message_thread_id,
            business_connection_id=business_connection_id,
        )
        await self._pacer.chat_turn(chat_id)
        attempted = await self._attempt(method, chat_id, self._policy)
        if parse_mode and attempted.verdict.formatting_rejected:
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
                reply_markup=reply_markup,
                message_thread_id=message_thread_id,
                business_connection_id=business_connection_id,
            )
            # the rejected request showed nothing, so the fallback needs no chat turn
            attempted = await self._attempt(fallback, chat_id, self._policy)
        return self._result(chat_id, "sendMessage", attempted)

    async def send_photo(
        self, chat_id: ChatId, png_bytes: bytes, *, caption: str | None = None
    ) -> SendResult:
        """Send a PNG image (e.g. a chart) with an optional plain-text caption."""
        method = SendPhoto(
            chat_id=chat_id,
            photo=BufferedInputFile(png_bytes, filename="image.png"),
            caption=caption,
            parse_mode=None,
        )
        await self._pacer.chat_turn(chat_id)
        attempted = await self._attempt(method, chat_id, self._policy)
        return self._result(chat_id, "sendPhoto", attempted)

    async def copy_message(
        self,
        chat_id: ChatId,
        *,
        from_chat_id: int,
        message_id: int,
        message_thread_id: int | None = None,
    ) -> SendResult:
        """Copy a message (text, photo, document, …) from one chat to another, as is.

        The handoff mirrors customers' messages into the operators' topic and relays
        operators' messages to the customer this way; a copy carries no "forwarded from".
        """
        method = CopyMessage(
            chat_id=chat_id,
            from_chat_id=from_chat_id,
            message_id=message_id,
            message_thread_id=message_thread_id,
        )
        await self._pacer.chat_turn(chat_id)
        attempted = await self._attempt(method, chat_id, self._policy)
        return self._result(chat_id, "copyMessage", attempted)

    async def send_draft(
        self, chat_id: int, draft_id: int, text: str, *, parse_mode: str | None = None
    ) -> DraftStatus:
        """Show (or replace) the chat's draft `draft_id`; an empty text shows the
        "Thinking…" placeholder. Lowest priority: see the module docstring."""
        if not await self._pacer.try_request_turn():
            return "shed"
        method = SendMessageDraft(
            chat_id=chat_id,
            draft_id=draft_id,
            text=without_unsafe_controls(text),
            parse_mode=parse_mode if text else None,
            can_stop=True,
            keep_on_stop=True,
        )
        try:
            with _through_sender():
                await self._bot(method)
        except TelegramRetryAfter:
            return "shed"
        except (TelegramBadRequest, TelegramNotFound) as error:
            verdict = classify(error, method="sendMessageDraft", attempt=1, policy=self._policy)
            if verdict.formatting_rejected:
                return "failed"  # this text only; the next draft is formatted anew
            logger.info(
                "sendMessageDraft to chat %s refused: %s",
                chat_id,
                _describe(error, self._bot.token),
            )
            return "rejected"
        except (TelegramAPIError, ClientDecodeError) as error:
            logger.debug("sendMessageDraft to chat %s: %s", chat_id, type(error).__name__)
            return "failed"
        return "shown"

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
        if cosmetic and self._pacer.global_backlog_s() > _COSMETIC_MAX_BACKLOG_S:
            return False  # type: ignore[return-value]  # sendChatAction returns a bool
        policy = self._policy.single_attempt() if cosmetic else self._policy
        attempted = await self._attempt(method, None, policy)
        if attempted.error is not None:
            raise attempted.error from None
        return attempted.value  # type: ignore[return-value]  # set when there is no error

    async def _attempt(
        self, method: TelegramMethod[T], chat_id: ChatId | None, policy: RetryPolicy
    ) -> _Attempted[T]:
        """Pace, call, classify, act — until the verdict is final.

        `chat_id` is set when the method is a chat message: each request then moves the
        chat's next allowed time (see `Pacer.request_turn`).
        """
        name = method.__api_method__
        attempt = 0
        while True:
            attempt += 1
            await self._pacer.request_turn(chat_id)
            try:
                with _through_sender():
                    value = await self._bot(method)
            except (TelegramAPIError, ClientDecodeError) as error:
                verdict = classify(error, method=name, attempt=attempt, policy=policy)
                if not verdict.retry:
                    return _Attempted(verdict, error=error)
                _log_retry(name, verdict, attempt, error)
                if verdict.kind == "retry_after":
                    self.flood_waits += 1
                    self.flood_wait_s += verdict.delay_s
                await self._sleep(verdict.delay_s)
            else:
                delivered = classify(None, method=name, attempt=attempt, policy=policy)
                return _Attempted(delivered, value)

    def _result(
        self, chat_id: ChatId, name: str, attempted: _Attempted[Message] | _Attempted[MessageId]
    ) -> SendResult:
        verdict, message = attempted.verdict, attempted.value
        if verdict.kind == "delivered" and message is not None:
            return SendResult(status="delivered", message_id=message.message_id)
        status: SendStatus = "unknown" if verdict.kind == "unknown" else "failed"
        logger.warning(
            "%s to chat %s ended %s (%s): %s",
            name,
            chat_id,
            status,
            verdict.reason,
            _describe(attempted.error, self._bot.token),
        )
        return SendResult(status=status, message_id=None, reason=verdict.reason)


class PacingMiddleware(BaseRequestMiddleware):
    """Paces requests made on the bot outside the `Sender` (the sender paces its own).

    A message gets the chat's turn and a global slot, anything else a global slot; the
    long poll (`getUpdates`) is never paced. No retries here: see the module docstring.
    """

    def __init__(self, pacer: Pacer) -> None:
        self._pacer = pacer

    async def __call__(
        self,
        make_request: NextRequestMiddlewareType[TelegramType],
        bot: Bot,
        method: TelegramMethod[TelegramType],
    ) -> Response[TelegramType]:
        name = method.__api_method__
        if not _paced_by_sender.get() and name not in _UNPACED:
            chat_id = getattr(method, "chat_id", None) if creates_message(name) else None
            if isinstance(chat_id, int | str):
                await self._pacer.chat_turn(chat_id)
                await self._pacer.request_turn(chat_id)
            else:
                await self._pacer.request_turn()
        return await make_request(bot, method)


class RequestGuard(BaseRequestMiddleware):
    """A check every request passes right before it is made, the sender's too: installed
    on the bot's session after the `Sender` (`guard_requests`), so it runs inside the
    pacing, after any wait. With several instances it stops a chat's work whose claim may
    have passed to another instance (bot/runtime/claimed.py, `ClaimFence.check`) before it sends.
    """

    def __init__(self, check: Callable[[], None]) -> None:
        self._check = check

    async def __call__(
        self,
        make_request: NextRequestMiddlewareType[TelegramType],
        bot: Bot,
        method: TelegramMethod[TelegramType],
    ) -> Response[TelegramType]:
        self._check()
        return await make_request(bot, method)


def guard_requests(sender: Sender, check: Callable[[], None]) -> None:
    """`check` before every request of `sender`'s bot (once the sender is built: the
    session's middlewares run in the order they were added)."""
    sender.bot.session.middleware(RequestGuard(check))


@contextmanager
def _through_sender() -> Iterator[None]:
    token = _paced_by_sender.set(True)
    try:
        yield
    finally:
        _paced_by_sender.reset(token)


def _log_retry(name: str, verdict: Verdict, attempt: int, error: AttemptError) -> None:
    what = _RETRY_LOG.get(verdict.reason or "", "error on")
    logger.warning(
        "%s %s (%s); retry in %.1f s (attempt %d/%d)",
        what,
        name,
        _cause_name(error),
        verdict.delay_s,
        attempt,
        verdict.attempts,
    )


def _cause_name(error: BaseException) -> str:
    cause = error.__cause__
    return type(cause).__name__ if cause is not None else type(error).__name__


def _describe(error: BaseException | None, token: str) -> str:
    """A log-safe description: Telegram's own text for API errors, a type name otherwise."""
    if error is None:
        return "no message in the response"
    if isinstance(error, TelegramNetworkError):
        return _cause_name(error)
    text = error.message if isinstance(error, TelegramAPIError) else type(error).__name__
    return text.replace(token, "***") if token else text
