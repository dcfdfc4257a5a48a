"""A small aiohttp fake of the Telegram Bot API for integration, end-to-end and bench runs.

The bot under test points `TELEGRAM_API_URL` at this server (aiogram's
`TelegramAPIServer.from_base`), so the real aiogram `Bot` and the real process are
exercised over HTTP. The fake records every call, serves queued updates through a real
long poll (`getUpdates` honours `offset` and `timeout`), and lets a test shape the
answers of `sendMessage`: reject HTML parse mode, answer 429 with `retry_after`, or hold
the request until the test releases it (to kill the bot at a precise moment).

Drafts (`sendMessageDraft`, streamed answers) are recorded in `drafts`; set
`draft_rejection` to 400 or 404 to answer them like a Bot API server without drafts.
`stop_update(chat_id, draft_id)` builds the update a customer's stop press sends.

Tests synchronise on conditions (`wait_for_messages`, `wait_for_call`, `Hold.arrived`),
never on sleeps; every wait is bounded by a timeout.
"""

from __future__ import annotations

import asyncio
import html
import itertools
import json
import re
import time
from collections.abc import AsyncIterator, Callable
from dataclasses import dataclass, field
from typing import Any

import pytest
from aiohttp import web

BOT_USER: dict[str, Any] = {
    "id": 4242,
    "is_bot": True,
    "first_name": "Shop Support",
    "username": "shop_support_test_bot",
    "can_join_groups": True,
    "can_read_all_group_messages": False,
    "supports_inline_queries": False,
}

# Fields that arrive as JSON strings in aiogram's form data.
_JSON_FIELDS = frozenset(
    {
        "allowed_updates",
        "commands",
        "scope",
        "reply_parameters",
        "reply_markup",
        "entities",
        "link_preview_options",
        "caption_entities",
    }
)
_INT_FIELDS = frozenset(
    {"offset", "limit", "timeout", "message_id", "reply_to_message_id", "draft_id"}
)
_BOOL_FIELDS = frozenset(
    {"drop_pending_updates", "disable_notification", "can_stop", "keep_on_stop"}
)


@dataclass(frozen=True, slots=True)
class ApiCall:
    """One request the bot made, with its parameters decoded."""

    method: str
    params: dict[str, Any]
    at: float


@dataclass(frozen=True, slots=True)
class SentMessage:
    """A message the fake accepted (what a customer would see)."""

    message_id: int
    chat_id: int
    text: str
    parse_mode: str | None
    params: dict[str, Any]
    kind: str = "text"  # "text" | "photo"

    @property
    def reply_markup(self) -> dict[str, Any] | None:
        """The keyboard sent with the message (decoded JSON), if any."""
        markup = self.params.get("reply_markup")
        return markup if isinstance(markup, dict) else None

    @property
    def plain_text(self) -> str:
        """What the customer reads: HTML tags removed and entities decoded."""
        if self.parse_mode != "HTML":
            return self.text
        return html.unescape(re.sub(r"<[^>]+>", "", self.text))


@dataclass(frozen=True, slots=True)
class SentDraft:
    """A draft the fake accepted: "" is the "Thinking…" placeholder."""

    chat_id: int
    draft_id: int
    text: str
    parse_mode: str | None
    can_stop: bool
    at: float

    @property
    def plain_text(self) -> str:
        return html.unescape(re.sub(r"<[^>]+>", "", self.text))


@dataclass(slots=True)
class Hold:
    """Holds `sendMessage` requests until released; `arrived` is set when one waits.

    A held request whose client disconnects (the bot was killed) is dropped unsent,
    like a request Telegram never received.
    """

    chat_id: int | None = None
    arrived: asyncio.Event = field(default_factory=asyncio.Event)
    released: asyncio.Event = field(default_factory=asyncio.Event)
    waiting: int = 0

    def release(self) -> None:
        self.released.set()

    @property
    def idle(self) -> bool:
        """No request is waiting on this hold (e.g. its killed client was disconnected)."""
        return self.waiting == 0


def _decode(name: str, raw: str) -> Any:
    if name in _JSON_FIELDS:
        try:
            return json.loads(raw)
        except ValueError:
            return raw
    if name in _INT_FIELDS or name == "chat_id":
        try:
            return int(raw)
        except ValueError:
            return raw
    if name in _BOOL_FIELDS:
        return raw.lower() in {"true", "1"}
    return raw


