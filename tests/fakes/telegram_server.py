"""A small aiohttp fake of the Telegram Bot API for integration, end-to-end and bench runs.

The bot under test points `TELEGRAM_API_URL` at this server (aiogram's
`TelegramAPIServer.from_base`), so the real aiogram `Bot` and the real process are
exercised over HTTP. The fake records every call, serves queued updates through a real
long poll (`getUpdates` honours `offset` and `timeout`), and lets a test shape the
answers of `sendMessage`: reject HTML parse mode, answer 429 with `retry_after`, or hold
the request until the test releases it (to kill the bot at a precise moment).

Files: `add_file(file_id, data)` makes a file known; `getFile` answers its path and
`GET /file/bot<token>/<path>` serves its bytes (each download is recorded in
`downloads`; a set `download_hold` keeps downloads waiting until it is set);
`voice_update` / `video_note_update` build the updates that carry them.

Drafts (`sendMessageDraft`, streamed answers) are recorded in `drafts`; set
`draft_rejection` to 400 or 404 to answer them like a Bot API server without drafts.
`stop_update(chat_id, draft_id)` builds the update a customer's stop press sends.

Business mode (Telegram Business, "Chat Automation" in the app; shapes from the Bot API
documentation, version 10.3 — https://core.telegram.org/bots/api#businessconnection,
#businessbotrights, #businessmessagesdeleted, and the `business_connection_id`
parameter of sendMessage, sendChatAction and editMessageReplyMarkup — a message sent on
the owner's behalf is edited only through its connection): `connect_business`
records a connection (getBusinessConnection answers it) and returns the
`business_connection` update to enqueue; `business_message_update`,
`edited_business_message_update`, `deleted_business_messages_update` and
`business_callback_update` build the other updates. Like Telegram, a send with a
`business_connection_id` is refused when the connection is unknown, disabled or lacks
`can_reply`, and when the chat had no incoming message in the last 24 hours; an accepted
one is echoed back as a `business_message` carrying `sender_business_bot` (the bot's own
message on the owner's behalf) when `echo_business_sends` is on.
`business_messages_to(connection, chat)` lists what the customer saw there.

Several bot processes (polling with a leader): a bot whose TELEGRAM_API_URL is
`client_url(name)` is recorded under that name (`ApiCall.client`); `polls_in_flight`
says who is inside a `getUpdates` right now and `poll_overlaps` counts every poll that
began while another client's was still open. With `conflict_on_overlap` the fake answers
like Telegram: the older poll ends with 409 Conflict ("terminated by other getUpdates
request").

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

from tests.waits import OUTER_LIMIT_S

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
    {
        "offset",
        "limit",
        "timeout",
        "message_id",
        "reply_to_message_id",
        "message_thread_id",
        "from_chat_id",
        "user_id",
        "icon_color",
        "draft_id",
    }
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
    client: str = ""  # the name in `client_url(name)`; "" for the plain base URL


@dataclass(frozen=True, slots=True)
class SentMessage:
    """A message the fake accepted (what a customer would see)."""

    message_id: int
    chat_id: int
    text: str
    parse_mode: str | None
    params: dict[str, Any]
    kind: str = "text"  # "text" | "photo" | "copy" (copyMessage)

    @property
    def thread_id(self) -> int | None:
        """The forum topic the message was posted in (`message_thread_id`), if any."""
        value = self.params.get("message_thread_id")
        return value if isinstance(value, int) else None

    @property
    def copied_from(self) -> tuple[int, int] | None:
        """(from_chat_id, message_id) of a copyMessage."""
        if self.kind != "copy":
            return None
        return int(self.params["from_chat_id"]), int(self.params["message_id"])

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
    method: str | None = None  # None: sendMessage and copyMessage
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
        self.blocked_by: set[int] = set()  # chats whose user blocked the bot: 403
        self._holds: list[Hold] = []
        self._updates: list[dict[str, Any]] = []
        self._next_update_id = itertools.count(1000)
        self._next_message_id = itertools.count(1)
        self._changed = asyncio.Event()
        self.files: dict[str, bytes] = {}  # file_id -> content
        self.file_paths: dict[str, str] = {}  # file_id -> the path getFile answers
        self.downloads: list[str] = []  # file paths downloaded, in order
        self.download_hold: asyncio.Event | None = None
        # forum supergroups (the operators' group of a handoff): getChat answers for the
        # chats here; getChatMember answers the bot's membership in `bot_members`
        self.chats: dict[int, dict[str, Any]] = {}
        self.bot_members: dict[int, dict[str, Any]] = {}
        # (chat, user) → status of a person in a group ("creator", "administrator", …);
        # anyone not listed is a plain "member"
        self.member_status: dict[tuple[int, int], str] = {}
        self.topics: dict[tuple[int, int], str] = {}  # (chat, thread id) -> name
        self.closed_topics: set[tuple[int, int]] = set()
        self.deleted_topics: set[tuple[int, int]] = set()
        self._next_thread_id = itertools.count(700)
        # getUpdates from several clients (a polling leader and its standbys)
        self.conflict_on_overlap = False
        self.poll_overlaps = 0
        self._open_polls: dict[int, tuple[str, asyncio.Event]] = {}  # id -> (client, ended)
        self._stopping = False  # `stop` is under way: long polls answer at once
        self._poll_ids = itertools.count(1)
        # Business mode: connection id -> BusinessConnection; (connection, chat) -> when
        # the customer last wrote (the 24-hour window of `can_reply`)
        self.business_connections: dict[str, dict[str, Any]] = {}
        self.business_incoming: dict[tuple[str, int], float] = {}
        self.echo_business_sends = True

    # ------------------------------------------------------------------ lifecycle
    async def start(self, port: int = 0) -> str:
        app = web.Application(client_max_size=64 * 1024 * 1024)
        app.router.add_route("*", "/bot{token}/{method}", self._dispatch)
        app.router.add_route("*", "/client/{client}/bot{token}/{method}", self._dispatch)
        app.router.add_get("/file/bot{token}/{path:.+}", self._download)
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
        """Stop serving (an outage, or the test's end). Held requests are released and open
        long polls answered at once (no updates), as a poll that ended just before the
        outage: otherwise the server's shutdown waits out each poll's timeout (25 s)."""
        self._stopping = True
        for hold in self._holds:
            hold.release()
        self._notify()
        try:
            if self._runner is not None:
                await self._runner.cleanup()
                self._runner = None
        finally:
            self._stopping = False

    # ------------------------------------------------------------------ test controls
    def client_url(self, name: str) -> str:
        """A TELEGRAM_API_URL whose calls are recorded with `client=name`."""
        return f"{self.base_url}/client/{name}"

    def polls_in_flight(self) -> list[str]:
        """The clients inside a `getUpdates` right now (one entry per open poll)."""
        return [client for client, _ in self._open_polls.values()]

    def enqueue_update(self, update: dict[str, Any]) -> int:
        """Queue an update for `getUpdates`; assigns `update_id` if missing; returns it."""
        if "update_id" not in update:
            update = {"update_id": next(self._next_update_id), **update}
        self._updates.append(update)
        self._notify()
        return int(update["update_id"])

    def connect_business(
        self,
        connection_id: str,
        owner_id: int,
        *,
        can_reply: bool = True,
        is_enabled: bool = True,
    ) -> dict[str, Any]:
        """The owner connected the bot in Telegram's settings (or changed its rights, or
        disconnected it: `is_enabled=False`): the connection as getBusinessConnection
        answers it from now on, and the `business_connection` update Telegram sends."""
        connection = business_connection(
            connection_id, owner_id, can_reply=can_reply, is_enabled=is_enabled
        )
        self.business_connections[connection_id] = connection
        return {"update_id": next(self._next_update_id), "business_connection": connection}

    def business_messages_to(self, connection_id: str, chat_id: int) -> list[SentMessage]:
        """What the bot posted in a business chat on the owner's behalf."""
        return [
            m
            for m in self.messages_to(chat_id)
            if m.params.get("business_connection_id") == connection_id
        ]

    def enqueue_business_message(self, update: dict[str, Any]) -> int:
        """Queue a `business_message` update; an incoming one (from the customer) opens
        the chat's 24-hour window, as on Telegram."""
        message = update["business_message"]
        key = (str(message["business_connection_id"]), int(message["chat"]["id"]))
        if message["from"]["id"] == message["chat"]["id"]:
            self.business_incoming[key] = float(message["date"])
        return self.enqueue_update(update)

    def add_file(self, file_id: str, data: bytes, *, file_path: str | None = None) -> None:
        """A file the bot may fetch with getFile and download; `file_path`: what getFile
        answers as its path (default voice/<file_id>.oga)."""
        self.files[file_id] = data
        if file_path is not None:
            self.file_paths[file_id] = file_path

    def fail_next_sends_with_retry_after(self, retry_after: int = 1, times: int = 1) -> None:
        """The next `times` sendMessage calls answer 429 Too Many Requests."""
        self._retry_after.extend([retry_after] * times)

    def hold_send_message(self, chat_id: int | None = None) -> Hold:
        """Hold sendMessage and copyMessage (to `chat_id`, or any) until `Hold.release()`."""
        hold = Hold(chat_id=chat_id)
        self._holds.append(hold)
        return hold

    def hold_calls(self, method: str) -> Hold:
        """Hold every call of another method (e.g. createForumTopic) until released."""
        hold = Hold(method=method)
        self._holds.append(hold)
        return hold

    def add_forum(
        self,
        chat_id: int,
        *,
        is_forum: bool = True,
        bot_status: str = "administrator",
        can_manage_topics: bool = True,
        username: str | None = None,
    ) -> None:
        """A supergroup the bot is in: a forum or not, the bot admin with or without the
        right to manage topics (or `bot_status="member"`); public when it has a
        `username` (anyone can find and read it)."""
        self.chats[chat_id] = {
            "id": chat_id,
            "type": "supergroup",
            "title": "Operators",
            "is_forum": is_forum,
            "accent_color_id": 0,
            "max_reaction_count": 11,
            "accepted_gift_types": {
                "unlimited_gifts": False,
                "limited_gifts": False,
                "unique_gifts": False,
                "premium_subscription": False,
                "gifts_from_channels": False,
            },
        }
        if username is not None:
            self.chats[chat_id]["username"] = username
        bot = {k: BOT_USER[k] for k in ("id", "is_bot", "first_name", "username")}
        member: dict[str, Any] = {"status": bot_status, "user": bot}
        if bot_status == "administrator":
            member.update(
                {
                    "can_be_edited": False,
                    "is_anonymous": False,
                    "can_manage_chat": True,
                    "can_delete_messages": True,
                    "can_manage_video_chats": False,
                    "can_restrict_members": False,
                    "can_promote_members": False,
                    "can_change_info": False,
                    "can_invite_users": True,
                    "can_post_stories": False,
                    "can_edit_stories": False,
                    "can_delete_stories": False,
                    "can_send_welcome_messages": False,
                    "can_manage_topics": can_manage_topics,
                }
            )
        self.bot_members[chat_id] = member

    def delete_topic(self, chat_id: int, thread_id: int) -> None:
        """An operator deleted the topic: posting into it fails from now on."""
        self.deleted_topics.add((chat_id, thread_id))
        self.topics.pop((chat_id, thread_id), None)

    def messages_in_topic(self, chat_id: int, thread_id: int) -> list[SentMessage]:
        return [m for m in self.messages_to(chat_id) if m.thread_id == thread_id]

    def messages_to(self, chat_id: int) -> list[SentMessage]:
        return [m for m in self.messages if m.chat_id == chat_id]

    def calls_of(self, method: str) -> list[ApiCall]:
        wanted = method.lower()
        return [c for c in self.calls if c.method.lower() == wanted]

    @property
    def pending_updates(self) -> int:
        return len(self._updates)

    async def wait_for_messages(
        self, chat_id: int, count: int = 1, *, within: float = OUTER_LIMIT_S
    ) -> list[SentMessage]:
        """Wait until at least `count` messages reached `chat_id`; return them all."""
        await self._wait(lambda: len(self.messages_to(chat_id)) >= count, within)
        return self.messages_to(chat_id)

    async def wait_for_call(
        self,
        method: str,
        predicate: Callable[[ApiCall], bool] = lambda _call: True,
        *,
        within: float = OUTER_LIMIT_S,
    ) -> ApiCall:
        """Wait until the bot made a matching call; return the first such call."""

        def found() -> ApiCall | None:
            return next((c for c in self.calls_of(method) if predicate(c)), None)

        await self._wait(lambda: found() is not None, within)
        call = found()
        assert call is not None
        return call

    async def wait_until(
        self, condition: Callable[[], bool], *, within: float = OUTER_LIMIT_S
    ) -> None:
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
        client = request.match_info.get("client", "")
        self.calls.append(ApiCall(method=method, params=params, at=time.time(), client=client))
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

    async def _m_getfile(self, params: dict[str, Any], _request: web.Request) -> web.Response:
        file_id = str(params.get("file_id", ""))
        data = self.files.get(file_id)
        if data is None:
            return _error(400, "Bad Request: invalid file_id")
        return _ok(
            {
                "file_id": file_id,
                "file_unique_id": f"u-{file_id}",
                "file_size": len(data),
                "file_path": self.file_paths.get(file_id, f"voice/{file_id}.oga"),
            }
        )

    async def _download(self, request: web.Request) -> web.Response:
        if request.match_info["token"] != self.token:
            return _error(401, "Unauthorized")
        path = request.match_info["path"]
        file_id = path.removeprefix("voice/").removesuffix(".oga")
        data = self.files.get(file_id)
        self.downloads.append(path)
        self._notify()
        if self.download_hold is not None:
            await self.download_hold.wait()
        if data is None:
            return _error(404, "Not Found")
        return web.Response(body=data, content_type="application/octet-stream")

    async def _m_getme(self, _params: dict[str, Any], _request: web.Request) -> web.Response:
        return _ok(BOT_USER)

    async def _m_getupdates(self, params: dict[str, Any], request: web.Request) -> web.Response:
        offset = params.get("offset")
        if isinstance(offset, int) and offset > 0:
            # confirming: everything below the offset is gone for good
            self._updates = [u for u in self._updates if u["update_id"] >= offset]
        timeout = float(params.get("timeout") or 0)
        limit = int(params.get("limit") or 100)
        client = request.match_info.get("client", "")
        if self._open_polls:
            self.poll_overlaps += 1
            if self.conflict_on_overlap:  # Telegram ends the older poll
                for _, ended in self._open_polls.values():
                    ended.set()
        poll_id, ended = next(self._poll_ids), asyncio.Event()
        self._open_polls[poll_id] = (client, ended)
        self._notify()
        try:
            if not self._updates and timeout > 0 and not self._stopping:
                try:
                    await self._wait(
                        lambda: bool(self._updates) or ended.is_set() or self._stopping, timeout
                    )
                except TimeoutError:
                    pass
        finally:
            del self._open_polls[poll_id]
            self._notify()
        if ended.is_set():
            return _error(
                409,
                "Conflict: terminated by other getUpdates request; make sure that only one "
                "bot instance is running",
            )
        return _ok(self._updates[:limit])

    async def _m_sendmessage(self, params: dict[str, Any], request: web.Request) -> web.Response:
        chat_id = int(params["chat_id"])
        await self._wait_on_hold(chat_id, request)
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
        if chat_id in self.blocked_by:
            return _error(403, "Forbidden: bot was blocked by the user")
        if self._in_deleted_topic(params):
            return _error(400, "Bad Request: message thread not found")
        parse_mode = params.get("parse_mode")
        if self.reject_html and parse_mode == "HTML":
            return _error(400, "Bad Request: can't parse entities: unsupported start tag")
        business = params.get("business_connection_id")
        if business is not None:
            refusal = self._business_refusal(str(business), chat_id)
            if refusal is not None:
                return _error(400, refusal)
        message = self._accept(chat_id, str(params.get("text", "")), parse_mode, params)
        if business is not None:
            self._echo_business(str(business), message)
        return _ok(message)

    def _business_refusal(self, connection_id: str, chat_id: int) -> str | None:
        """Why Telegram refuses a message on the owner's behalf, or None."""
        connection = self.business_connections.get(connection_id)
        if connection is None:
            return "Bad Request: business connection not found"
        rights = connection.get("rights", {})
        if not connection["is_enabled"] or not rights.get("can_reply"):
            return "Bad Request: BOT_BUSINESS_MISSING"
        last_in = self.business_incoming.get((connection_id, chat_id))
        if last_in is None or time.time() - last_in > 24 * 3600:
            return "Bad Request: BUSINESS_PEER_USAGE_MISSING"
        return None

    def _echo_business(self, connection_id: str, sent: dict[str, Any]) -> None:
        """Telegram's `business_message` about the bot's own message in the chat."""
        owner = self.business_connections[connection_id]["user"]
        sent["business_connection_id"] = connection_id
        sent["from"] = owner
        sent["sender_business_bot"] = {
            k: BOT_USER[k] for k in ("id", "is_bot", "first_name", "username")
        }
        sent["chat"] = {"id": sent["chat"]["id"], "type": "private", "first_name": "Customer"}
        if self.echo_business_sends:
            self.enqueue_update({"business_message": dict(sent)})

    async def _wait_on_hold(
        self, chat_id: int, request: web.Request, method: str | None = None
    ) -> None:
        """Keep a sendMessage/copyMessage to a held chat (or a call of a held `method`)
        until released (or cancelled)."""
        hold = next(
            (
                h
                for h in self._holds
                if not h.released.is_set() and h.method == method and h.chat_id in (None, chat_id)
            ),
            None,
        )
        if hold is None:
            return
        hold.waiting += 1
        hold.arrived.set()
        try:
            await hold.released.wait()
        finally:
            hold.waiting -= 1  # released, or cancelled because the client went away
            self._notify()
        if request.transport is None or request.transport.is_closing():
            raise asyncio.CancelledError

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

    async def _m_sendchataction(self, params: dict[str, Any], _r: web.Request) -> web.Response:
        business = params.get("business_connection_id")
        if business is not None:
            refusal = self._business_refusal(str(business), int(params["chat_id"]))
            if refusal is not None:
                return _error(400, refusal)
        return _ok(True)

    async def _m_getbusinessconnection(
        self, params: dict[str, Any], _r: web.Request
    ) -> web.Response:
        connection = self.business_connections.get(str(params.get("business_connection_id")))
        if connection is None:
            return _error(400, "Bad Request: business connection not found")
        return _ok(connection)

    # ------------------------------------------------------------------ forum topics
    def _in_deleted_topic(self, params: dict[str, Any]) -> bool:
        thread = params.get("message_thread_id")
        return isinstance(thread, int) and (int(params["chat_id"]), thread) in self.deleted_topics

    async def _m_copymessage(self, params: dict[str, Any], request: web.Request) -> web.Response:
        chat_id = int(params["chat_id"])
        await self._wait_on_hold(chat_id, request)
        if self._in_deleted_topic(params):
            return _error(400, "Bad Request: message thread not found")
        message = self._accept(chat_id, "", None, params, kind="copy")
        return _ok({"message_id": message["message_id"]})

    async def _m_getchat(self, params: dict[str, Any], _r: web.Request) -> web.Response:
        chat = self.chats.get(int(params["chat_id"]))
        return _ok(chat) if chat is not None else _error(400, "Bad Request: chat not found")

    async def _m_getchatmember(self, params: dict[str, Any], _r: web.Request) -> web.Response:
        chat_id, user_id = int(params["chat_id"]), int(params["user_id"])
        if user_id != BOT_USER["id"]:
            status = self.member_status.get((chat_id, user_id), "member")
            person = {"id": user_id, "is_bot": False, "first_name": f"User{user_id}"}
            if status == "administrator":
                return _ok({**_ADMIN_RIGHTS, "status": status, "user": person})
            return _ok({"status": status, "user": person, "is_anonymous": False})
        member = self.bot_members.get(chat_id)
        if member is None:
            return _error(400, "Bad Request: chat not found")
        return _ok(member)

    async def _m_createforumtopic(self, params: dict[str, Any], r: web.Request) -> web.Response:
        chat_id = int(params["chat_id"])
        await self._wait_on_hold(chat_id, r, "createForumTopic")
        if not self.chats.get(chat_id, {}).get("is_forum"):
            return _error(400, "Bad Request: the chat is not a forum")
        thread_id = next(self._next_thread_id)
        name = str(params.get("name", ""))
        self.topics[(chat_id, thread_id)] = name
        self._notify()
        return _ok({"message_thread_id": thread_id, "name": name, "icon_color": 7322096})

    async def _m_closeforumtopic(self, params: dict[str, Any], _r: web.Request) -> web.Response:
        return self._topic_state(params, closed=True)

    async def _m_reopenforumtopic(self, params: dict[str, Any], _r: web.Request) -> web.Response:
        return self._topic_state(params, closed=False)

    def _topic_state(self, params: dict[str, Any], *, closed: bool) -> web.Response:
        key = (int(params["chat_id"]), int(params["message_thread_id"]))
        if key not in self.topics:
            return _error(400, "Bad Request: message thread not found")
        if (key in self.closed_topics) == closed:
            return _error(400, "Bad Request: TOPIC_NOT_MODIFIED")
        (self.closed_topics.add if closed else self.closed_topics.discard)(key)
        self._notify()
        return _ok(True)

    async def _m_answercallbackquery(self, _p: dict[str, Any], r: web.Request) -> web.Response:
        await self._wait_on_hold(0, r, "answerCallbackQuery")  # hold_calls: a crash test
        return _ok(True)  # the call is recorded in `calls` (its text is what the user sees)

    async def _m_editmessagereplymarkup(
        self, params: dict[str, Any], request: web.Request
    ) -> web.Response:
        chat_id, message_id = int(params["chat_id"]), int(params["message_id"])
        await self._wait_on_hold(chat_id, request, "editMessageReplyMarkup")
        business = params.get("business_connection_id")
        for index, sent in enumerate(self.messages):
            if sent.chat_id == chat_id and sent.message_id == message_id:
                if sent.params.get("business_connection_id") != business:
                    # a message sent on the owner's behalf is edited through the same
                    # connection (editMessageReplyMarkup's business_connection_id); any
                    # other message is not found there
                    break
                markup = params.get("reply_markup")
                new_params = {**sent.params, "reply_markup": markup}
                self.messages[index] = SentMessage(
                    sent.message_id, chat_id, sent.text, sent.parse_mode, new_params, sent.kind
                )
                self._notify()
                return _ok(True)
        return _error(400, "Bad Request: message to edit not found")

    async def _m_editmessagetext(
        self, params: dict[str, Any], request: web.Request
    ) -> web.Response:
        """The message's text (and keyboard) replaced, as Telegram does: the same text and
        keyboard again is refused ("message is not modified")."""
        chat_id, message_id = int(params["chat_id"]), int(params["message_id"])
        for index, sent in enumerate(self.messages):
            if sent.chat_id == chat_id and sent.message_id == message_id:
                text, markup = str(params["text"]), params.get("reply_markup")
                if text == sent.text and markup == sent.params.get("reply_markup"):
                    return _error(400, "Bad Request: message is not modified")
                new_params = {**sent.params, "text": text, "reply_markup": markup}
                self.messages[index] = SentMessage(
                    sent.message_id, chat_id, text, params.get("parse_mode"), new_params, sent.kind
                )
                self._notify()
                return _ok({**self._accepted_shape(chat_id, message_id), "text": text})
        return _error(400, "Bad Request: message to edit not found")

    def _accepted_shape(self, chat_id: int, message_id: int) -> dict[str, Any]:
        return {
            "message_id": message_id,
            "date": int(time.time()),
            "chat": {"id": chat_id, "type": "private" if chat_id > 0 else "group"},
            "from": {k: BOT_USER[k] for k in ("id", "is_bot", "first_name", "username")},
        }

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


