"""CPU per HTTP round trip on asyncio's event loop and on uvloop (UVLOOP_ENABLED).

Why: the bot's CPU per turn is mostly event-loop work — HTTP requests to the Bot API and
the model, webhook POSTs, aiosqlite's thread handing results back — and a whole-bot A/B
(`bench.run --bot-env UVLOOP_ENABLED=false`) cannot resolve a few per cent on a shared,
saturated machine. This runs one fixed workload in a fresh process per loop: an aiohttp
server (a JSON POST handler that writes one row through aiosqlite, like the webhook's
inbox commit) and an aiohttp client POSTing to it with a fixed concurrency, both in the
process whose CPU time (`time.process_time`, all threads) is measured — the bot is both
client (Bot API, model) and server (webhook). Rounds alternate the loops so drift of the
machine hits both alike. CPU time, unlike throughput, barely depends on how busy the
other cores are. Run from the repository root:

    .venv/bin/python -m bench.loop_cpu --requests 4000 --concurrency 100 --rounds 5
"""

from __future__ import annotations

import argparse
import asyncio
import json
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import aiohttp
import aiosqlite
from aiohttp import web

from bot.programs.cli import event_loop_factory

UPDATE = {
    "update_id": 1,
    "message": {
        "message_id": 1,
        "date": 1_700_000_000,
        "chat": {"id": 42, "type": "private"},
        "from": {"id": 42, "is_bot": False, "first_name": "Bench", "language_code": "ru"},
        "text": "Где сейчас находится заказ 8041? #bkq",
    },
}


async def workload(requests: int, concurrency: int, database: Path) -> float:
    """CPU seconds of this process for `requests` POST round trips (server + client)."""
    db = await aiosqlite.connect(database)
    await db.execute("PRAGMA journal_mode=WAL")
    await db.execute("PRAGMA synchronous=NORMAL")
    await db.execute("CREATE TABLE IF NOT EXISTS updates(id INTEGER PRIMARY KEY, payload TEXT)")

    async def receive(request: web.Request) -> web.Response:
        payload = json.loads(await request.read())
        await db.execute("INSERT INTO updates(payload) VALUES (?)", (json.dumps(payload),))
        await db.commit()
        return web.json_response({"ok": True})

    app = web.Application()
    app.router.add_post("/hook", receive)
    runner = web.AppRunner(app, access_log=None)
    await runner.setup()
    site = web.TCPSite(runner, "127.0.0.1", 0)
    await site.start()
    port = runner.addresses[0][1]
    url = f"http://127.0.0.1:{port}/hook"
    left = requests

    async with aiohttp.ClientSession(connector=aiohttp.TCPConnector(limit=0)) as http:

        async def client() -> None:
            nonlocal left
            while left > 0:
                left -= 1
                async with http.post(url, json=UPDATE) as response:
                    await response.read()

        async with http.post(url, json=UPDATE) as response:  # warm up
            await response.read()
        started = time.process_time()
        await asyncio.gather(*(client() for _ in range(concurrency)))
        used = time.process_time() - started
    await runner.cleanup()
    await db.close()
    return used


def child(loop: str, requests: int, concurrency: int) -> None:
    factory = event_loop_factory(loop == "uvloop")
    if loop == "uvloop" and factory is None:
        raise SystemExit("uvloop is not installed")
    with tempfile.TemporaryDirectory() as folder, asyncio.Runner(loop_factory=factory) as runner:
        cpu_s = runner.run(workload(requests, concurrency, Path(folder) / "b.sqlite3"))
    print(json.dumps({"loop": loop, "cpu_us_per_request": 1e6 * cpu_s / requests}))


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--requests", type=int, default=4000)
    parser.add_argument("--concurrency", type=int, default=100)
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--child", choices=["asyncio", "uvloop"], help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.child:
        child(args.child, args.requests, args.concurrency)
        return
    results: dict[str, list[float]] = {"asyncio": [], "uvloop": []}
    for _ in range(args.rounds):
        for loop in results:
            out = subprocess.run(
                [
                    sys.executable,
                    "-m",
                    "bench.loop_cpu",
                    "--child",
                    loop,
                    "--requests",
                    str(args.requests),
                    "--concurrency",
                    str(args.concurrency),
                ],
                capture_output=True,
                text=True,
                check=True,
            ).stdout
            results[loop].append(json.loads(out)["cpu_us_per_request"])
    for loop, values in results.items():
        print(
            f"{loop:8s} CPU per round trip: median {statistics.median(values):.0f} us "
            f"(rounds: {', '.join(f'{v:.0f}' for v in values)})"
        )
    ratio = statistics.median(results["uvloop"]) / statistics.median(results["asyncio"])
    print(f"uvloop / asyncio: {ratio:.2f}")


if __name__ == "__main__":
    main()
