"""A fake OpenAI Chat Completions server (aiohttp) for the real `AsyncOpenAI` client.

In tests: the `fake_openai` fixture starts it on a free loopback port; point the client
at `server.base_url`. Every request body is recorded in `server.requests`. Behaviour is
a handler, a function from the request body to a reply (sync or async):

    server.handler = lambda body: completion(text="Здравствуйте!")
    server.handler = sequence(completion(tool_calls=[fake_call(...)]), completion(text="..."))
    server.handler = lambda body: error(429)

To keep a request in flight, return `completion(..., hold=event)` (or await anything in
an async handler) and release it with `event.set()`; `await server.wait_for_requests(n)`
waits until the n-th request has arrived. No sleeps are needed in tests.

As a process (end-to-end tests, the benchmark), with a keyword script that behaves like
a well-mannered model (see `default_script`):

    python -m tests.fakes.openai_server --port 0 --latency-ms 50

prints `listening on http://127.0.0.1:PORT/v1` once ready. Run it with the repository
root as the working directory (or on PYTHONPATH). Extra endpoints for such tests:
`GET /_fake/requests` (recorded bodies), `POST /_fake/reset`, and
`POST /_fake/fail {"status": 500, "times": 1}` (the next N completions fail).

`POST /v1/audio/transcriptions` (multipart, as the SDK sends it) answers `{"text": ...}`:
the text scripted for the file's bytes in `server.transcripts`, else the bytes themselves
read as UTF-8 (so a test's "audio" can simply be the words it stands for). A model not in
`server.transcription_models` gets 404 `model_not_found`, as OpenAI answers;
`server.transcription_reply` replaces the answer (e.g. `error(500)`); a set
`server.transcription_hold` keeps requests in flight until it is set (to kill the bot
mid-transcription). Each request is recorded in `server.transcriptions` (model, file name,
size — never the audio), and `wait_for_transcriptions(n)` waits for the n-th.

`GET /v1/models` lists `server.models` (by default the model names the tests and the
bench use) the way OpenAI does; `server.models_reply` replaces that answer (e.g.
`error(401)` for a rejected key, `error(404)` for a server without the endpoint), and
`server.models_requests` counts the calls.

Streaming: a request with `"stream": true` gets the same reply as server-sent events,
one chunk per word of the text (a "token"), tool calls in pieces, the finish reason,
then the usage chunk when the reply has usage and the request asked for it
(`stream_options.include_usage`). `server.stream_tokens_per_s` (0: as fast as possible)
and `server.first_token_ms` pace it like a real model; `completion(..., pause_after=n,
hold=event)` sends n words, then waits for the event (a turn in the middle of its
answer); `server.refuse_streaming = True` answers streamed requests with 400 like a
provider that does not stream. Process mode: `--tokens-per-s`, `--first-token-ms`, and
`POST /_fake/config {"tokens_per_s": 50, "first_token_ms": 500, "answer_words": 300}`
(the bench: text answers padded to that many words; with a token rate, a request that
is not streamed is answered whole after the same generation time).

For the benchmark (bench/): `GET /_fake/timings?after=N` lists a light record per
completion (arrival and answer times, the fake's own time in ms, whether tools were
offered, how many tool calls it answered with, the size of the prompt and the last user
message) so the bench can subtract "time inside the model" from end-to-end latency;
`POST /_fake/config {"latency_ms": 1000}` changes the simulated latency at run time; and
`--no-bodies` stops keeping whole request bodies (a long load run would hold them all).
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import inspect
import json
import re
import signal
import socket
import time
import uuid
from collections.abc import AsyncIterator, Awaitable, Callable, Iterable
from dataclasses import dataclass, field, replace
from typing import Any

import pytest
from aiohttp import web

from tests.waits import OUTER_LIMIT_S

Body = dict[str, Any]


@dataclass(frozen=True)
class FakeReply:
    """What the server answers to one request."""

    status: int = 200
    body: Any = None  # dict → JSON; str → sent as is (e.g. to test malformed JSON)
    headers: dict[str, str] = field(default_factory=dict)
    hold: asyncio.Event | None = None  # answer only once this is set
    pause_after: int | None = None  # streamed: hold after this many words, not before


Handler = Callable[[Body], FakeReply | Awaitable[FakeReply]]


def fake_call(name: str, arguments: dict[str, Any] | str, *, id: str | None = None) -> Body:
    """One `tool_calls` entry; pass a string to send malformed or odd arguments verbatim."""
    raw = arguments if isinstance(arguments, str) else json.dumps(arguments, ensure_ascii=False)
    return {
        "id": id or f"call_{uuid.uuid4().hex[:12]}",
        "type": "function",
        "function": {"name": name, "arguments": raw},
    }


def completion(
    *,
    text: str | None = None,
    tool_calls: Iterable[Body] = (),
    finish_reason: str | None = None,
    refusal: str | None = None,
    usage: tuple[int, int] | None = (12, 7),
    cached_tokens: int | None = None,
    model: str | None = None,
    id: str | None = None,
    hold: asyncio.Event | None = None,
    pause_after: int | None = None,
) -> FakeReply:
    """A 200 chat.completion; finish_reason defaults to tool_calls/stop from the content.

    `model=None` echoes the requested model. `usage=None` omits the usage object.
    """
    calls = list(tool_calls)
    message: Body = {"role": "assistant", "content": text, "refusal": refusal}
    if calls:
        message["tool_calls"] = calls
    body: Body = {
        "id": id or f"chatcmpl-{uuid.uuid4().hex[:16]}",
        "object": "chat.completion",
        "created": 1_700_000_000,
        "model": model,
        "choices": [
            {
                "index": 0,
                "message": message,
                "finish_reason": finish_reason or ("tool_calls" if calls else "stop"),
                "logprobs": None,
            }
        ],
    }
    if usage is not None:
        prompt, done = usage
        body["usage"] = {
            "prompt_tokens": prompt,
            "completion_tokens": done,
            "total_tokens": prompt + done,
        }
        if cached_tokens is not None:  # the provider served part of the prompt from cache
            body["usage"]["prompt_tokens_details"] = {"cached_tokens": cached_tokens}
    return FakeReply(body=body, hold=hold, pause_after=pause_after)


def error(
    status: int,
    message: str = "fake error",
    *,
    code: str | None = None,
    retry: bool = False,
    hold: asyncio.Event | None = None,
) -> FakeReply:
    """An OpenAI-style error. By default tells the SDK not to retry (`x-should-retry`),
    so tests see exactly one request per model; `retry=True` lets the SDK retry at once."""
    body = {"error": {"message": message, "type": "fake_error", "param": None, "code": code}}
    # a retry is asked to come back after 1 ms instead of the SDK's backoff
    headers = {"retry-after-ms": "1"} if retry else {"x-should-retry": "false"}
    return FakeReply(status=status, body=body, headers=headers, hold=hold)


def sequence(*replies: FakeReply | Handler) -> Handler:
    """A handler answering with the given replies (or handlers) in order; extra requests
    get a 500 that names the problem, so an unexpected call fails the test visibly."""
    queue = list(replies)

    async def handler(body: Body) -> FakeReply:
        if not queue:
            return error(500, "fake_openai: no scripted reply left")
        item = queue.pop(0)
        if isinstance(item, FakeReply):
            return item
        result = item(body)
        return await result if inspect.isawaitable(result) else result

    return handler


def by_model(replies: dict[str, FakeReply | Handler]) -> Handler:
    """A handler choosing by the requested model (fallback tests)."""

    async def handler(body: Body) -> FakeReply:
        item = replies.get(str(body.get("model")))
        if item is None:
            return error(404, f"unknown model {body.get('model')}")
        if isinstance(item, FakeReply):
            return item
        result = item(body)
        return await result if inspect.isawaitable(result) else result

    return handler


# --------------------------------------------------------------------------- default script

_ORDER_RE = re.compile(r"(?<!\d)\d{4}(?!\d)")
_BENCH_MARKER = re.compile(r"#[b-df-hj-np-tv-z]+\b")  # bench/driver.py's marker
_RETURN_WORDS = ("вернуть", "возврат", "return")
_ORDER_WORDS = ("заказ", "order", "посылк")
_PRODUCTS = {
    "кофемашин": "кофемашина",
    "наушник": "наушники",
    "клавиатур": "клавиатура",
    "coffee machine": "кофемашина",
    "headphones": "наушники",
    "keyboard": "клавиатура",
}


# questions about the shop itself → get_shop_info with a short topic (the FAQ has no
# warranty entry in the demo: the honest "I don't know, here is how to contact us")
_SHOP_INFO_TOPICS = {
    "доставк": "доставка",
    "оплат": "оплата",
    "контакт": "контакты",
    "гаранти": "гарантия",
    "delivery": "delivery",
    "payment": "payment",
    "contact": "contacts",
    "warranty": "warranty",
}


def _is_russian(text: str) -> bool:
    return re.search(r"[а-яё]", text.lower()) is not None


def _wanted_calls(text: str, *, search: str = "") -> list[tuple[str, dict[str, str]]]:
    lowered = text.lower()
    wanted: list[tuple[str, dict[str, str]]] = [
        ("get_order_status", {"order_id": number}) for number in _ORDER_RE.findall(text)
    ]
    if any(word in lowered for word in _RETURN_WORDS):
        product = next((name for stem, name in _PRODUCTS.items() if stem in lowered), None)
        if product is None:
            match = re.search(r"(?:вернуть|return)\s+([\w-]{2,})", lowered)
            product = match.group(1) if match else "товар"
        wanted.append(("get_return_policy", {"product": product}))
    topics = [topic for stem, topic in _SHOP_INFO_TOPICS.items() if stem in lowered]
    if search and topics:  # the shop's knowledge, searched with the customer's words
        query = text if search == "verbatim" else _BENCH_MARKER.sub("", text).strip()
        wanted.append(("search_knowledge", {"query": query}))
    else:
        wanted += [("get_shop_info", {"topic": topic}) for topic in dict.fromkeys(topics)]
    return wanted


def _text_of(message: Body) -> str:
    content = message.get("content")
    if isinstance(content, str):
        return content
    if isinstance(content, list):  # content parts
        return " ".join(str(p.get("text", "")) for p in content if isinstance(p, dict))
    return ""


def _shop_info_text(data: Body, russian: bool) -> str:
    """A get_shop_info result as a careful model words it: the shop's own answers, or an
    honest "I don't know" with the shop's contacts."""
    if data.get("found"):
        return " ".join(f"{e.get('topic')}: {e.get('answer')}" for e in data.get("entries") or [])
    if russian:
        text, contact = "нет сведений, я не знаю ответа на этот вопрос.", " Связаться с магазином: "
    else:
        text, contact = "no information, I don't know the answer to that.", " Contact the shop: "
    return text + (contact + str(data["contacts"]) if data.get("contacts") else "")