# the rights a group administrator has in getChatMember (every field Telegram requires)
_ADMIN_RIGHTS: dict[str, Any] = {
    "can_be_edited": False,
    "is_anonymous": False,
    "can_manage_chat": True,
    "can_delete_messages": True,
    "can_manage_video_chats": True,
    "can_restrict_members": True,
    "can_promote_members": False,
    "can_change_info": True,
    "can_invite_users": True,
    "can_post_stories": False,
    "can_edit_stories": False,
    "can_delete_stories": False,
    "can_send_welcome_messages": False,
}


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


def voice_update(
    chat_id: int, *, file_id: str, duration: int, file_size: int | None = None, **kwargs: Any
) -> dict[str, Any]:
    """A voice note (the file itself: `FakeTelegramServer.add_file`)."""
    voice: dict[str, Any] = {
        "file_id": file_id,
        "file_unique_id": f"u-{file_id}",
        "duration": duration,
        "mime_type": "audio/ogg",
    }
    if file_size is not None:
        voice["file_size"] = file_size
    return message_update(chat_id, extra={"voice": voice}, **kwargs)


def video_note_update(
    chat_id: int, *, file_id: str, duration: int, **kwargs: Any
) -> dict[str, Any]:
    """A round video note (the file itself: `FakeTelegramServer.add_file`)."""
    note = {
        "file_id": file_id,
        "file_unique_id": f"u-{file_id}",
        "length": 240,
        "duration": duration,
    }
    return message_update(chat_id, extra={"video_note": note}, **kwargs)


