"""Webhook mode: an aiohttp app that answers Telegram only after the inbox commit.

aiogram's `SimpleRequestHandler` answers 200 before the update is handled (and before
anything is stored), which is exactly the window in which a crash loses a message. This
small handler keeps its contract — the secret header is mandatory and compared in
constant time, wrong or missing → 401 and nothing is processed — but returns 200 only
once the update is committed to the inbox; a failed insert answers 500, so Telegram
delivers the update again. `GET /healthz` reports whether the database answers.
"""

from __future__ import annotations

import hmac
import logging
from typing import Any

from aiohttp import web

from bot.intake import Intake, IntakeClosed
from storage.database import Database

log = logging.getLogger(__name__)

SECRET_HEADER = "X-Telegram-Bot-Api-Secret-Token"


def build_web_app(*, intake: Intake, db: Database, path: str, secret: str) -> web.Application:
    expected = secret.encode()

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
            await intake.accept([payload])
        except IntakeClosed:
            return web.json_response({"ok": False}, status=503)
        except Exception:
            log.exception("update %s could not be recorded", payload.get("update_id"))
            return web.json_response({"ok": False}, status=500)
        return web.json_response({"ok": True})

    async def healthz(_request: web.Request) -> web.Response:
        if await db.ping():
            return web.json_response({"status": "ok"})
        return web.json_response({"status": "database unavailable"}, status=503)

    app = web.Application()
    app.router.add_post(path, receive)
    app.router.add_get("/healthz", healthz)
    return app
