"""One HTTP client for the platform backends (Medusa, Shopify, WooCommerce): deadlines,
one retry for reads, Retry-After, and every failure turned into `ShopUnavailable`.

Why one: the three platforms differ in paths and bodies, not in how a well-behaved
client treats a shop — a bounded time per request, a second try only where repeating is
harmless, waiting out a 429 only when the wait fits, and no credential or customer data in
a log line (logs name the host and the path without its query).
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import Mapping
from dataclasses import dataclass
from datetime import UTC, datetime
from email.utils import parsedate_to_datetime
from typing import Any
from urllib.parse import urlsplit

import aiohttp

from tools.shop.backend import ShopUnavailable
from tools.shop.backends.body import decode_json, read_body
from tools.shop.rules import normalise_phone

logger = logging.getLogger(__name__)

MAX_BODY = 1024 * 1024  # a page of orders is a few KiB; more is not an answer we read
MAX_RETRY_WAIT_S = 2.0  # the longest Retry-After we wait out inside one question


@dataclass(frozen=True, slots=True)
class Reply:
    status: int
    body: Any  # parsed JSON (None for an empty body)
    headers: Mapping[str, str]


def phone_or_none(value: object) -> str | None:
    """A phone as the shop wrote it, in E.164, or None (then it matches nobody)."""
    if not isinstance(value, str) or not value.strip():
        return None
    try:
        return normalise_phone(value)
    except ValueError:
        return None


def parse_time(value: object) -> datetime | None:
    """An RFC 3339 / ISO 8601 time from a platform as an aware UTC datetime, or None."""
    if not isinstance(value, str) or not value:
        return None
    try:
        parsed = datetime.fromisoformat(value.replace("Z", "+00:00"))
    except ValueError:
        return None
    if parsed.tzinfo is None:
        parsed = parsed.replace(tzinfo=UTC)
    return parsed.astimezone(UTC)


def _retry_after(value: str | None, now: float) -> float | None:
    """Seconds to wait from a Retry-After header (seconds or an HTTP date)."""
    if not value:
        return None
    try:
        return max(0.0, float(value))
    except ValueError:
        pass
    try:
        when = parsedate_to_datetime(value)
    except (TypeError, ValueError):
        return None
    if when.tzinfo is None:
        when = when.replace(tzinfo=UTC)
    return max(0.0, when.timestamp() - now)


class PlatformClient:
    """Requests to one shop's API. `headers` carry the credentials (never logged)."""

    def __init__(
        self,
        base_url: str,
        headers: Mapping[str, str],
        *,
        backend: str,
        timeout_s: float = 3.0,
        session: aiohttp.ClientSession | None = None,
    ) -> None:
        self.base_url = base_url.rstrip("/")
        self.host = urlsplit(self.base_url).netloc
        self.backend = backend
        self._headers = dict(headers)
        self._timeout_s = timeout_s
        self._session = session
        self._own_session = session is None

    def _client(self) -> aiohttp.ClientSession:
        if self._session is None or self._session.closed:
            self._session = aiohttp.ClientSession(
                connector=aiohttp.TCPConnector(limit=8), raise_for_status=False
            )
            self._own_session = True
        return self._session

    async def aclose(self) -> None:
        if self._own_session and self._session is not None and not self._session.closed:
            await self._session.close()

    async def request(
        self,
        method: str,
        path: str,
        *,
        params: Mapping[str, str | int] | None = None,
        json_body: Any = None,
        form: Mapping[str, str] | None = None,
        headers: Mapping[str, str] | None = None,
        idempotent: bool | None = None,
        own_429: bool = False,
    ) -> Reply:
        """One call, with one retry for an idempotent request (GET by default) after a
        5xx, a timeout or a lost connection, and Retry-After honoured when it fits.
        401/403 → ShopUnavailable("auth"); any other status is the caller's to read.
        A non-idempotent request that timed out raises ShopUnavailable("timeout"): the
        caller does not know whether it took effect (OrderActions answer ActionUnknown).
        `own_429`: a 429 is returned to the caller (Shopify reads its cost data instead).
        `form`: a form-encoded body instead of JSON; `headers`: this call's own (a
        short-lived token), over the client's."""
        retry = method == "GET" if idempotent is None else idempotent
        deadline = time.monotonic() + self._timeout_s * (2 if retry else 1) + 0.5
        attempt = 0
        while True:
            attempt += 1
            try:
                reply = await self._once(method, path, params, json_body, form, headers)
            except ShopUnavailable as exc:
                if retry and attempt == 1 and exc.kind in ("timeout", "unavailable"):
                    logger.info(
                        "%s: %s %s failed (%s), trying again", self.backend, method, path, exc.kind
                    )
                    continue
                raise
            if reply.status in (401, 403):
                raise ShopUnavailable(
                    "auth", f"{self.backend} at {self.host} answered {reply.status}"
                )
            if reply.status == 429 and not own_429:
                wait = _retry_after(reply.headers.get("Retry-After"), time.time())
                left = deadline - time.monotonic()
                if attempt == 1 and wait is not None and wait <= min(MAX_RETRY_WAIT_S, left):
                    await asyncio.sleep(wait)
                    continue
                raise ShopUnavailable("rate_limited", f"{self.backend} at {self.host} answered 429")
            if reply.status >= 500:
                if retry and attempt == 1:
                    logger.info(
                        "%s: %s %s answered %s, trying again",
                        self.backend,
                        method,
                        path,
                        reply.status,
                    )
                    continue
                raise ShopUnavailable(
                    "unavailable", f"{self.backend} at {self.host} answered {reply.status}"
                )
            return reply

    async def _once(
        self,
        method: str,
        path: str,
        params: Mapping[str, str | int] | None,
        json_body: Any,
        form: Mapping[str, str] | None = None,
        own_headers: Mapping[str, str] | None = None,
    ) -> Reply:
        timeout = aiohttp.ClientTimeout(total=self._timeout_s, connect=min(1.5, self._timeout_s))
        headers = {"Accept": "application/json", **self._headers, **(own_headers or {})}
        try:
            async with self._client().request(
                method,
                self.base_url + path,
                params=None if params is None else {k: str(v) for k, v in params.items()},
                json=json_body,
                data=None if form is None else dict(form),
                headers=headers,
                timeout=timeout,
                allow_redirects=False,
            ) as response:
                status = response.status
                answer_headers = {k: v for k, v in response.headers.items()}
                raw = await read_body(response, MAX_BODY)
        except TimeoutError:
            raise ShopUnavailable(
                "timeout", f"{self.backend} at {self.host}: {method} {path}"
            ) from None
        except aiohttp.ClientError as exc:
            raise ShopUnavailable(
                "unavailable", f"{self.backend} at {self.host}: {type(exc).__name__}"
            ) from None
        body: Any = None
        if raw.strip():
            try:
                body = decode_json(raw, f"{self.backend} at {self.host}: {method} {path}")
            except ShopUnavailable:
                if status < 300 or status == 404:
                    raise
                body = None
        return Reply(status, body, answer_headers)


def expect_object(reply: Reply, where: str) -> dict[str, Any]:
    """The JSON object a 2xx answer must be; `malformed` for anything else."""
    if not 200 <= reply.status < 300 or not isinstance(reply.body, dict):
        raise ShopUnavailable("malformed", f"{where}: status {reply.status}")
    return reply.body