class FakeTelegramServer:
    """The fake Bot API. `await start()` then point the bot at `base_url`."""

    def __init__(self, *, token: str = "123456:TEST-TOKEN", host: str = "127.0.0.1") -> None:
        self.token = token
        self._host = host
        self._runner: web.AppRunner | None = None
        self.base_url = ""
        self.calls: list[ApiCall] = []
        self.messages: list[SentMessage] = []
        self.webhook_url: str = ""
        self.webhook_secret: str | None = None
        self.reject_html = False
        self.drafts: list[SentDraft] = []
        self.draft_rejection: int | None = None  # 400 / 404: a server without drafts
        # what a request with another token gets: 401 (a revoked token) or 404, which is
        # what Telegram answers for the token of a deleted bot or a mangled one
        self.unknown_token_status = 401
        self._retry_after: list[int] = []
        self._holds: list[Hold] = []
        self._updates: list[dict[str, Any]] = []
        self._next_update_id = itertools.count(1000)
        self._next_message_id = itertools.count(1)
        self._changed = asyncio.Event()

    # ------------------------------------------------------------------ lifecycle
    async def start(self, port: int = 0) -> str:
        app = web.Application(client_max_size=64 * 1024 * 1024)
        app.router.add_route("*", "/bot{token}/{method}", self._dispatch)
        # handler_cancellation: a killed bot's held request is cancelled, never "sent"
        self._runner = web.AppRunner(app, handler_cancellation=True, access_log=None)
        await self._runner.setup()
        site = web.TCPSite(self._runner, self._host, port)
        await site.start()
        sockets = site._server.sockets if site._server else []  # type: ignore[union-attr]
        bound_port = sockets[0].getsockname()[1]
        self.base_url = f"http://{self._host}:{bound_port}"
        return self.base_url

    async def stop(self) -> None:
        for hold in self._holds:
            hold.release()
        if self._runner is not None:
            await self._runner.cleanup()
            self._runner = None

    # ------------------------------------------------------------------ test controls
    def enqueue_update(self, update: dict[str, Any]) -> int:
        """Queue an update for `getUpdates`; assigns `update_id` if missing; returns it."""
        if "update_id" not in update:
            update = {"update_id": next(self._next_update_id), **update}
        self._updates.append(update)
        self._notify()
        return int(update["update_id"])

    def fail_next_sends_with_retry_after(self, retry_after: int = 1, times: int = 1) -> None:
        """The next `times` sendMessage calls answer 429 Too Many Requests."""
        self._retry_after.extend([retry_after] * times)

    def hold_send_message(self, chat_id: int | None = None) -> Hold:
        """Hold sendMessage (to `chat_id`, or any) until `Hold.release()`."""
        hold = Hold(chat_id=chat_id)
        self._holds.append(hold)
        return hold

    def messages_to(self, chat_id: int) -> list[SentMessage]:
        return [m for m in self.messages if m.chat_id == chat_id]

    def calls_of(self, method: str) -> list[ApiCall]:
        wanted = method.lower()
        return [c for c in self.calls if c.method.lower() == wanted]

    @property
    def pending_updates(self) -> int:
        return len(self._updates)

    async def wait_for_messages(
        self, chat_id: int, count: int = 1, *, within: float = 10.0
    ) -> list[SentMessage]:
        """Wait until at least `count` messages reached `chat_id`; return them all."""
        await self._wait(lambda: len(self.messages_to(chat_id)) >= count, within)
        return self.messages_to(chat_id)

    async def wait_for_call(
        self,
        method: str,
        predicate: Callable[[ApiCall], bool] = lambda _call: True,
        *,
        within: float = 10.0,
    ) -> ApiCall:
        """Wait until the bot made a matching call; return the first such call."""

        def found() -> ApiCall | None:
            return next((c for c in self.calls_of(method) if predicate(c)), None)

        await self._wait(lambda: found() is not None, within)
        call = found()
        assert call is not None
        return call

    async def wait_until(self, condition: Callable[[], bool], *, within: float = 10.0) -> None:
        await self._wait(condition, within)

    async def _wait(self, condition: Callable[[], bool], within: float) -> None:
        """Re-check `condition` after every change; TimeoutError when it stays false."""

        async def until() -> None:
            while not condition():
                await self._changed.wait()

        await asyncio.wait_for(until(), within)

    def _notify(self) -> None:
        # wake every waiter, then arm a fresh event for the next change
        changed, self._changed = self._changed, asyncio.Event()
        changed.set()

    # ------------------------------------------------------------------ HTTP
    async def _dispatch(self, request: web.Request) -> web.Response:
        if request.match_info["token"] != self.token:
            if self.unknown_token_status == 404:
                return _error(404, "Not Found")
            return _error(self.unknown_token_status, "Unauthorized")
        method = request.match_info["method"]
        params = await self._params(request)
        self.calls.append(ApiCall(method=method, params=params, at=time.time()))
        self._notify()
        handler = getattr(self, f"_m_{method.lower()}", None)
        if handler is None:
            return _error(404, "Not Found: method not found")
        response: web.Response = await handler(params, request)
        return response

    async def _params(self, request: web.Request) -> dict[str, Any]:
        params: dict[str, Any] = dict(request.query)
        if request.content_type == "application/json":
            body = await request.json()
            params.update(body if isinstance(body, dict) else {})
            return params
        if request.can_read_body:
            form = await request.post()
            for name, value in form.items():
                if isinstance(value, str):
                    params[name] = _decode(name, value)
                else:  # an uploaded file
                    params[name] = {"filename": value.filename, "size": len(value.file.read())}
        return params

    async def _m_getme(self, _params: dict[str, Any], _request: web.Request) -> web.Response:
        return _ok(BOT_USER)

    async def _m_getupdates(self, params: dict[str, Any], _request: web.Request) -> web.Response:
        offset = params.get("offset")
        if isinstance(offset, int) and offset > 0:
            # confirming: everything below the offset is gone for good
            self._updates = [u for u in self._updates if u["update_id"] >= offset]
        timeout = float(params.get("timeout") or 0)
        limit = int(params.get("limit") or 100)
        if not self._updates and timeout > 0:
            try:
                await self._wait(lambda: bool(self._updates), timeout)
            except TimeoutError:
                pass
        return _ok(self._updates[:limit])

    async def _m_sendmessage(self, params: dict[str, Any], request: web.Request) -> web.Response:
        chat_id = int(params["chat_id"])
        hold = next(
            (h for h in self._holds if not h.released.is_set() and h.chat_id in (None, chat_id)),
            None,
        )
        if hold is not None:
            hold.waiting += 1
            hold.arrived.set()
            try:
                await hold.released.wait()
            finally:
                hold.waiting -= 1  # released, or cancelled because the client went away
                self._notify()
            if request.transport is None or request.transport.is_closing():
                raise asyncio.CancelledError
        if self._retry_after:
            retry_after = self._retry_after.pop(0)
            return web.json_response(
                {
                    "ok": False,
                    "error_code": 429,
                    "description": f"Too Many Requests: retry after {retry_after}",
                    "parameters": {"retry_after": retry_after},
                },
                status=429,
            )
        parse_mode = params.get("parse_mode")
        if self.reject_html and parse_mode == "HTML":
            return _error(400, "Bad Request: can't parse entities: unsupported start tag")
        return _ok(self._accept(chat_id, str(params.get("text", "")), parse_mode, params))

    async def _m_sendmessagedraft(
        self, params: dict[str, Any], _request: web.Request
    ) -> web.Response:
        if self.draft_rejection == 404:
            return _error(404, "Not Found: method not found")
        if self.draft_rejection is not None:
            return _error(self.draft_rejection, "Bad Request: method is not available")
        chat_id = int(params["chat_id"])
        if chat_id < 0:
            return _error(400, "Bad Request: draft can be sent only to private chats")
        text = str(params.get("text") or "")
        self.drafts.append(
            SentDraft(
                chat_id=chat_id,
                draft_id=int(params["draft_id"]),
                text=text,
                parse_mode=params.get("parse_mode"),
                can_stop=bool(params.get("can_stop")),
                at=time.time(),
            )
        )
        self._notify()
        return _ok(True)

    def drafts_to(self, chat_id: int) -> list[SentDraft]:
        return [d for d in self.drafts if d.chat_id == chat_id]

    async def _m_sendphoto(self, params: dict[str, Any], _request: web.Request) -> web.Response:
        chat_id = int(params["chat_id"])
        caption = str(params.get("caption", ""))
        message = self._accept(chat_id, caption, params.get("parse_mode"), params, kind="photo")
        message["photo"] = [{"file_id": "photo1", "file_unique_id": "p1", "width": 1, "height": 1}]
        return _ok(message)

    def _accept(
        self,
        chat_id: int,
        text: str,
        parse_mode: str | None,
        params: dict[str, Any],
        kind: str = "text",
    ) -> dict[str, Any]:
        message_id = next(self._next_message_id)
        self.messages.append(SentMessage(message_id, chat_id, text, parse_mode, params, kind))
        self._notify()
        result: dict[str, Any] = {
            "message_id": message_id,
            "date": int(time.time()),
            "chat": {"id": chat_id, "type": "private" if chat_id > 0 else "group"},
            "from": {k: BOT_USER[k] for k in ("id", "is_bot", "first_name", "username")},
        }
        if kind == "text":
            result["text"] = text
        elif text:
            result["caption"] = text
        return result

    async def _m_sendchataction(self, _p: dict[str, Any], _r: web.Request) -> web.Response:
        return _ok(True)

    async def _m_setmycommands(self, _p: dict[str, Any], _r: web.Request) -> web.Response:
        return _ok(True)

    async def _m_deletemycommands(self, _p: dict[str, Any], _r: web.Request) -> web.Response:
        return _ok(True)

    async def _m_deletewebhook(self, _p: dict[str, Any], _r: web.Request) -> web.Response:
        self.webhook_url = ""
        self.webhook_secret = None
        return _ok(True)

    async def _m_setwebhook(self, params: dict[str, Any], _r: web.Request) -> web.Response:
        self.webhook_url = str(params.get("url", ""))
        self.webhook_secret = params.get("secret_token")
        return _ok(True)

    async def _m_getwebhookinfo(self, _p: dict[str, Any], _r: web.Request) -> web.Response:
        return _ok(
            {
                "url": self.webhook_url,
                "has_custom_certificate": False,
                "pending_update_count": len(self._updates),
            }
        )