def _answer_from_results(results: list[Any], russian: bool) -> str:
    parts: list[str] = []
    for result in results:
        if isinstance(result, dict) and result.get("ok") is True:
            data = result.get("data") or {}
            if "entries" in data:  # get_shop_info
                parts.append(_shop_info_text(data, russian))
            elif data.get("passages"):  # search_knowledge: the best passage, as a model quotes it
                parts.append(str(data["passages"][0].get("text", ""))[:300])
            elif data.get("found") is False:
                parts.append(("не найдено: " if russian else "not found: ") + _compact(data))
            else:
                parts.append(_compact(data))
        elif isinstance(result, dict) and isinstance(result.get("error"), dict):
            code = result["error"].get("code", "error")
            parts.append(("ошибка " if russian else "error ") + str(code))
        else:
            parts.append(str(result))
    head = "По данным магазина: " if russian else "According to the shop: "
    return head + "; ".join(parts)


def _compact(data: Any) -> str:
    return json.dumps(data, ensure_ascii=False, separators=(", ", ": "))


def knowledge_script(body: Body) -> FakeReply:
    """`default_script`, except that a question about delivery, payment, contacts or the
    warranty searches the shop's knowledge (`search_knowledge` with the customer's
    words, the bench's marker left out as a model would) instead of asking
    `get_shop_info` (the bench's knowledge on/off runs)."""
    return default_script(body, search="words")


