"""Log output that carries no customer content, whatever an exception says.

pydantic's `ValidationError` text quotes the invalid input: for a malformed Telegram
update that is the message text and the sender's name. `SafeFormatter` (on the one log
handler, so it covers every logger — ours, aiogram's, aiohttp's) replaces that text,
wherever such an error appears in a logged exception chain or as a log argument, with
`validation_summary`: how many errors, where and of which kind, never the values.

`JsonFormatter` (LOG_FORMAT=json) writes the same scrubbed text as one JSON object per
line, with the update, chat and turn the line was written for as fields
(services/log_context.py) — ids only, never message text.

`ClientErrorFilter` keeps aiohttp's server log from filling with a traceback per client
that sends broken HTTP (a scanner, a slow-loris tool): one line without the traceback,
at DEBUG only.
"""

from __future__ import annotations

import json
import logging
from collections.abc import Iterator
from datetime import UTC, datetime

from aiohttp.http_exceptions import HttpProcessingError
from pydantic import ValidationError

from services.log_context import current_ids

LOG_FORMAT = "%(asctime)s %(levelname)s %(name)s: %(message)s"
# Libraries that log request or query contents (customer text) at DEBUG.
CHATTY_LOGGERS = ("aiosqlite", "openai", "httpx", "httpx2", "httpcore")


def validation_summary(exc: ValidationError, limit: int = 5) -> str:
    """`ValidationError` without input values: count, then `location (type)` pairs."""
    errors = exc.errors(include_url=False, include_context=False, include_input=False)
    parts = [f"{'.'.join(str(p) for p in e['loc']) or '<root>'} ({e['type']})" for e in errors]
    more = f"; +{len(parts) - limit} more" if len(parts) > limit else ""
    return f"{len(parts)} validation error(s) for {exc.title}: {'; '.join(parts[:limit])}{more}"


def _chain(exc: BaseException | None) -> Iterator[BaseException]:
    seen: set[int] = set()
    while exc is not None and id(exc) not in seen:
        seen.add(id(exc))
        yield exc
        exc = exc.__cause__ or exc.__context__


class SafeFormatter(logging.Formatter):
    """Formats like `logging.Formatter`, with every `ValidationError` text summarised."""

    def format(self, record: logging.LogRecord) -> str:
        if isinstance(record.args, tuple) and any(
            isinstance(arg, ValidationError) for arg in record.args
        ):
            record.args = tuple(
                validation_summary(arg) if isinstance(arg, ValidationError) else arg
                for arg in record.args
            )
        return super().format(record)

    def formatException(self, ei: logging._SysExcInfoType) -> str:
        text = super().formatException(ei)
        for exc in _chain(ei[1]):
            if isinstance(exc, ValidationError):
                text = text.replace(str(exc), validation_summary(exc))
        return text


class JsonFormatter(SafeFormatter):
    """One JSON object per line: time, level, logger, message (scrubbed as in the text
    format), the bound ids (update_id, chat_id, turn_id) and the exception, if any."""

    def format(self, record: logging.LogRecord) -> str:
        if isinstance(record.args, tuple) and any(
            isinstance(arg, ValidationError) for arg in record.args
        ):
            record.args = tuple(
                validation_summary(arg) if isinstance(arg, ValidationError) else arg
                for arg in record.args
            )
        entry: dict[str, object] = {
            "time": datetime.fromtimestamp(record.created, UTC).isoformat(timespec="milliseconds"),
            "level": record.levelname,
            "logger": record.name,
            "message": record.getMessage(),
            **current_ids(),
        }
        if record.exc_info:
            entry["exception"] = self.formatException(record.exc_info)
        elif record.exc_text:
            entry["exception"] = record.exc_text
        if record.stack_info:
            entry["stack"] = self.formatStack(record.stack_info)
        return json.dumps(entry, ensure_ascii=False, default=str)


def build_formatter(log_format: str = "text") -> logging.Formatter:
    """The formatter of the one log handler: `text` (default) or `json`."""
    return JsonFormatter() if log_format == "json" else SafeFormatter(LOG_FORMAT)


class ClientErrorFilter(logging.Filter):
    """aiohttp.server: a client's broken HTTP is one DEBUG-only line, no traceback."""

    def filter(self, record: logging.LogRecord) -> bool:
        exc = record.exc_info[1] if record.exc_info else None
        if not isinstance(exc, HttpProcessingError):
            return True
        if not logging.getLogger().isEnabledFor(logging.DEBUG):
            return False
        record.msg = f"{record.getMessage()}: {type(exc).__name__}"
        record.args = ()
        record.exc_info = None
        record.exc_text = None
        record.levelno, record.levelname = logging.DEBUG, "DEBUG"
        return True
