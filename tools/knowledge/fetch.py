"""Fetching the owner's pages: http(s) only, public addresses only, bounded.

Every hop is checked: the scheme (http or https), the host's addresses (loopback,
private, link-local, reserved and multicast ones refused unless the owner allows them:
KNOWLEDGE_ALLOW_PRIVATE_ADDRESSES, for an intranet or tests), again after every
redirect, and at connection time by the resolver itself, so a name that resolves to a
public address for the check and a private one for the connection is still refused.
A body larger than `max_bytes` is cut off and refused; the whole fetch has a time
limit. Failures are a `FetchError` with one line for the owner.

aiohttp is allowed below bot/ here (and in the remote embedder) by a narrow exception
of the import contract: a page is HTTP.
"""

from __future__ import annotations

import asyncio
import ipaddress
import socket
from dataclasses import dataclass
from typing import Any
from urllib.parse import urljoin, urlsplit

import aiohttp
from aiohttp.abc import AbstractResolver, ResolveResult
from aiohttp.resolver import DefaultResolver

USER_AGENT = "shop-support-bot (knowledge sync; +https://github.com/)"
MAX_REDIRECTS = 5
CHUNK = 65536


class FetchError(Exception):
    """A page could not be fetched: one line (what and why), no internals."""

    def __init__(self, message: str, *, status: int | None = None) -> None:
        super().__init__(message)
        self.status = status


@dataclass(frozen=True, slots=True)
class FetchLimits:
    max_bytes: int = 20_000_000
    timeout_s: float = 20.0
    allow_private: bool = False


@dataclass(frozen=True, slots=True)
class Fetched:
    url: str  # after redirects
    status: int  # 200, or 304 (not modified: no body)
    content_type: str  # "text/html", "application/pdf", ...
    charset: str | None
    body: bytes
    etag: str | None
    last_modified: str | None

    @property
    def not_modified(self) -> bool:
        return self.status == 304


def _refused_address(address: str) -> bool:
    ip = ipaddress.ip_address(address.split("%", 1)[0])
    if isinstance(ip, ipaddress.IPv6Address) and ip.ipv4_mapped is not None:
        ip = ip.ipv4_mapped
    return (
        ip.is_private
        or ip.is_loopback
        or ip.is_link_local
        or ip.is_reserved
        or ip.is_multicast
        or ip.is_unspecified
    )


class PublicOnlyResolver(AbstractResolver):
    """Resolves as usual, then refuses a host with any non-public address."""

    def __init__(self) -> None:
        self._inner = DefaultResolver()

    async def resolve(
        self, host: str, port: int = 0, family: socket.AddressFamily = socket.AF_INET
    ) -> list[ResolveResult]:
        found = await self._inner.resolve(host, port, family)
        if any(_refused_address(r["host"]) for r in found):
            raise OSError(f"{host} resolves to a private or local address")
        return found

    async def close(self) -> None:
        await self._inner.close()


def check_url(url: str, *, allow_private: bool) -> None:
    """http(s) with a host; an IP-literal host must be public unless allowed."""
    parts = urlsplit(url)
    if parts.scheme not in ("http", "https") or not parts.hostname:
        raise FetchError(f"{url}: only http:// and https:// addresses can be added")
    if allow_private:
        return
    host = parts.hostname
    if host == "localhost" or host.endswith((".localhost", ".local", ".internal")):
        raise FetchError(f"{url}: a local address (set KNOWLEDGE_ALLOW_PRIVATE_ADDRESSES to allow)")
    try:
        literal = ipaddress.ip_address(host)
    except ValueError:
        return
    if _refused_address(str(literal)):
        raise FetchError(
            f"{url}: a private or local address (set KNOWLEDGE_ALLOW_PRIVATE_ADDRESSES to allow)"
        )


class Fetcher:
    """One HTTP session for a sync; `async with Fetcher(limits) as fetcher`."""

    def __init__(self, limits: FetchLimits) -> None:
        self._limits = limits
        self._session: aiohttp.ClientSession | None = None

    async def __aenter__(self) -> Fetcher:
        resolver: AbstractResolver = (
            DefaultResolver() if self._limits.allow_private else PublicOnlyResolver()
        )
        self._session = aiohttp.ClientSession(
            connector=aiohttp.TCPConnector(resolver=resolver, limit=4),
            timeout=aiohttp.ClientTimeout(total=self._limits.timeout_s),
            headers={"User-Agent": USER_AGENT},
            auto_decompress=True,
        )
        return self

    async def __aexit__(self, *_exc: object) -> None:
        if self._session is not None:
            await self._session.close()

    async def get(
        self, url: str, *, etag: str | None = None, last_modified: str | None = None
    ) -> Fetched:
        """The page at `url` (following at most MAX_REDIRECTS, each checked); a 304 when
        `etag`/`last_modified` say the stored copy is current."""
        headers: dict[str, str] = {}
        if etag:
            headers["If-None-Match"] = etag
        if last_modified:
            headers["If-Modified-Since"] = last_modified
        try:
            return await asyncio.wait_for(self._get(url, headers), self._limits.timeout_s)
        except FetchError:
            raise
        except TimeoutError:
            raise FetchError(f"{url}: no answer within {self._limits.timeout_s:g} s") from None
        except (aiohttp.ClientError, OSError) as exc:
            reason = str(exc) if "private or local" in str(exc) else type(exc).__name__
            raise FetchError(f"{url}: unreachable ({reason})") from None

    async def _get(self, url: str, headers: dict[str, str]) -> Fetched:
        assert self._session is not None, "use `async with Fetcher(...)`"
        current = url
        for _ in range(MAX_REDIRECTS + 1):
            check_url(current, allow_private=self._limits.allow_private)
            async with self._session.get(
                current, headers=headers, allow_redirects=False
            ) as response:
                if response.status in (301, 302, 303, 307, 308):
                    location = response.headers.get("Location")
                    if not location:
                        raise FetchError(f"{current}: a redirect without a target")
                    current = urljoin(current, location)
                    continue
                return await self._read(current, response)
        raise FetchError(f"{url}: more than {MAX_REDIRECTS} redirects")

    async def _read(self, url: str, response: Any) -> Fetched:
        status = int(response.status)
        if status not in (200, 304):
            raise FetchError(f"{url}: the site answered HTTP {status}", status=status)
        length = response.content_length
        if length is not None and length > self._limits.max_bytes:
            raise FetchError(f"{url}: {_size(length)}, more than {_size(self._limits.max_bytes)}")
        body = bytearray()
        if status == 200:
            async for chunk in response.content.iter_chunked(CHUNK):
                body.extend(chunk)
                if len(body) > self._limits.max_bytes:
                    raise FetchError(f"{url}: larger than {_size(self._limits.max_bytes)}")
        return Fetched(
            url=url,
            status=status,
            content_type=(response.content_type or "").lower(),
            charset=response.charset,
            body=bytes(body),
            etag=response.headers.get("ETag"),
            last_modified=response.headers.get("Last-Modified"),
        )


def _size(count: int) -> str:
    return f"{count / 1_000_000:.1f} MB"