def verbatim_knowledge_script(body: Body) -> FakeReply:
    """`knowledge_script` searching the whole message, marker included: every search is
    a new question (the bench's worst case for the knowledge)."""
    return default_script(body, search="verbatim")


SCRIPTS: dict[str, Handler] = {
    "default": lambda body: default_script(body),
    "knowledge": knowledge_script,
    "knowledge-verbatim": verbatim_knowledge_script,
}


def default_script(body: Body, *, search: str = "") -> FakeReply:
    """Behaves like a careful support model, driven by keywords of the last user message.

    Order numbers → `get_order_status`, "вернуть"/"return" → `get_return_policy`,
    "доставк"/"оплат"/"контакт"/"гаранти"/"delivery"/"payment"/"contact"/"warranty" →
    `get_shop_info` with a short topic (or `search_knowledge`, `search`: "words" or
    "verbatim"); several → all calls in one response (or one per
    response when `parallel_tool_calls` is false);
    once every wanted call has a result → a text answer quoting the data. A question
    about an order without a number → asks for the 4-digit number. Requests without
    tools (summaries) → a short summary of the user messages.
    """
    messages: list[Body] = list(body.get("messages") or [])
    last_user_index = max(
        (i for i, m in enumerate(messages) if m.get("role") == "user"), default=-1
    )
    user_text = _text_of(messages[last_user_index]) if last_user_index >= 0 else ""
    russian = _is_russian(user_text)

    if not body.get("tools"):
        users = [_text_of(m) for m in messages if m.get("role") == "user"]
        summary = " ".join(users)[-600:]
        return completion(text=("Кратко: " if russian else "Summary: ") + summary)

    turn = messages[last_user_index + 1 :]
    made: list[tuple[str, dict[str, Any]]] = []
    for message in turn:
        for call in message.get("tool_calls") or []:
            function = call.get("function") or {}
            try:
                arguments = json.loads(function.get("arguments") or "{}")
            except ValueError:
                arguments = {}
            made.append((str(function.get("name")), arguments))
    results = []
    for message in turn:
        if message.get("role") == "tool":
            try:
                results.append(json.loads(_text_of(message)))
            except ValueError:
                results.append(_text_of(message))

    pending = [call for call in _wanted_calls(user_text, search=search) if call not in made]
    if pending and body.get("tool_choice") != "none":
        if body.get("parallel_tool_calls") is False:
            pending = pending[:1]
        return completion(tool_calls=[fake_call(name, args) for name, args in pending])
    if results:
        return completion(text=_answer_from_results(results, russian))
    lowered = user_text.lower()
    if any(word in lowered for word in _ORDER_WORDS):
        text = (
            "Подскажите, пожалуйста, 4-значный номер заказа?"
            if russian
            else "Could you tell me your 4-digit order number?"
        )
        return completion(text=text)
    greeting = "Здравствуйте! Чем могу помочь?" if russian else "Hello! How can I help you?"
    return completion(text=greeting)


