"""Webhook mode: an aiohttp app that answers Telegram only after the inbox commit.

aiogram's `SimpleRequestHandler` answers 200 before the update is handled (and before
anything is stored), which is exactly the window in which a crash loses a message. This
small handler keeps its contract — the secret header is mandatory and compared in
constant time, wrong or missing → 401 and nothing is processed (a client that asks
`Expect: 100-continue` gets the 401 instead of the invitation to send its body) — but
returns 200 only
once the update is committed to the inbox; a failed insert answers 500, so Telegram
delivers the update again. `GET /healthz` is `bot.runtime.health` (the same checks as in
polling mode).

A poison update (one the inbox cannot store, e.g. an id beyond 64 bits) is quarantined
by `Intake.accept` and answered 200 like any recorded update — Telegram redelivers
anything else, forever — and the other updates of its group commit are stored as usual.

Slow or idle clients: a connection that sends no complete request within
`read_timeout_s` (idle, or dribbling its headers) is closed by the server's keep-alive
timer, and a body that does not arrive within `read_timeout_s` is answered 408 and the
connection closed. A body over `MAX_BODY_BYTES` is answered 413 without being read. A
client that goes away mid-body is closed without a log line above DEBUG.

Telegram sends each update in its own POST, so under load the commit per POST was the
webhook's bottleneck (docs/benchmarks.md). `GroupCommit` lets the POSTs that arrive
while a commit is running share the next one; each POST still waits for the commit
that holds its own update before it answers.
"""

from __future__ import annotations

import asyncio
import hmac
import json
import logging
import time
from collections.abc import Callable
from typing import Any

from aiohttp import web
from aiohttp.http_exceptions import HttpProcessingError
from aiohttp.web_protocol import RequestPayloadError
from aiohttp.web_urldispatcher import _default_expect_handler  # sends 100 Continue

from bot.runtime.health import Health, add_health_route
from bot.runtime.intake import Intake, IntakeClosed

log = logging.getLogger(__name__)

SECRET_HEADER = "X-Telegram-Bot-Api-Secret-Token"
# Telegram's updates are small: a message is at most 4096 characters (16 KiB of UTF-8),
# with entities and a quoted reply well under 100 KiB.
MAX_BODY_BYTES = 256 * 1024
DEFAULT_READ_TIMEOUT_S = 10.0
# the longest a commit waits for the next wave of POSTs (see `GroupCommit`)
FILL_MAX_S = 0.1


