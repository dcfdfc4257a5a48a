"""Reading a shop's answer: the whole body within a byte limit, then JSON, or "malformed".

Why one place: `StreamReader.read(n)` returns what has arrived so far, not the whole
body, so a large answer, or a small one the network delivered in several parts, would be
cut short and read as broken JSON. Every backend reads its answers here, to the end,
with the limit enforced on what arrived (and on Content-Length before anything is read).
Decoding turns whatever a hostile or broken body can raise (bad UTF-8, broken JSON,
nesting deep enough for a RecursionError) into one `ShopUnavailable("malformed")`.
"""

from __future__ import annotations

import json
from typing import Any

import aiohttp

from tools.shop.backend import ShopUnavailable

# one read asks for at most this much of what has arrived
CHUNK_BYTES = 64 * 1024


class BodyTooLarge(ShopUnavailable):
    """The answer is longer than the limit: "malformed", said as "too large"."""

    def __init__(self, limit: int) -> None:
        super().__init__("malformed", f"the answer is larger than {limit} bytes")


async def read_body(response: aiohttp.ClientResponse, limit: int) -> bytes:
    """The whole body, to the end of the answer; `BodyTooLarge` past `limit` bytes (the
    rest is not read: the connection is dropped with the response)."""
    declared = response.content_length
    if declared is not None and declared > limit:
        raise BodyTooLarge(limit)
    body = bytearray()
    while chunk := await response.content.read(CHUNK_BYTES):
        body += chunk
        if len(body) > limit:
            raise BodyTooLarge(limit)
    return bytes(body)


def decode_json(raw: bytes, what: str = "the answer") -> Any:
    """JSON from a shop's body; `ShopUnavailable("malformed")` for anything that is not
    (including a nesting too deep to decode)."""
    try:
        return json.loads(raw)
    except (ValueError, RecursionError):  # UnicodeDecodeError is a ValueError
        raise ShopUnavailable("malformed", f"{what} is not JSON") from None