# --------------------------------------------------------------------------- the server

# What GET /v1/models lists unless a test says otherwise: the models the e2e tests and
# the bench configure (OPENAI_MODEL=fake-model) and the bot's default.
DEFAULT_MODELS = ("fake-model", "fake-fallback", "gpt-4o-mini")
# The transcription models the fake offers unless a test says otherwise.
DEFAULT_TRANSCRIPTION_MODELS = ("whisper-1",)


class FakeOpenAIServer:
    """POST /v1/chat/completions answered by `handler`; every body kept in `requests`."""

    def __init__(
        self,
        handler: Handler | None = None,
        *,
        latency_ms: float = 0.0,
        keep_bodies: bool = True,
    ) -> None:
        self.handler: Handler = handler or default_script
        self.latency_ms = latency_ms
        self.keep_bodies = keep_bodies
        self.requests: list[Body] = []
        self.timings: list[Body] = []
        self.headers: list[dict[str, str]] = []
        self._fail_status = 0
        self._fail_times = 0
        self.models: list[str] = list(DEFAULT_MODELS)
        self.models_reply: FakeReply | None = None
        self.models_requests = 0
        self.transcripts: dict[bytes, str] = {}
        self.transcription_models: set[str] = set(DEFAULT_TRANSCRIPTION_MODELS)
        self.transcription_reply: FakeReply | None = None
        self.transcription_hold: asyncio.Event | None = None
        self.transcriptions: list[Body] = []
        self.stream_tokens_per_s = 0.0
        self.first_token_ms = 0.0
        self.refuse_streaming = False
        self.answer_words = 0  # pad text answers to this many words (the bench)
        self._arrived: asyncio.Condition | None = None
        self._closing = asyncio.Event()
        self._inflight: set[asyncio.Task[Any]] = set()
        self._runner: web.AppRunner | None = None
        self.host = "127.0.0.1"
        self.port = 0

    @property
    def base_url(self) -> str:
        return f"http://{self.host}:{self.port}/v1"

    def hold_answers(self) -> asyncio.Event:
        """Answer with the default script only once the returned event is set.

        For tests that need a turn in flight (SIGTERM, SIGKILL, typing indicators).
        """
        release = asyncio.Event()

        async def held(body: Body) -> FakeReply:
            await release.wait()
            return default_script(body)

        self.handler = held
        return release

    @property
    def chat_requests(self) -> list[Body]:
        """Requests that offered tools (chat turns), as opposed to plain-text summaries."""
        return [r for r in self.requests if r.get("tools")]

    async def start(self, host: str = "127.0.0.1", port: int = 0) -> FakeOpenAIServer:
        self._arrived = asyncio.Condition()
        app = web.Application()
        app.router.add_post("/v1/chat/completions", self._completions)
        app.router.add_get("/v1/models", self._list_models)
        app.router.add_post("/v1/audio/transcriptions", self._transcribe)
        app.router.add_get("/_fake/requests", self._list_requests)
        app.router.add_post("/_fake/reset", self._reset)
        app.router.add_post("/_fake/fail", self._fail)
        app.router.add_get("/_fake/timings", self._list_timings)
        app.router.add_post("/_fake/config", self._config)
        sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        sock.bind((host, port))
        self.host, self.port = sock.getsockname()[:2]
        self._runner = web.AppRunner(app, access_log=None, shutdown_timeout=1.0)
        await self._runner.setup()
        await web.SockSite(self._runner, sock).start()
        return self

    async def close(self) -> None:
        self._closing.set()
        for task in list(self._inflight):
            task.cancel()
        if self._runner is not None:
            await self._runner.cleanup()
            self._runner = None

    async def wait_for_requests(self, count: int, within_s: float = OUTER_LIMIT_S) -> None:
        """Bounded wait until at least `count` requests have arrived."""
        assert self._arrived is not None, "server not started"
        async with asyncio.timeout(within_s), self._arrived:
            await self._arrived.wait_for(lambda: len(self.requests) >= count)

    async def wait_for_transcriptions(self, count: int, within_s: float = OUTER_LIMIT_S) -> None:
        """Bounded wait until at least `count` transcription requests have arrived."""
        assert self._arrived is not None, "server not started"
        async with asyncio.timeout(within_s), self._arrived:
            await self._arrived.wait_for(lambda: len(self.transcriptions) >= count)

    async def _transcribe(self, request: web.Request) -> web.Response:
        form = await request.post()
        upload = form.get("file")
        if not isinstance(upload, web.FileField):
            return _json_response(error(400, "file is required"))
        audio = upload.file.read()
        model = str(form.get("model", ""))
        self.transcriptions.append(
            {"model": model, "filename": upload.filename, "size": len(audio)}
        )
        assert self._arrived is not None
        async with self._arrived:
            self._arrived.notify_all()
        if self.transcription_hold is not None:
            await _first_of(self.transcription_hold, self._closing)
        if self.transcription_reply is not None:
            return _json_response(self.transcription_reply)
        if model not in self.transcription_models:
            message = f"The model `{model}` does not exist or you do not have access to it."
            return _json_response(error(404, message, code="model_not_found"))
        text = self.transcripts.get(audio)
        if text is None:
            text = audio.decode("utf-8", "replace")
        return web.json_response({"text": text})

    async def _list_models(self, request: web.Request) -> web.Response:
        self.models_requests += 1
        if self.models_reply is not None:
            return _json_response(self.models_reply)
        data = [
            {"id": name, "object": "model", "created": 1_700_000_000, "owned_by": "fake"}
            for name in self.models
        ]
        return web.json_response({"object": "list", "data": data})

    async def _completions(self, request: web.Request) -> web.StreamResponse:
        task = asyncio.current_task()
        if task is not None:
            self._inflight.add(task)
        try:
            return await self._answer(request)
        finally:
            if task is not None:
                self._inflight.discard(task)

    async def _answer(self, request: web.Request) -> web.StreamResponse:
        try:
            body = await request.json()
        except ValueError:
            return _json_response(error(400, "invalid JSON body"))
        arrived = time.time()
        if self.keep_bodies:
            self.requests.append(body)
            self.headers.append(dict(request.headers))
        assert self._arrived is not None
        async with self._arrived:
            self._arrived.notify_all()
        if self.latency_ms > 0:
            await asyncio.sleep(self.latency_ms / 1000)  # simulated model latency (bench)
        if self._fail_times > 0:
            self._fail_times -= 1
            return _json_response(error(self._fail_status, "scripted failure"))
        streamed = bool(body.get("stream"))
        if streamed and self.refuse_streaming:
            return _json_response(error(400, "streaming is not supported"))
        result = self.handler(body)
        reply = await result if inspect.isawaitable(result) else result
        if reply.hold is not None and not (streamed and reply.pause_after is not None):
            await _first_of(reply.hold, self._closing)
        if isinstance(reply.body, dict) and "choices" in reply.body:
            if reply.body.get("model") is None:
                reply = replace(reply, body={**reply.body, "model": body.get("model")})
            reply = self._padded(reply)
            if streamed and reply.status == 200:
                return await self._stream(request, body, reply, arrived)
            await self._generation_time(reply)
        self.timings.append(_timing(body, reply, arrived, time.time()))
        return _json_response(reply)

    def _padded(self, reply: FakeReply) -> FakeReply:
        """A text answer padded with filler words to `answer_words` (the bench)."""
        if self.answer_words <= 0 or not isinstance(reply.body, dict):
            return reply
        message = (reply.body.get("choices") or [{}])[0].get("message") or {}
        text = message.get("content")
        if not isinstance(text, str) or message.get("tool_calls"):
            return reply
        missing = self.answer_words - len(text.split())
        if missing <= 0:
            return reply
        padded = text + " " + " ".join(_FILLER[i % len(_FILLER)] for i in range(missing))
        choice = {**reply.body["choices"][0], "message": {**message, "content": padded}}
        return replace(reply, body={**reply.body, "choices": [choice]})

    async def _generation_time(self, reply: FakeReply) -> None:
        """A whole answer takes as long as streaming it would (when a rate is set)."""
        if self.stream_tokens_per_s <= 0 or not isinstance(reply.body, dict):
            return
        message = (reply.body.get("choices") or [{}])[0].get("message") or {}
        words = len(str(message.get("content") or "").split())
        await asyncio.sleep(self.first_token_ms / 1000 + words / self.stream_tokens_per_s)

    async def _stream(
        self, request: web.Request, body: Body, reply: FakeReply, arrived: float
    ) -> web.StreamResponse:
        """The reply as server-sent events, paced like a model (see the module docstring).

        Each word is due at first token + index / rate; words already due go out in one
        write, so a loaded fake falls behind the schedule instead of piling up timers."""
        response = web.StreamResponse(headers={"Content-Type": "text/event-stream"})
        await response.prepare(request)
        include_usage = bool((body.get("stream_options") or {}).get("include_usage"))
        delay = 1.0 / self.stream_tokens_per_s if self.stream_tokens_per_s > 0 else 0.0
        loop = asyncio.get_running_loop()
        start = loop.time() + self.first_token_ms / 1000
        pending: list[bytes] = []
        for index, chunk in enumerate(stream_chunks(reply.body, include_usage=include_usage)):
            if index == (reply.pause_after or -1) + 1 and reply.hold is not None:
                await response.write(b"".join(pending))
                pending.clear()
                await _first_of(reply.hold, self._closing)
            due = start + max(0, index - 1) * delay
            if due > loop.time():
                if pending:
                    await response.write(b"".join(pending))
                    pending.clear()
                await asyncio.sleep(due - loop.time())  # simulated generation time
            pending.append(f"data: {json.dumps(chunk, ensure_ascii=False)}\n\n".encode())
        pending.append(b"data: [DONE]\n\n")
        await response.write(b"".join(pending))
        await response.write_eof()
        self.timings.append(_timing(body, reply, arrived, time.time()))
        return response

    async def _list_requests(self, request: web.Request) -> web.Response:
        return web.json_response(self.requests)

    async def _list_timings(self, request: web.Request) -> web.Response:
        after = int(request.query.get("after", "0"))
        return web.json_response(self.timings[after:])

    async def _config(self, request: web.Request) -> web.Response:
        payload = await request.json()
        if "latency_ms" in payload:
            self.latency_ms = float(payload["latency_ms"])
        if "tokens_per_s" in payload:
            self.stream_tokens_per_s = float(payload["tokens_per_s"])
        if "first_token_ms" in payload:
            self.first_token_ms = float(payload["first_token_ms"])
        if "answer_words" in payload:
            self.answer_words = int(payload["answer_words"])
        if "script" in payload:  # a name in SCRIPTS (the bench's knowledge runs)
            self.handler = SCRIPTS[str(payload["script"])]
        return web.json_response({"ok": True, "latency_ms": self.latency_ms})

    async def _reset(self, request: web.Request) -> web.Response:
        self.requests.clear()
        self.headers.clear()
        self.timings.clear()
        self._fail_times = 0
        return web.json_response({"ok": True})

    async def _fail(self, request: web.Request) -> web.Response:
        payload = await request.json()
        self._fail_status = int(payload.get("status", 500))
        self._fail_times = int(payload.get("times", 1))
        return web.json_response({"ok": True})


