"""What one Bot API attempt's outcome means for the next step — a pure decision.

The sender makes a request and hands the result (or the exception) to `classify`, which
says what to do next. Keeping this a pure function of (error, method, attempt number,
policy) puts every rule about Telegram's failure modes in one table-testable place:

* Telegram's `retry_after` is a promise that a later attempt will be accepted, so it is
  honoured — a bounded number of times, for a bounded wait (`retry_after`).
* A request that never reached Telegram (connection refused, connect timeout) or that
  Telegram refused with a 5xx can be repeated safely: exponential backoff (`backoff`),
  with a larger budget for "never reached", because a short outage should not cost the
  customer the answer.
* A message-creating request whose response was lost (read timeout, dropped connection,
  a garbled response) may have been delivered. Repeating it could show the customer the
  same answer twice, so it is `unknown` and never resent; the caller decides.
* Everything else is `failed` with a short reason code (safe to store and log); a forum
  topic that no longer exists is `thread_not_found` (its sender may recreate it). A
  formatting rejection is a failed bad request flagged `formatting_rejected`: the sender
  may then send the plain-text version instead.
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from typing import Literal

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
from aiohttp import ClientConnectorError, ConnectionTimeoutError

from bot.runtime.channel import FORBIDDEN, THREAD_NOT_FOUND

OutcomeKind = Literal["delivered", "retry_after", "backoff", "unknown", "failed"]
AttemptError = TelegramAPIError | ClientDecodeError

# Methods whose repetition creates a second visible message. Everything else the bot
# calls (sendChatAction, setMyCommands, getMe, deleteWebhook, ...) is safe to repeat;
# so is a draft (sendMessageDraft), which replaces itself and leaves nothing in the chat.
_MESSAGE_PREFIXES = ("send", "forward", "copy")
_NOT_MESSAGES = frozenset({"sendChatAction", "sendMessageDraft"})

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

# Telegram answered and refused for good: a retry would fail the same way. Checked in
# order (first match wins); any other Telegram error is "telegram_error".
_FINAL_REFUSALS: tuple[tuple[type[TelegramAPIError], str], ...] = (
    (TelegramEntityTooLarge, "too_large"),
    (TelegramMigrateToChat, "chat_migrated"),
    (TelegramForbiddenError, FORBIDDEN),
    (TelegramUnauthorizedError, "unauthorized"),
    (TelegramNotFound, "not_found"),
    (TelegramBadRequest, "bad_request"),
)


def creates_message(method: str) -> bool:
    """True for Bot API methods whose every successful call shows the chat a new message."""
    return method.startswith(_MESSAGE_PREFIXES) and method not in _NOT_MESSAGES


@dataclass(frozen=True, slots=True)
class RetryPolicy:
    """How hard to try. Defaults: 5 attempts for flood control, 5xx and bad responses,
    8 (about 45 s of backoff) for a request that certainly never reached Telegram, and no
    flood-control wait longer than 120 s."""

    max_attempts: int = 5
    max_network_attempts: int = 8
    max_retry_after_s: float = 120.0
    backoff_base_s: float = 0.5
    backoff_max_s: float = 15.0

    def __post_init__(self) -> None:
        if self.max_attempts < 1:
            raise ValueError("max_attempts must be at least 1")

    @property
    def never_reached_attempts(self) -> int:
        """The budget for requests that never reached Telegram (never below the other)."""
        return max(self.max_attempts, self.max_network_attempts)

    def single_attempt(self) -> RetryPolicy:
        """The same policy with one attempt for everything (cosmetic calls)."""
        return replace(self, max_attempts=1, max_network_attempts=1)

    def backoff_s(self, attempt: int) -> float:
        """Exponential backoff after the `attempt`-th try: base, 2·base, … up to the max."""
        return float(min(self.backoff_max_s, self.backoff_base_s * 2 ** (attempt - 1)))


@dataclass(frozen=True, slots=True)
class Verdict:
    """The decision on one attempt.

    `reason`: for `failed`/`unknown` the short code to report; for the retry kinds the
    code the request will fail with if the budget runs out. `delay_s`: how long to wait
    before the next attempt. `attempts`: the budget that applied (for logs).
    """

    kind: OutcomeKind
    reason: str | None = None
    delay_s: float = 0.0
    attempts: int = 1
    formatting_rejected: bool = False

    @property
    def retry(self) -> bool:
        return self.kind in ("retry_after", "backoff")


DELIVERED = Verdict("delivered")


def classify(
    error: AttemptError | None, *, method: str, attempt: int, policy: RetryPolicy
) -> Verdict:
    """Decide what the `attempt`-th call of `method` ending with `error` means.

    `error` is None when the call returned a result. Attempts count from 1.
    """
    if error is None:
        return DELIVERED
    if isinstance(error, TelegramRetryAfter):
        return _flood_control(error, attempt, policy)
    if isinstance(error, TelegramNetworkError) and not isinstance(error, TelegramEntityTooLarge):
        return _network(error, creates_message(method), attempt, policy)
    if isinstance(error, TelegramServerError):
        # Telegram answered with an error: the request was not carried out.
        return _backoff_or_fail("server_error", attempt, policy.max_attempts, policy)
    if isinstance(error, ClientDecodeError):
        # Something answered, but not with a Bot API response (e.g. a proxy page).
        if creates_message(method):
            return Verdict("unknown", "bad_response")
        return _backoff_or_fail("bad_response", attempt, policy.max_attempts, policy)
    return _refused(error)


def _flood_control(error: TelegramRetryAfter, attempt: int, policy: RetryPolicy) -> Verdict:
    budget = policy.max_attempts
    if attempt >= budget or error.retry_after > policy.max_retry_after_s:
        return Verdict("failed", "flood_control", attempts=budget)
    return Verdict(
        "retry_after", "flood_control", delay_s=float(error.retry_after), attempts=budget
    )


def _network(
    error: TelegramNetworkError, visible: bool, attempt: int, policy: RetryPolicy
) -> Verdict:
    if not never_reached_telegram(error):
        if visible:  # it may have arrived: a resend could show the message twice
            return Verdict("unknown", _lost_response_reason(error))
        return _backoff_or_fail("network", attempt, policy.max_attempts, policy)
    return _backoff_or_fail("network", attempt, policy.never_reached_attempts, policy)


def _backoff_or_fail(reason: str, attempt: int, budget: int, policy: RetryPolicy) -> Verdict:
    if attempt >= budget:
        return Verdict("failed", reason, attempts=budget)
    return Verdict("backoff", reason, delay_s=policy.backoff_s(attempt), attempts=budget)


# Telegram's description when a message is sent into a forum topic that no longer exists
# (an operator deleted it): the handoff recreates the topic (bot/telegram/handoff.py).
_THREAD_NOT_FOUND_MARKER = "message thread not found"


def _refused(error: TelegramAPIError) -> Verdict:
    if isinstance(error, TelegramBadRequest) and _THREAD_NOT_FOUND_MARKER in error.message.lower():
        return Verdict("failed", THREAD_NOT_FOUND)
    for error_type, reason in _FINAL_REFUSALS:
        if isinstance(error, error_type):
            return Verdict("failed", reason, formatting_rejected=_is_formatting_error(error))
    return Verdict("failed", "telegram_error")


def _is_formatting_error(error: TelegramAPIError) -> bool:
    if not isinstance(error, TelegramBadRequest):
        return False
    description = error.message.lower()
    return any(marker in description for marker in _FORMATTING_ERROR_MARKERS)


def never_reached_telegram(error: TelegramNetworkError) -> bool:
    """True when the request certainly was not sent: the connection was never made."""
    cause = error.__cause__
    return isinstance(cause, ClientConnectorError | ConnectionTimeoutError | ConnectionRefusedError)


def _lost_response_reason(error: TelegramNetworkError) -> str:
    return "timeout" if isinstance(error.__cause__, TimeoutError) else "connection_lost"
