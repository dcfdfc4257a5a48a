"""Log lines never carry the input a pydantic validation error quotes."""

from __future__ import annotations

import logging
import sys

from aiogram.types import Update
from aiohttp.http_exceptions import BadHttpMessage
from pydantic import ValidationError

from bot.runtime.logs import LOG_FORMAT, ClientErrorFilter, SafeFormatter, validation_summary

SECRET_TEXT = "very-private-text-123"
SECRET_NAME = "Private-Name-456"
BAD = {
    "update_id": 1,
    "message": {
        "message_id": 1,
        "date": SECRET_TEXT,
        "chat": {"id": 1, "type": "private", "first_name": SECRET_NAME},
        "from": {"id": 1, "is_bot": SECRET_NAME, "first_name": SECRET_NAME},
        "text": SECRET_TEXT,
    },
}


def validation_error() -> ValidationError:
    try:
        Update.model_validate(BAD)
    except ValidationError as exc:
        return exc
    raise AssertionError("expected a ValidationError")


def record(exc: BaseException | None, msg: str = "failed", *args: object) -> logging.LogRecord:
    exc_info = (type(exc), exc, exc.__traceback__) if exc is not None else None
    return logging.LogRecord("x", logging.ERROR, __file__, 1, msg, args, exc_info)


def test_summary_names_places_and_kinds_only() -> None:
    summary = validation_summary(validation_error())
    assert "message.date" in summary and "message.from.is_bot" in summary
    assert SECRET_TEXT not in summary and SECRET_NAME not in summary


def test_tracebacks_and_arguments_are_summarised_even_when_chained() -> None:
    formatter = SafeFormatter(LOG_FORMAT)
    error = validation_error()
    assert SECRET_TEXT in str(error)  # what pydantic itself would print
    try:
        try:
            raise error
        except ValidationError as inner:
            raise RuntimeError("handler failed") from inner
    except RuntimeError as outer:
        text = formatter.format(record(outer))
    assert "handler failed" in text and "validation error(s) for Update" in text
    assert SECRET_TEXT not in text and SECRET_NAME not in text

    text = formatter.format(record(None, "update %s: %s", 1, error))
    assert SECRET_TEXT not in text and "message.date" in text


def test_broken_http_from_a_client_is_no_traceback() -> None:
    keep = ClientErrorFilter()
    try:
        raise BadHttpMessage("Invalid header")
    except BadHttpMessage as exc:
        bad = record(exc, "Error handling request from %s", "127.0.0.1")
    root = logging.getLogger()
    level = root.level
    try:
        root.setLevel(logging.INFO)
        assert not keep.filter(bad)
        root.setLevel(logging.DEBUG)
        assert keep.filter(bad)
        assert bad.exc_info is None and bad.levelname == "DEBUG"
    finally:
        root.setLevel(level)
    assert keep.filter(record(ValueError("ours")))  # other errors are left alone
    assert sys.exc_info() == (None, None, None)


def test_json_lines_carry_the_bound_ids_and_the_scrubbed_text() -> None:
    import json

    from bot.runtime.logs import build_formatter
    from services.log_context import bound_turn, bound_update

    formatter = build_formatter("json")
    error = validation_error()
    with bound_update(77, 42), bound_turn("t" * 32):
        try:
            raise RuntimeError("handler failed") from error
        except RuntimeError as outer:
            inside = json.loads(formatter.format(record(outer, "update %s: %s", 77, error)))
    outside = json.loads(formatter.format(record(None, "ready")))

    assert inside["update_id"] == 77 and inside["chat_id"] == 42 and inside["turn_id"] == "t" * 32
    assert inside["level"] == "ERROR" and inside["logger"] == "x"
    assert inside["message"].startswith("update 77: ")
    assert "validation error(s) for Update" in inside["message"]
    assert "handler failed" in inside["exception"]
    for entry in (inside, outside):
        assert SECRET_TEXT not in json.dumps(entry) and SECRET_NAME not in json.dumps(entry)
    assert outside["message"] == "ready"
    assert not {"update_id", "chat_id", "turn_id", "exception"} & outside.keys()
    assert "\n" not in formatter.format(record(error))  # one line, even with a traceback


def test_text_stays_the_default_format() -> None:
    from bot.runtime.logs import JsonFormatter, build_formatter

    assert not isinstance(build_formatter(), JsonFormatter)
    assert isinstance(build_formatter("json"), JsonFormatter)