def topic_message_update(
    chat_id: int,
    thread_id: int | None,
    *,
    text: str | None = None,
    user_id: int = 9001,
    language_code: str | None = "ru",
    extra: dict[str, Any] | None = None,
    **kwargs: Any,
) -> dict[str, Any]:
    """A message in a forum supergroup: inside topic `thread_id`, or in the General topic
    (None). A message outside a forum carrying `message_thread_id` (a reply thread) has
    no `is_topic_message`; pass it through `extra` to build one."""
    update = message_update(
        chat_id,
        text=text,
        user_id=user_id,
        language_code=language_code,
        chat_type="supergroup",
        extra=extra,
        **kwargs,
    )
    message = update["message"]
    message["chat"]["is_forum"] = True
    if thread_id is not None:
        message["message_thread_id"] = thread_id
        message["is_topic_message"] = True
    return update


def topic_closed_update(chat_id: int, thread_id: int, *, user_id: int = 9001) -> dict[str, Any]:
    """Telegram's service message when someone closes a forum topic."""
    return topic_message_update(
        chat_id, thread_id, user_id=user_id, extra={"forum_topic_closed": {}}
    )


def photo_update(chat_id: int, *, caption: str | None = None, **kwargs: Any) -> dict[str, Any]:
    photo = [{"file_id": "photo-file", "file_unique_id": "ph1", "width": 90, "height": 90}]
    extra: dict[str, Any] = {"photo": photo}
    if caption is not None:
        extra["caption"] = caption
    return message_update(chat_id, extra=extra, **kwargs)


