"""Every case of the attempt classifier, as a table: error x method x attempt -> verdict."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

import pytest
from aiogram.exceptions import (
    ClientDecodeError,
    TelegramBadRequest,
    TelegramConflictError,
    TelegramEntityTooLarge,
    TelegramForbiddenError,
    TelegramMigrateToChat,
    TelegramNetworkError,
    TelegramNotFound,
    TelegramRetryAfter,
    TelegramServerError,
    TelegramUnauthorizedError,
)
from aiogram.methods import GetMe
from aiohttp import ClientConnectorError, ConnectionTimeoutError, ServerDisconnectedError
from aiohttp.client_reqrep import ConnectionKey

from bot.telegram.send_outcome import (
    DELIVERED,
    AttemptError,
    OutcomeKind,
    RetryPolicy,
    Verdict,
    classify,
    creates_message,
)

POLICY = RetryPolicy()  # 5 attempts, 8 when Telegram was never reached, 120 s cap
_METHOD = GetMe()  # aiogram errors need a method; the classifier reads only the name


def network(cause: BaseException, message: str = "network") -> AttemptError:
    error = TelegramNetworkError(method=_METHOD, message=message)
    error.__cause__ = cause
    return error


def refused_connection() -> AttemptError:
    key = ConnectionKey("api.telegram.org", 443, True, True, None, None, None)
    return network(ClientConnectorError(key, OSError(111, "Connection refused")))


def flood(seconds: int) -> AttemptError:
    return TelegramRetryAfter(method=_METHOD, message="Too Many Requests", retry_after=seconds)


def bad_request(description: str) -> AttemptError:
    return TelegramBadRequest(method=_METHOD, message=f"Bad Request: {description}")


def decode_error() -> AttemptError:
    return ClientDecodeError("not JSON", ValueError("<html>"), "<html>proxy</html>")


@dataclass(frozen=True)
class Case:
    error: Callable[[], AttemptError] | None
    method: str
    attempt: int
    expected: Verdict
    policy: RetryPolicy = POLICY


CASES: dict[str, Case] = {
    # delivered
    "a result is delivered": Case(None, "sendMessage", 1, DELIVERED),
    # flood control: Telegram's wait, bounded in attempts and length
    "flood control is waited out": Case(
        lambda: flood(7),
        "sendMessage",
        1,
        Verdict("retry_after", "flood_control", delay_s=7.0, attempts=5),
    ),
    "flood control on the last attempt fails": Case(
        lambda: flood(1), "sendMessage", 5, Verdict("failed", "flood_control", attempts=5)
    ),
    "flood control longer than the cap fails at once": Case(
        lambda: flood(121), "sendMessage", 1, Verdict("failed", "flood_control", attempts=5)
    ),
    "flood control of exactly the cap is waited": Case(
        lambda: flood(120),
        "sendMessage",
        4,
        Verdict("retry_after", "flood_control", delay_s=120.0, attempts=5),
    ),
    # never reached Telegram: backoff, the larger budget
    "connection refused (aiohttp) backs off": Case(
        refused_connection,
        "sendMessage",
        1,
        Verdict("backoff", "network", delay_s=0.5, attempts=8),
    ),
    "connection refused (OS) backs off exponentially": Case(
        lambda: network(ConnectionRefusedError()),
        "sendMessage",
        3,
        Verdict("backoff", "network", delay_s=2.0, attempts=8),
    ),
    "connect timeout backs off beyond the usual five attempts": Case(
        lambda: network(ConnectionTimeoutError()),
        "sendMessage",
        6,
        Verdict("backoff", "network", delay_s=15.0, attempts=8),
    ),
    "never reached on the eighth attempt fails": Case(
        refused_connection, "sendMessage", 8, Verdict("failed", "network", attempts=8)
    ),
    "a cosmetic call gets one attempt": Case(
        refused_connection,
        "sendChatAction",
        1,
        Verdict("failed", "network", attempts=1),
        POLICY.single_attempt(),
    ),
    # the response was lost: a message may have arrived and is never resent
    "read timeout of a message is unknown": Case(
        lambda: network(TimeoutError()), "sendMessage", 1, Verdict("unknown", "timeout")
    ),
    "dropped connection of a message is unknown": Case(
        lambda: network(ServerDisconnectedError()),
        "sendMessage",
        1,
        Verdict("unknown", "connection_lost"),
    ),
    "lost response of a photo is unknown": Case(
        lambda: network(TimeoutError()), "sendPhoto", 1, Verdict("unknown", "timeout")
    ),
    "lost response of a forward is unknown": Case(
        lambda: network(ConnectionResetError()),
        "forwardMessage",
        1,
        Verdict("unknown", "connection_lost"),
    ),
    "lost response of a repeatable call backs off": Case(
        lambda: network(TimeoutError()),
        "getMe",
        2,
        Verdict("backoff", "network", delay_s=1.0, attempts=5),
    ),
    "lost response of a typing indicator backs off": Case(
        lambda: network(TimeoutError()),
        "sendChatAction",
        1,
        Verdict("backoff", "network", delay_s=0.5, attempts=5),
    ),
    "lost response of a repeatable call fails after five": Case(
        lambda: network(TimeoutError()), "getMe", 5, Verdict("failed", "network", attempts=5)
    ),
    # Telegram answered 5xx: not carried out, retried within the usual budget
    "server error backs off": Case(
        lambda: TelegramServerError(method=_METHOD, message="Bad Gateway"),
        "sendMessage",
        1,
        Verdict("backoff", "server_error", delay_s=0.5, attempts=5),
    ),
    "server error on the last attempt fails": Case(
        lambda: TelegramServerError(method=_METHOD, message="Bad Gateway"),
        "sendMessage",
        5,
        Verdict("failed", "server_error", attempts=5),
    ),
    # something answered, but not the Bot API
    "garbled response to a message is unknown": Case(
        decode_error, "sendMessage", 1, Verdict("unknown", "bad_response")
    ),
    "garbled response to a repeatable call backs off": Case(
        decode_error,
        "setMyCommands",
        1,
        Verdict("backoff", "bad_response", delay_s=0.5, attempts=5),
    ),
    "garbled response on the last attempt fails": Case(
        decode_error, "getMe", 5, Verdict("failed", "bad_response", attempts=5)
    ),
    # Telegram refused for good
    "too large": Case(
        lambda: TelegramEntityTooLarge(method=_METHOD, message="Request Entity Too Large"),
        "sendPhoto",
        1,
        Verdict("failed", "too_large"),
    ),
    "group migrated": Case(
        lambda: TelegramMigrateToChat(method=_METHOD, message="migrated", migrate_to_chat_id=-9),
        "sendMessage",
        1,
        Verdict("failed", "chat_migrated"),
    ),
    "blocked by the user": Case(
        lambda: TelegramForbiddenError(method=_METHOD, message="Forbidden: bot was blocked"),
        "sendMessage",
        1,
        Verdict("failed", "forbidden"),
    ),
    "token rejected": Case(
        lambda: TelegramUnauthorizedError(method=_METHOD, message="Unauthorized"),
        "getMe",
        1,
        Verdict("failed", "unauthorized"),
    ),
    "not found": Case(
        lambda: TelegramNotFound(method=_METHOD, message="Not Found"),
        "deleteMessage",
        1,
        Verdict("failed", "not_found"),
    ),
    "chat not found is a bad request": Case(
        lambda: bad_request("chat not found"), "sendMessage", 1, Verdict("failed", "bad_request")
    ),
    "a deleted forum topic is its own reason (the handoff recreates it)": Case(
        lambda: bad_request("message thread not found"),
        "copyMessage",
        1,
        Verdict("failed", "thread_not_found"),
    ),
    "formatting rejected: plain-text fallback": Case(
        lambda: bad_request("can't parse entities: Can't find end of the entity at 4"),
        "sendMessage",
        1,
        Verdict("failed", "bad_request", formatting_rejected=True),
    ),
    "unclosed tag rejected: plain-text fallback": Case(
        lambda: bad_request("Unclosed start tag at byte offset 3"),
        "sendMessage",
        1,
        Verdict("failed", "bad_request", formatting_rejected=True),
    ),
    "any other Telegram error": Case(
        lambda: TelegramConflictError(method=_METHOD, message="Conflict"),
        "getUpdates",
        1,
        Verdict("failed", "telegram_error"),
    ),
}


@pytest.mark.parametrize("case", list(CASES.values()), ids=list(CASES))
def test_classify(case: Case) -> None:
    error = case.error() if case.error is not None else None
    verdict = classify(error, method=case.method, attempt=case.attempt, policy=case.policy)
    assert verdict == case.expected


@pytest.mark.parametrize(
    ("kind", "retries"),
    [
        ("delivered", False),
        ("retry_after", True),
        ("backoff", True),
        ("unknown", False),
        ("failed", False),
    ],
)
def test_only_the_retry_kinds_retry(kind: OutcomeKind, retries: bool) -> None:
    assert Verdict(kind).retry is retries


def test_never_reached_backoff_adds_up_to_about_45_seconds() -> None:
    waits = [POLICY.backoff_s(attempt) for attempt in range(1, POLICY.never_reached_attempts)]
    assert waits == [0.5, 1.0, 2.0, 4.0, 8.0, 15.0, 15.0]
    assert sum(waits) == 45.5


def test_the_never_reached_budget_is_never_below_the_usual_one() -> None:
    assert RetryPolicy(max_attempts=6, max_network_attempts=3).never_reached_attempts == 6
    with pytest.raises(ValueError):
        RetryPolicy(max_attempts=0)


@pytest.mark.parametrize(
    ("method", "creates"),
    [
        ("sendMessage", True),
        ("sendPhoto", True),
        ("forwardMessage", True),
        ("copyMessage", True),
        ("sendChatAction", False),
        ("getMe", False),
        ("setMyCommands", False),
    ],
)
def test_which_methods_create_messages(method: str, creates: bool) -> None:
    assert creates_message(method) is creates