_FILLER = ("и", "ещё", "немного", "подробностей", "о", "заказе", "доставке", "магазине")


def stream_chunks(completion_body: Body, *, include_usage: bool = True) -> list[Body]:
    """A chat.completion split into chat.completion.chunk objects, as OpenAI streams it:
    the role, one chunk per word of the text, each tool call in two pieces, the finish
    reason, and the usage (with empty choices) last."""
    base = {k: completion_body.get(k) for k in ("id", "created", "model")}
    base["object"] = "chat.completion.chunk"
    choice = (completion_body.get("choices") or [{}])[0]
    message = choice.get("message") or {}

    def chunk(delta: Body, finish: str | None = None) -> Body:
        return {**base, "choices": [{"index": 0, "delta": delta, "finish_reason": finish}]}

    chunks = [chunk({"role": "assistant", "content": ""})]
    chunks += [
        chunk({"content": word}) for word in re.findall(r"\s*\S+", message.get("content") or "")
    ]
    if message.get("refusal"):
        chunks.append(chunk({"refusal": message["refusal"]}))
    for index, call in enumerate(message.get("tool_calls") or []):
        function = call.get("function") or {}
        arguments = str(function.get("arguments") or "")
        half = len(arguments) // 2
        first = {"index": index, "id": call.get("id"), "type": "function"}
        first["function"] = {"name": function.get("name"), "arguments": arguments[:half]}
        chunks.append(chunk({"tool_calls": [first]}))
        rest = {"index": index, "function": {"arguments": arguments[half:]}}
        chunks.append(chunk({"tool_calls": [rest]}))
    chunks.append(chunk({}, choice.get("finish_reason")))
    if include_usage and completion_body.get("usage") is not None:
        chunks.append({**base, "choices": [], "usage": completion_body["usage"]})
    return chunks


