"""Webhook mode: an aiohttp app that answers Telegram only after the inbox commit.

aiogram's `SimpleRequestHandler` answers 200 before the update is handled (and before
anything is stored), which is exactly the window in which a crash loses a message. This
small handler keeps its contract — the secret header is mandatory and compared in
constant time, wrong or missing → 401 and nothing is processed — but returns 200 only
once the update is committed to the inbox; a failed insert answers 500, so Telegram
delivers the update again. `GET /healthz` is `bot.health` (the same checks as in
polling mode).

Telegram sends each update in its own POST, so under load the commit per POST was the
webhook's bottleneck (docs/benchmarks.md). `GroupCommit` lets the POSTs that arrive
while a commit is running share the next one; each POST still waits for the commit
that holds its own update before it answers.
"""

from __future__ import annotations

import asyncio
import hmac
import logging
from typing import Any

from aiohttp import web

from bot.health import Health, add_health_route
from bot.intake import Intake, IntakeClosed

log = logging.getLogger(__name__)

SECRET_HEADER = "X-Telegram-Bot-Api-Secret-Token"


class GroupCommit:
    """Records concurrently arriving updates in shared inbox transactions."""

    def __init__(self, intake: Intake, *, max_batch: int = 100) -> None:
        self._intake = intake
        self._max_batch = max_batch
        self._waiting: list[tuple[dict[str, Any], asyncio.Future[None]]] = []
        self._flusher: asyncio.Task[None] | None = None

    async def accept(self, payload: dict[str, Any]) -> None:
        """Return once `payload` is committed; raise what the commit raised."""
        done: asyncio.Future[None] = asyncio.get_running_loop().create_future()
        self._waiting.append((payload, done))
        if self._flusher is None:
            self._flusher = asyncio.create_task(self._flush(), name="webhook-group-commit")
        await done

    async def _flush(self) -> None:
        try:
            while self._waiting:
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
        finally:
            self._flusher = None


def build_web_app(*, intake: Intake, health: Health, path: str, secret: str) -> web.Application:
    expected = secret.encode()
    commits = GroupCommit(intake)

    async def receive(request: web.Request) -> web.Response:
        given = request.headers.get(SECRET_HEADER, "").encode()
        if not hmac.compare_digest(given, expected):
            log.warning("webhook request with a wrong or missing secret token rejected")
            return web.json_response({"ok": False}, status=401)
        try:
            payload: Any = await request.json()
        except ValueError:
            return web.json_response({"ok": False}, status=400)
        if not isinstance(payload, dict) or not isinstance(payload.get("update_id"), int):
            return web.json_response({"ok": False}, status=400)
        try:
            await commits.accept(payload)
        except IntakeClosed:
            return web.json_response({"ok": False}, status=503)
        except Exception:
            log.exception("update %s could not be recorded", payload.get("update_id"))
            return web.json_response({"ok": False}, status=500)
        return web.json_response({"ok": True})

    app = web.Application()
    app.router.add_post(path, receive)
    add_health_route(app, health)
    return app
