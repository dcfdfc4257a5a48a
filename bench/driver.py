"""The load driver: customers that write to the bot and wait for its answers.

Updates reach the bot the way Telegram delivers them: queued on the fake Bot API for
the bot's long poll, or POSTed to the bot's webhook with the secret header (to several
instances' webhooks in turn, like a load balancer, when given several URLs). Answers are
read from the fake Bot API's record of `sendMessage` (a long poll on its control
endpoint), each with the time the fake accepted it, so latency is measured by one clock
on one machine.

Each question carries a marker of consonants only (no digits, no keyword of the fake
model's script), e.g. "#bkq", so the fake model's timing records and the bot's audit
rows can be matched to the turn. The fake model answers by keyword (see
`tests.fakes.openai_server.default_script`):

- `greet`: no tool; the answer greets.
- `one`:   one `get_order_status` call; the answer quotes the order.
- `two`:   `get_order_status` and `get_return_policy` in one question (one model
  response with two calls when parallel calls are on).
- `faq`:   a question about delivery: `get_shop_info`, or `search_knowledge` when the
  fake runs its knowledge script (the knowledge on/off runs); the answer quotes it.
"""

from __future__ import annotations

import asyncio
import contextlib
import itertools
import time
from collections import deque
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

import aiohttp

KINDS = ("greet", "one", "two")
KNOWLEDGE_KINDS = (*KINDS, "faq")  # the knowledge on/off runs: a quarter ask the shop's FAQ
DEMO_ORDERS = ("8041", "7718", "9912")
_MARKER_LETTERS = "bcdfghjklmnpqrstvwxz"  # no vowels: cannot spell a keyword
SECRET_HEADER = "X-Telegram-Bot-Api-Secret-Token"


def marker(number: int) -> str:
    """A unique tag made of consonants: `#b`, `#c`, ..., `#bc`, ..."""
    letters = []
    n = number
    while True:
        n, r = divmod(n, len(_MARKER_LETTERS))
        letters.append(_MARKER_LETTERS[r])
        if n == 0:
            break
    return "#" + "".join(reversed(letters))


@dataclass
class Turn:
    """One customer question and what became of it."""

    chat_id: int
    index: int  # position in the chat's conversation (0-based)
    kind: str
    order_id: str
    marker: str
    text: str
    update_id: int = 0
    sent_at: float = 0.0
    reply_at: float | None = None
    reply_text: str | None = None
    done: asyncio.Event = field(default_factory=asyncio.Event, repr=False)

    @property
    def latency_s(self) -> float | None:
        return None if self.reply_at is None else self.reply_at - self.sent_at

    @property
    def ok(self) -> bool:
        """The answer is the one this question should get (kind and order id)."""
        if self.reply_text is None:
            return False
        return reply_matches(self.kind, self.order_id, self.reply_text)


def reply_matches(kind: str, order_id: str, text: str) -> bool:
    lowered = text.lower()
    if kind == "greet":
        return "чем могу помочь" in lowered
    if kind == "one":
        return order_id in text and "кофемашин" not in lowered
    if kind == "faq":  # the shop's FAQ or the best passage quoted, whichever the run has
        return lowered.startswith("по данным магазина") and not any(
            word in lowered for word in ("не найдено", "ошибка", "не знаю")
        )
    return order_id in text and "кофемашин" in lowered


# how customers ask about delivery (the `faq` kind), one per chat in turn
FAQ_QUESTIONS = (
    "Сколько стоит доставка по Москве?",
    "сколько стоит доставка в москве",
    "Какая цена доставки по Москве?",
    "доставка по москве платная?",
    "За сколько дней доставка в Новосибирск?",
    "Есть ли доставка в выходные?",
    "Доставка курьером до двери возможна?",
    "как долго идёт доставка в регионы",
)


def question(kind: str, order_id: str, tag: str, *, variant: int = 0) -> str:
    if kind == "greet":
        return f"Здравствуйте! {tag}"
    if kind == "one":
        return f"Где сейчас находится заказ {order_id}? {tag}"
    if kind == "faq":
        return f"{FAQ_QUESTIONS[variant % len(FAQ_QUESTIONS)]} {tag}"
    return f"Где заказ {order_id} и можно ли вернуть кофемашину? {tag}"