def _timing(body: Body, reply: FakeReply, arrived: float, answered: float) -> Body:
    """The bench's light record of one completion (no message contents except the last
    user message, which carries the bench's turn marker)."""
    messages: list[Body] = list(body.get("messages") or [])
    last_user = next((m for m in reversed(messages) if m.get("role") == "user"), None)
    calls = 0
    if isinstance(reply.body, dict):
        for choice in reply.body.get("choices") or []:
            calls += len((choice.get("message") or {}).get("tool_calls") or [])
    prompt_chars = sum(len(_text_of(m)) for m in messages)
    tools_chars = len(json.dumps(body.get("tools") or [], ensure_ascii=False))
    return {
        "arrived": arrived,
        "answered": answered,
        "model_ms": (answered - arrived) * 1000.0,
        "status": reply.status,
        "tools": bool(body.get("tools")),
        "parallel_tool_calls": body.get("parallel_tool_calls"),
        "tool_choice": body.get("tool_choice"),
        "tool_calls": calls,
        "messages": len(messages),
        "prompt_chars": prompt_chars,
        "tools_chars": tools_chars,
        "last_user": _text_of(last_user)[:200] if last_user is not None else "",
    }


def _json_response(reply: FakeReply) -> web.Response:
    if isinstance(reply.body, str):
        return web.Response(
            status=reply.status,
            text=reply.body,
            headers=reply.headers,
            content_type="application/json",
        )
    return web.json_response(reply.body, status=reply.status, headers=reply.headers)