class GroupCommit:
    """Records concurrently arriving updates in shared inbox transactions.

    Under load the POSTs come in waves: a commit answers all of its POSTs at once, and
    Telegram sends the next updates over those connections a moment later. Committing
    the first of such a wave alone would make the rest wait for that commit and then for
    their own: every update would wait for two commits (measured under load: batches of
    1 and 99 in turn, or of about 50). So a commit that starts within the last commit's
    duration of its end first waits until as many POSTs wait as were open when the last
    one ended (its own and those already waiting) — at most a quarter of the last
    commit's duration and never more than `fill_max_s`. At idle, commits take a few
    milliseconds and come far apart, so an update is committed at once.
    """

    def __init__(
        self,
        intake: Intake,
        *,
        max_batch: int = 100,
        fill_max_s: float = FILL_MAX_S,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self._intake = intake
        self._max_batch = max_batch
        self._fill_max_s = fill_max_s
        self._clock = clock
        self._waiting: list[tuple[dict[str, Any], asyncio.Future[None]]] = []
        self._flusher: asyncio.Task[None] | None = None
        # the last commit: the POSTs open when it ended, how long it took, when it ended
        self._last_size = 0
        self._last_s = 0.0
        self._last_end = float("-inf")
        # set while a commit waits to fill: woken when this many updates wait
        self._fill_target = 0
        self._filled: asyncio.Future[None] | None = None

    async def accept(self, payload: dict[str, Any]) -> None:
        """Return once `payload` is committed; raise what the commit raised."""
        done: asyncio.Future[None] = asyncio.get_running_loop().create_future()
        self._waiting.append((payload, done))
        if self._flusher is None:
            self._flusher = asyncio.create_task(self._flush(), name="webhook-group-commit")
        elif (
            self._filled is not None
            and not self._filled.done()
            and len(self._waiting) >= self._fill_target
        ):
            self._filled.set_result(None)
        await done

    async def _fill(self, now: float) -> None:
        """Wait briefly for the wave the last commit answered to come back (see above)."""
        target = min(self._last_size, self._max_batch)
        if len(self._waiting) >= target or now - self._last_end > self._last_s:
            return
        self._fill_target = target
        self._filled = asyncio.get_running_loop().create_future()
        try:
            await asyncio.wait_for(self._filled, min(self._fill_max_s, self._last_s / 4))
        except TimeoutError:
            pass
        finally:
            self._filled = None

    async def _flush(self) -> None:
        try:
            while self._waiting:
                await self._fill(self._clock())
                started = self._clock()
                batch = self._waiting[: self._max_batch]
                del self._waiting[: self._max_batch]
                try:
                    await self._intake.accept([payload for payload, _ in batch])
                except Exception as exc:
                    for _, done in batch:
                        if not done.done():
                            done.set_exception(exc)
                else:
                    for _, done in batch:
                        if not done.done():
                            done.set_result(None)
                self._last_end = self._clock()
                self._last_s = self._last_end - started
                # its own POSTs, answered now, and those that waited meanwhile
                self._last_size = len(batch) + len(self._waiting)
        finally:
            self._flusher = None


# the answers' bodies, serialised once: every update is answered with one of them
_OK_BODY = json.dumps({"ok": True}).encode()
_REFUSED_BODY = json.dumps({"ok": False}).encode()


def _reply(status: int, *, close: bool = False) -> web.Response:
    body = _OK_BODY if status == 200 else _REFUSED_BODY
    response = web.Response(body=body, status=status, content_type="application/json")
    if close:
        response.force_close()
    return response


async def _read_update(request: web.Request, timeout_s: float) -> dict[str, Any] | int:
    """The posted update, or the HTTP status that refuses it."""
    # a small update usually arrives whole with its headers: then there is nothing to
    # wait for, and no timer to arm and cancel per request
    wait_s = None if request.content.is_eof() else timeout_s
    try:
        async with asyncio.timeout(wait_s):
            body = await request.read()
    except TimeoutError:
        log.debug("webhook request body not received within %.0f s; closed", timeout_s)
        return 408
    except web.HTTPRequestEntityTooLarge:
        return 413
    except (ConnectionError, RequestPayloadError, HttpProcessingError):
        # the client went away or broke off its body: nobody reads an answer
        log.debug("webhook request body broken off by the client")
        return 400
    try:
        payload: Any = json.loads(body)
    except (ValueError, RecursionError):
        return 400
    # bool is an int to Python, not an update id
    if not isinstance(payload, dict) or type(payload.get("update_id")) is not int:
        return 400
    return payload


def build_web_app(
    *,
    intake: Intake,
    health: Health,
    path: str,
    secret: str,
    read_timeout_s: float = DEFAULT_READ_TIMEOUT_S,
) -> web.Application:
    expected = secret.encode()
    commits = GroupCommit(intake)

    def refused(request: web.Request) -> web.Response | None:
        given = request.headers.get(SECRET_HEADER, "").encode()
        if hmac.compare_digest(given, expected):
            return None
        log.warning("webhook request with a wrong or missing secret token rejected")
        return _reply(401, close=True)

    async def continue_if_authorised(request: web.Request) -> web.Response | None:
        """`Expect: 100-continue`: ask for the body only from a client with the secret;
        anyone else is answered 401 before sending it."""
        rejection = refused(request)
        if rejection is None:
            await _default_expect_handler(request)
        return rejection

    async def receive(request: web.Request) -> web.Response:
        rejection = refused(request)
        if rejection is not None:
            return rejection
        payload = await _read_update(request, read_timeout_s)
        if isinstance(payload, int):
            return _reply(payload, close=True)  # not Telegram: no keep-alive for it
        try:
            await commits.accept(payload)
        except IntakeClosed:
            return _reply(503)
        except Exception:
            log.exception("update %s could not be recorded", payload.get("update_id"))
            return _reply(500)
        return _reply(200)

    app = web.Application(client_max_size=MAX_BODY_BYTES)
    app.router.add_post(path, receive, expect_handler=continue_if_authorised)
    add_health_route(app, health)
    return app


def build_runner(app: web.Application, *, read_timeout_s: float) -> web.AppRunner:
    """The server for `app`: idle connections and unfinished requests end after the timeout.

    aiohttp arms its keep-alive timer when a connection opens and re-arms it after each
    response; it closes the connection if no complete request has arrived by then. No
    handler cancellation: a POST whose client went away still finishes its commit.
    """
    return web.AppRunner(app, access_log=None, keepalive_timeout=read_timeout_s)