def _ok(result: Any) -> web.Response:
    return web.json_response({"ok": True, "result": result})


def _error(status: int, description: str) -> web.Response:
    return web.json_response(
        {"ok": False, "error_code": status, "description": description}, status=status
    )


# ---------------------------------------------------------------------- update builders
_update_ids = itertools.count(50_000)


def _user(user_id: int, language_code: str | None) -> dict[str, Any]:
    user: dict[str, Any] = {"id": user_id, "is_bot": False, "first_name": f"User{user_id}"}
    if language_code:
        user["language_code"] = language_code
    return user


def message_update(
    chat_id: int,
    *,
    text: str | None = None,
    user_id: int | None = None,
    language_code: str | None = "ru",
    update_id: int | None = None,
    message_id: int | None = None,
    chat_type: str | None = None,
    entities: list[dict[str, Any]] | None = None,
    reply_to_bot: bool = False,
    extra: dict[str, Any] | None = None,
) -> dict[str, Any]:
    """A `message` update as Telegram sends it; `extra` adds e.g. a sticker or a photo."""
    uid = next(_update_ids) if update_id is None else update_id
    kind = chat_type or ("private" if chat_id > 0 else "group")
    chat: dict[str, Any] = {"id": chat_id, "type": kind}
    if kind != "private":
        chat["title"] = "Test group"
    message: dict[str, Any] = {
        "message_id": message_id if message_id is not None else uid,
        "date": int(time.time()),
        "chat": chat,
        "from": _user(user_id if user_id is not None else abs(chat_id), language_code),
    }
    if text is not None:
        message["text"] = text
        if text.startswith("/"):
            command = text.split()[0]
            message["entities"] = [{"type": "bot_command", "offset": 0, "length": len(command)}]
    if entities is not None:
        message["entities"] = entities
    if reply_to_bot:
        message["reply_to_message"] = {
            "message_id": 1,
            "date": int(time.time()),
            "chat": chat,
            "from": {k: BOT_USER[k] for k in ("id", "is_bot", "first_name", "username")},
            "text": "earlier answer",
        }
    message.update(extra or {})
    return {"update_id": uid, "message": message}