async def _first_of(*events: asyncio.Event) -> None:
    waiters = [asyncio.create_task(event.wait()) for event in events]
    try:
        await asyncio.wait(waiters, return_when=asyncio.FIRST_COMPLETED)
    finally:
        for waiter in waiters:
            waiter.cancel()


@pytest.fixture
async def fake_openai() -> AsyncIterator[FakeOpenAIServer]:
    """A started fake on a free loopback port, with the default keyword script."""
    server = await FakeOpenAIServer().start()
    try:
        yield server
    finally:
        await server.close()


# --------------------------------------------------------------------------- process mode


async def _serve(
    host: str,
    port: int,
    latency_ms: float,
    keep_bodies: bool = True,
    tokens_per_s: float = 0.0,
    first_token_ms: float = 0.0,
) -> None:
    server = await FakeOpenAIServer(latency_ms=latency_ms, keep_bodies=keep_bodies).start(
        host, port
    )
    server.stream_tokens_per_s = tokens_per_s
    server.first_token_ms = first_token_ms
    print(f"listening on {server.base_url}", flush=True)
    stop = asyncio.Event()
    loop = asyncio.get_running_loop()
    for sig in (signal.SIGINT, signal.SIGTERM):
        with contextlib.suppress(NotImplementedError):
            loop.add_signal_handler(sig, stop.set)
    try:
        await stop.wait()
    finally:
        await server.close()


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description="Fake OpenAI Chat Completions server")
    parser.add_argument("--host", default="127.0.0.1")
    parser.add_argument("--port", type=int, default=0, help="0 picks a free port")
    parser.add_argument("--latency-ms", type=float, default=0.0)
    parser.add_argument(
        "--no-bodies",
        action="store_true",
        help="do not keep request bodies (long bench runs); timings are always kept",
    )
    parser.add_argument("--tokens-per-s", type=float, default=0.0, help="streamed pace")
    parser.add_argument("--first-token-ms", type=float, default=0.0)
    args = parser.parse_args(argv)
    asyncio.run(
        _serve(
            args.host,
            args.port,
            args.latency_ms,
            keep_bodies=not args.no_bodies,
            tokens_per_s=args.tokens_per_s,
            first_token_ms=args.first_token_ms,
        )
    )


if __name__ == "__main__":
    main()
