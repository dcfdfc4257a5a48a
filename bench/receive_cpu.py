"""The bot's CPU per received update: the webhook's POSTs against polling's getUpdates.

Why: the whole-bot bench (`bench.run`) compares the modes by turns per second on two
shared cores, where the driver, the fakes and anything else running move the result by
more than the modes differ. This isolates the part of a turn that depends on the mode:
from an update leaving "Telegram" to its row being read back by the chat's worker. A
child process — the bot's side — runs the real `Intake` over a real SQLite inbox (a
worker reads each row, as in the bot; the handler then does nothing) and receives
either through `bot.telegram.webhook` (the aiohttp server, secret check, group commit) or
`bot.telegram.polling.Poller` (a real aiogram `Bot` long-polling the fake Bot API in the parent).
The parent emits the same arrival schedule to both: bursts of `--burst` updates at
`--rate` updates per second (under the bench's load updates arrive in bursts). The child
reports its own CPU time (`time.process_time`, all threads) over `--n` updates after a
warm-up. Rounds alternate the modes. Run from the repository root:

    .venv/bin/python -m bench.receive_cpu --rate 300 --burst 50 --n 3000 --rounds 3
"""

from __future__ import annotations

import argparse
import asyncio
import json
import statistics
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import aiohttp
from aiohttp import web

from bot.programs.cli import event_loop_factory
from bot.runtime.config import Settings
from tests.fakes.telegram_server import FakeTelegramServer

SECRET = "bench-secret_0123456789"
TOKEN = "123456:BENCH-TOKEN"
PATH = "/hook"
MODES = ("webhook", "polling")
# the bot's default setWebhook max_connections (WEBHOOK_MAX_CONNECTIONS)
MAX_CONNECTIONS = int(Settings.model_fields["webhook_max_connections"].default)


def update(update_id: int) -> dict[str, Any]:
    """A bench customer's question, one of 1,000 chats (like `bench.driver`)."""
    chat = 200_000 + update_id % 1000
    return {
        "update_id": update_id,
        "message": {
            "message_id": update_id,
            "date": 1_700_000_000,
            "chat": {"id": chat, "type": "private"},
            "from": {
                "id": chat,
                "is_bot": False,
                "first_name": f"Bench{chat}",
                "language_code": "ru",
            },
            "text": f"Где сейчас находится заказ 8041? #bkq{update_id}",
        },
    }


class Counter:
    """The intake's process handler: counts rows and times the measured window."""

    def __init__(self, warm: int, n: int) -> None:
        self._warm = warm
        self._n = n
        self._count = 0
        self._mark = 0.0
        self.cpu_s = 0.0
        self.done = asyncio.Event()

    async def __call__(self, _row: object) -> None:
        self._count += 1
        if self._count == self._warm:
            self._mark = time.process_time()
        elif self._count == self._warm + self._n:
            self.cpu_s = time.process_time() - self._mark
            self.done.set()


async def _nothing(_row: object) -> None:
    return None


class NoDeliveries:
    """The responder's side of /healthz, which this measurement never asks."""

    failing_since: float | None = None


async def child(mode: str, warm: int, n: int, telegram_url: str) -> None:
    """The bot's side: receive, record, read back; print the CPU per update."""
    from bot.runtime.intake import Intake
    from bot.telegram.app import freeze_startup_objects
    from storage.database import open_database
    from storage.inbox import InboxRepository

    with tempfile.TemporaryDirectory() as folder:
        db = await open_database(Path(folder) / "inbox.sqlite3")
        inbox = InboxRepository(db)
        counter = Counter(warm, n)
        intake = Intake(inbox, process=counter, deliver=_nothing)
        freeze_startup_objects()  # as the bot does once it has started
        if mode == "webhook":
            await _serve_webhook(db, inbox, intake, counter)
        else:
            await _poll(intake, counter, telegram_url)
        print(json.dumps({"mode": mode, "cpu_us_per_update": 1e6 * counter.cpu_s / n}))
        await db.close()