class Driver:
    """Sends questions and matches answers; one per bench phase or bot process."""

    def __init__(
        self,
        *,
        telegram_url: str,
        webhook_url: str | Sequence[str] | None = None,
        webhook_secret: str = "",
        webhook_connections: int = 40,
        first_update_id: int = 1,
        first_marker: int = 0,
    ) -> None:
        self._telegram_url = telegram_url
        # several instances behind one "load balancer": the POSTs alternate between them
        urls = [webhook_url] if isinstance(webhook_url, str) else list(webhook_url or [])
        self._webhook_urls = itertools.cycle(urls) if urls else None
        self._webhook_url = urls[0] if urls else None
        self._webhook_secret = webhook_secret
        self._webhook_connections = webhook_connections
        self._update_ids = itertools.count(first_update_id)
        self._markers = itertools.count(first_marker)
        self._http: aiohttp.ClientSession | None = None
        self._posts: aiohttp.ClientSession | None = None  # the webhook POSTs' own pool
        self._outstanding: dict[int, deque[Turn]] = {}
        self._buffer: list[Turn] = []
        self._buffered = asyncio.Event()
        self._tasks: list[asyncio.Task[None]] = []
        self._seen_messages = 0
        self.turns: list[Turn] = []
        self.stray_replies = 0  # answers to a chat with no question waiting
        self.order_violations = 0  # an answer that belongs to a later question of its chat
        self.webhook_errors = 0
        # each webhook POST from its start (waiting for one of the `webhook_connections`
        # included, as an update waits at Telegram) to the bot's answer, in ms
        self.webhook_post_ms: list[float] = []
        # TCP connections the webhook POSTs opened: with keep-alive at most
        # `webhook_connections` per phase, however many updates went over them
        self.webhook_connections_opened = 0

    @property
    def next_update_id(self) -> int:
        return next(self._update_ids)

    async def __aenter__(self) -> Driver:
        connector = aiohttp.TCPConnector(limit=0)
        self._http = aiohttp.ClientSession(
            connector=connector, timeout=aiohttp.ClientTimeout(total=120)
        )
        if self._webhook_url is not None:
            # like Telegram: at most setWebhook's max_connections requests at once, each
            # connection kept alive and reused. Unbounded, a burst opened hundreds of
            # connections, which the bot's server then closed as idle after
            # WEBHOOK_READ_TIMEOUT_S and the next burst opened again.
            opened = aiohttp.TraceConfig()
            opened.on_connection_create_end.append(self._count_connection)
            self._posts = aiohttp.ClientSession(
                connector=aiohttp.TCPConnector(limit=self._webhook_connections),
                timeout=aiohttp.ClientTimeout(total=120),
                trace_configs=[opened],
            )
        self._seen_messages = await self._count_messages()
        self._tasks.append(asyncio.create_task(self._collect(), name="collect-replies"))
        if self._webhook_url is None:
            self._tasks.append(asyncio.create_task(self._flush(), name="queue-updates"))
        return self

    async def __aexit__(self, *exc: object) -> None:
        for task in self._tasks:
            task.cancel()
        for task in self._tasks:
            with contextlib.suppress(asyncio.CancelledError, Exception):
                await task
        for session in (self._http, self._posts):
            if session is not None:
                await session.close()

    # ----------------------------------------------------------------- questions
    def new_turn(self, chat_id: int, index: int, kind: str, order_id: str | None = None) -> Turn:
        order = order_id or DEMO_ORDERS[(chat_id + index) % len(DEMO_ORDERS)]
        tag = marker(next(self._markers))
        turn = Turn(
            chat_id=chat_id,
            index=index,
            kind=kind,
            order_id=order,
            marker=tag,
            text=question(kind, order, tag, variant=chat_id),
            update_id=next(self._update_ids),
        )
        self.turns.append(turn)
        return turn

    async def submit(self, turns: Sequence[Turn]) -> None:
        """Hand questions to the bot (queued for its poll, or POSTed to its webhook)."""
        for turn in turns:
            self._outstanding.setdefault(turn.chat_id, deque()).append(turn)
        if self._webhook_url is None:
            self._buffer.extend(turns)
            self._buffered.set()
            return
        await asyncio.gather(*(self._post_webhook(turn) for turn in turns))

    async def ask(self, turn: Turn, within: float) -> bool:
        """Send one question and wait (bounded) for its answer."""
        await self.submit([turn])
        with contextlib.suppress(TimeoutError):
            await asyncio.wait_for(turn.done.wait(), within)
        return turn.done.is_set()

    async def wait_all(self, turns: Sequence[Turn], within: float) -> None:
        deadline = time.monotonic() + within
        for turn in turns:
            remaining = deadline - time.monotonic()
            if remaining <= 0:
                return
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(turn.done.wait(), remaining)

    # ----------------------------------------------------------------- transport
    def _update(self, turn: Turn) -> dict[str, Any]:
        return {
            "update_id": turn.update_id,
            "message": {
                "message_id": turn.index + 1,
                "date": int(time.time()),
                "chat": {"id": turn.chat_id, "type": "private"},
                "from": {
                    "id": turn.chat_id,
                    "is_bot": False,
                    "first_name": f"Bench{turn.chat_id}",
                    "language_code": "ru",
                },
                "text": turn.text,
            },
        }

    async def _flush(self) -> None:
        """Queue buffered questions on the fake Bot API, one request per batch."""
        assert self._http is not None
        while True:
            await self._buffered.wait()
            self._buffered.clear()
            batch, self._buffer = self._buffer, []
            if not batch:
                continue
            now = time.time()
            for turn in batch:
                turn.sent_at = now
            async with self._http.post(
                f"{self._telegram_url}/_fake/updates", json=[self._update(t) for t in batch]
            ) as response:
                response.raise_for_status()

    async def _post_webhook(self, turn: Turn) -> None:
        assert self._posts is not None and self._webhook_urls is not None
        turn.sent_at = time.time()
        started = time.perf_counter()
        try:
            async with self._posts.post(
                next(self._webhook_urls),
                json=self._update(turn),
                headers={SECRET_HEADER: self._webhook_secret},
            ) as response:
                if response.status != 200:
                    self.webhook_errors += 1
            self.webhook_post_ms.append((time.perf_counter() - started) * 1000)
        except aiohttp.ClientError:
            self.webhook_errors += 1

    async def _count_connection(self, *_: object) -> None:
        self.webhook_connections_opened += 1

    async def _count_messages(self) -> int:
        assert self._http is not None
        async with self._http.get(f"{self._telegram_url}/_fake/messages?after=0") as response:
            return len((await response.json())["result"])

    async def _collect(self) -> None:
        """Long-poll the fake's sent messages; the oldest open question of the chat gets it."""
        assert self._http is not None
        while True:
            url = f"{self._telegram_url}/_fake/messages?after={self._seen_messages}&wait=5"
            try:
                async with self._http.get(url) as response:
                    messages = (await response.json())["result"]
            except (aiohttp.ClientError, TimeoutError):
                await asyncio.sleep(0.1)
                continue
            self._seen_messages += len(messages)
            for message in messages:
                self._match(message)

    def _match(self, message: dict[str, Any]) -> None:
        waiting = self._outstanding.get(int(message["chat_id"]))
        if not waiting:
            self.stray_replies += 1
            return
        turn = waiting.popleft()
        turn.reply_at = float(message["at"])
        turn.reply_text = str(message["text"])
        if not turn.ok and any(
            reply_matches(later.kind, later.order_id, turn.reply_text)
            and later.kind not in ("greet", "faq")  # every such answer reads alike
            for later in waiting
        ):
            self.order_violations += 1
        turn.done.set()


async def closed_loop_chat(
    driver: Driver,
    chat_id: int,
    kinds: Sequence[str],
    *,
    deadline: float,
    start_after_s: float = 0.0,
) -> None:
    """One customer: ask, wait for the answer, ask the next question (bounded in time).

    `start_after_s` staggers the customers' first questions: real customers do not all
    press "send" in the same millisecond, and a synchronised start measures a thundering
    herd rather than the bot.
    """
    if start_after_s > 0:
        await asyncio.sleep(start_after_s)  # an arrival schedule, not a synchronisation
    for index, kind in enumerate(kinds):
        remaining = deadline - time.monotonic()
        if remaining <= 0:
            return
        await driver.ask(driver.new_turn(chat_id, index, kind), remaining)


def mixed_kinds(chat_id: int, count: int, kinds: Sequence[str] = KINDS) -> list[str]:
    """An equal share of each kind, rotated per chat so every moment sees them all."""
    return [kinds[(chat_id + i) % len(kinds)] for i in range(count)]