def contact_update(
    chat_id: int,
    *,
    phone_number: str,
    contact_user_id: int | None,
    first_name: str = "Contact",
    **kwargs: Any,
) -> dict[str, Any]:
    """A message carrying a shared contact. The customer's own contact (the "share my
    phone number" button) has `contact_user_id` equal to the sender's id; a forwarded or
    address-book card has someone else's id, or none."""
    contact: dict[str, Any] = {"phone_number": phone_number, "first_name": first_name}
    if contact_user_id is not None:
        contact["user_id"] = contact_user_id
    return message_update(chat_id, extra={"contact": contact}, **kwargs)


def sticker_update(chat_id: int, **kwargs: Any) -> dict[str, Any]:
    sticker = {
        "file_id": "sticker1",
        "file_unique_id": "s1",
        "type": "regular",
        "width": 512,
        "height": 512,
        "is_animated": False,
        "is_video": False,
        "emoji": "👍",
    }
    return message_update(chat_id, extra={"sticker": sticker}, **kwargs)


def stop_update(chat_id: int, draft_id: int) -> dict[str, Any]:
    """The update a customer's press on a draft's stop button sends."""
    chat = {"id": chat_id, "type": "private" if chat_id > 0 else "group"}
    return {
        "update_id": next(_update_ids),
        "stopped_message_generation": {"chat": chat, "draft_id": draft_id},
    }


def edited_message_update(chat_id: int, text: str, **kwargs: Any) -> dict[str, Any]:
    update = message_update(chat_id, text=text, **kwargs)
    message = update.pop("message")
    message["edit_date"] = int(time.time())
    update["edited_message"] = message
    return update


# ---------------------------------------------------------------------- pytest fixture
@pytest.fixture
async def fake_telegram() -> AsyncIterator[FakeTelegramServer]:
    """A running fake Bot API on 127.0.0.1 in the test's event loop."""
    server = FakeTelegramServer()
    await server.start()
    try:
        yield server
    finally:
        await server.stop()