def callback_update(
    chat_id: int,
    data: str,
    *,
    message_id: int = 1,
    user_id: int | None = None,
    language_code: str | None = "ru",
    chat_type: str | None = None,
    update_id: int | None = None,
) -> dict[str, Any]:
    """A press of an inline button under the bot's message `message_id` in `chat_id`;
    `data` is whatever the (possibly forged) client sends."""
    uid = next(_update_ids) if update_id is None else update_id
    kind = chat_type or ("private" if chat_id > 0 else "group")
    chat: dict[str, Any] = {"id": chat_id, "type": kind}
    if kind != "private":
        chat["title"] = "Test group"
    message = {
        "message_id": message_id,
        "date": int(time.time()),
        "chat": chat,
        "from": {k: BOT_USER[k] for k in ("id", "is_bot", "first_name", "username")},
        "text": "an answer",
    }
    query = {
        "id": f"cq-{uid}",
        "from": _user(user_id if user_id is not None else abs(chat_id), language_code),
        "chat_instance": f"ci-{chat_id}",
        "message": message,
        "data": data,
    }
    return {"update_id": uid, "callback_query": query}


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


# ------------------------------------------------------------- Business mode (Bot API 10.3)
def business_connection(
    connection_id: str, owner_id: int, *, can_reply: bool = True, is_enabled: bool = True
) -> dict[str, Any]:
    """A BusinessConnection: `rights` (BusinessBotRights, Bot API 9.0+) says what the bot
    may do; `user_chat_id` is the owner's private chat with the bot."""
    return {
        "id": connection_id,
        "user": {"id": owner_id, "is_bot": False, "first_name": f"Owner{owner_id}"},
        "user_chat_id": owner_id,
        "date": int(time.time()),
        "is_enabled": is_enabled,
        "rights": {"can_reply": can_reply, "can_read_messages": True},
    }


