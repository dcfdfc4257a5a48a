"""Log output that carries no customer content, whatever an exception says.

pydantic's `ValidationError` text quotes the invalid input: for a malformed Telegram
update that is the message text and the sender's name. `SafeFormatter` (on the one log
handler, so it covers every logger — ours, aiogram's, aiohttp's) replaces that text,
wherever such an error appears in a logged exception chain or as a log argument, with
`validation_summary`: how many errors, where and of which kind, never the values.

`ClientErrorFilter` keeps aiohttp's server log from filling with a traceback per client
that sends broken HTTP (a scanner, a slow-loris tool): one line without the traceback,
at DEBUG only.
"""

from __future__ import annotations

import logging
from collections.abc import Iterator

from aiohttp.http_exceptions import HttpProcessingError
from pydantic import ValidationError

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