async def _serve_webhook(db: Any, inbox: Any, intake: Any, counter: Counter) -> None:
    from bot.runtime.health import Health
    from bot.telegram.webhook import build_runner, build_web_app

    health = Health(
        db=db, inbox=inbox, intake=intake, delivery=NoDeliveries(), delivery_threshold_s=60
    )
    app = build_web_app(intake=intake, health=health, path=PATH, secret=SECRET)
    runner = build_runner(app, read_timeout_s=10.0)
    await runner.setup()
    await web.TCPSite(runner, "127.0.0.1", 0).start()
    print(f"port {runner.addresses[0][1]}", flush=True)
    await counter.done.wait()
    await runner.cleanup()


async def _poll(intake: Any, counter: Counter, telegram_url: str) -> None:
    from aiogram import Bot
    from aiogram.client.session.aiohttp import AiohttpSession
    from aiogram.client.telegram import TelegramAPIServer

    from bot.telegram.polling import Poller

    bot = Bot(TOKEN, session=AiohttpSession(api=TelegramAPIServer.from_base(telegram_url)))
    task = asyncio.create_task(Poller(bot, intake, allowed_updates=["message"]).run())
    print("port 0", flush=True)
    await counter.done.wait()
    task.cancel()
    await bot.session.close()


async def parent(mode: str, args: argparse.Namespace) -> float:
    """Emit the arrival schedule to a fresh child; return its CPU µs per update."""
    fake = FakeTelegramServer(token=TOKEN)
    telegram_url = await fake.start()
    child_args = ["--child", mode, "--warm", str(args.warm), "--n", str(args.n)]
    proc = await asyncio.create_subprocess_exec(
        sys.executable,
        "-m",
        "bench.receive_cpu",
        *child_args,
        "--telegram",
        telegram_url,
        stdout=asyncio.subprocess.PIPE,
    )
    assert proc.stdout is not None
    port = int((await proc.stdout.readline()).split()[1])
    url = f"http://127.0.0.1:{port}{PATH}"
    posts: list[asyncio.Task[None]] = []
    result = asyncio.create_task(proc.stdout.readline())
    # like Telegram: at most setWebhook's max_connections POSTs at once, over connections
    # kept alive and reused (an unbounded pool opens one per update of a burst)
    connector = aiohttp.TCPConnector(limit=MAX_CONNECTIONS)
    async with aiohttp.ClientSession(connector=connector) as http:

        async def post(update_id: int) -> None:
            headers = {"X-Telegram-Bot-Api-Secret-Token": SECRET}
            async with http.post(url, json=update(update_id), headers=headers) as response:
                await response.read()

        start = time.monotonic()
        update_id = 0
        while not result.done():
            update_id += 1
            delay = start + ((update_id - 1) // args.burst) * args.burst / args.rate
            if delay > time.monotonic():
                await asyncio.sleep(delay - time.monotonic())  # the arrival schedule
            if mode == "webhook":
                posts.append(asyncio.create_task(post(update_id)))
            else:
                fake.enqueue_update(update(update_id))
        line = await result
        for task in posts:
            task.cancel()
        await asyncio.gather(*posts, return_exceptions=True)
    await proc.wait()
    await fake.stop()
    return float(json.loads(line)["cpu_us_per_update"])


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rate", type=float, default=300.0, help="updates per second")
    parser.add_argument("--burst", type=int, default=50, help="updates arriving together")
    parser.add_argument("--n", type=int, default=3000, help="updates measured")
    parser.add_argument("--warm", type=int, default=300, help="updates before measuring")
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--child", choices=MODES, help=argparse.SUPPRESS)
    parser.add_argument("--telegram", default="", help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    factory = event_loop_factory(True)
    if args.child:
        with asyncio.Runner(loop_factory=factory) as runner:
            runner.run(child(args.child, args.warm, args.n, args.telegram))
        return
    results: dict[str, list[float]] = {mode: [] for mode in MODES}
    for _ in range(args.rounds):
        for mode in MODES:
            with asyncio.Runner(loop_factory=factory) as runner:
                results[mode].append(runner.run(parent(mode, args)))
    for mode, values in results.items():
        print(
            f"{mode:8s} CPU per received update: median {statistics.median(values):.0f} us "
            f"(rounds: {', '.join(f'{v:.0f}' for v in values)})"
        )


if __name__ == "__main__":
    main()