def business_message_update(
    connection_id: str,
    chat_id: int,
    *,
    text: str,
    from_id: int | None = None,
    language_code: str | None = "ru",
    date: int | None = None,
    message_id: int | None = None,
    key: str = "business_message",
) -> dict[str, Any]:
    """A message in a chat of the business account: from the customer (`from_id` None:
    the chat's user) or written by the owner themself (`from_id`: the owner's id). The
    chat of a business message is the private chat with the customer; its id is the
    customer's, independent from any bot chat that shares it."""
    uid = next(_update_ids)
    sender = _user(chat_id if from_id is None else from_id, language_code)
    message: dict[str, Any] = {
        "message_id": message_id if message_id is not None else uid,
        "business_connection_id": connection_id,
        "date": int(time.time()) if date is None else date,
        "chat": {"id": chat_id, "type": "private", "first_name": f"User{chat_id}"},
        "from": sender,
        "text": text,
    }
    return {"update_id": uid, key: message}


def edited_business_message_update(
    connection_id: str, chat_id: int, *, text: str, message_id: int, **kwargs: Any
) -> dict[str, Any]:
    update = business_message_update(
        connection_id,
        chat_id,
        text=text,
        message_id=message_id,
        key="edited_business_message",
        **kwargs,
    )
    update["edited_business_message"]["edit_date"] = int(time.time())
    return update


def deleted_business_messages_update(
    connection_id: str, chat_id: int, message_ids: list[int]
) -> dict[str, Any]:
    return {
        "update_id": next(_update_ids),
        "deleted_business_messages": {
            "business_connection_id": connection_id,
            "chat": {"id": chat_id, "type": "private", "first_name": f"User{chat_id}"},
            "message_ids": message_ids,
        },
    }


def business_callback_update(
    connection_id: str,
    chat_id: int,
    data: str,
    *,
    message_id: int,
    owner_id: int,
    user_id: int | None = None,
) -> dict[str, Any]:
    """A press of an inline button under the bot's message in a business chat (the
    message carries the connection id; it was sent on the owner's behalf): by the
    customer, or (`user_id`) by someone else who sees it, e.g. the owner."""
    update = callback_update(chat_id, data, message_id=message_id, user_id=user_id)
    message = update["callback_query"]["message"]
    message["business_connection_id"] = connection_id
    message["from"] = {"id": owner_id, "is_bot": False, "first_name": f"Owner{owner_id}"}
    message["sender_business_bot"] = {
        k: BOT_USER[k] for k in ("id", "is_bot", "first_name", "username")
    }
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
