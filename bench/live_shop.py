"""Live shop data in the benchmark: `bench.run --only live-shop`.

The same closed loop of order questions ("where is order N?", the demo's three numbers)
against bots reading orders from the local database and from `SHOP_BACKEND=http` — the
contract's reference fake (tests/fakes/shop_api.py) in its own process, answering every
request after 20 ms. Runs in the order local, http (the default 30 s cache), http
without a cache (`SHOP_CACHE_TTL_S=0`: every question asks the shop), local, so a drift
of the shared machine shows as a difference between the two local runs.

Reported per run: answered turns per second (the steady middle), the bot's CPU per turn,
and the requests the shop received per question. The target of the issue: http at least
95 % of local's turns/s.

Note: the fake shop's orders have no customer identity (the contract has no public
orders), so the http runs answer "not found" where the local runs find the demo's public
orders; the not-found path does the same shop read plus one more database read (the
verified phone), so it can only make http look slower.
"""

from __future__ import annotations

import json
from typing import Any

import aiohttp

from bench.driver import DEMO_ORDERS

SHOP_LATENCY_MS = 20.0
TOKEN = "bench-shop-token"


async def _shop_requests(url: str) -> int:
    async with aiohttp.ClientSession() as http:
        async with http.get(url.removesuffix("/api") + "/_fake/stats") as response:
            body: dict[str, int] = await response.json()
            return body["requests"]


async def phase_live_shop(bench: Any, plan: Any) -> dict[str, Any]:
    """`bench` is bench.run.Bench (its group, out, start_bot, closed_loop, stop_bot)."""
    orders_file = bench.out / "shop-orders.json"
    orders = [
        {"number": n, "status": "in_transit", "updated_at": "2026-12-01T10:00:00+03:00"}
        for n in DEMO_ORDERS
    ]
    orders_file.write_text(json.dumps(orders))
    shop = await bench.group.spawn_python(
        "fake-shop",
        [
            "-m",
            "tests.fakes.shop_api",
            "--port",
            "0",
            "--latency-ms",
            str(SHOP_LATENCY_MS),
            "--token",
            TOKEN,
            "--orders",
            str(orders_file),
        ],
    )
    url = (await shop.wait_for_line("listening on", 60)).split()[-1]
    http = {"SHOP_BACKEND": "http", "SHOP_API_URL": url, "SHOP_API_TOKEN": TOKEN}
    settings: list[tuple[str, dict[str, str]]] = [
        ("shop-local-1", {}),
        ("shop-http-cached", http),
        ("shop-http-uncached", {**http, "SHOP_CACHE_TTL_S": "0", "SHOP_MISS_TTL_S": "0"}),
        ("shop-local-2", {}),
    ]
    result: dict[str, Any] = {"shop_latency_ms": SHOP_LATENCY_MS}
    chats = range(400_001, 400_001 + plan.load_chats)
    for label, extra in settings:
        run = await bench.start_bot(label, **extra)
        before = await _shop_requests(url)
        load = await bench.closed_loop(run, label, chats, plan.load_messages, kinds="one")
        asked = await _shop_requests(url) - before
        answered = load["answered"]
        result[label] = {
            "turns_per_s": load["throughput"],
            "cpu_ms_per_turn": load["cpu_ms_per_turn"],
            "answered": answered,
            "errors": load["errors"],
            "machine_cpu_busy_pct": load["machine_cpu_busy_pct"],
            "shop_requests": asked,
            "shop_requests_per_question": asked / answered if answered else None,
        }
        result[label]["exit_code"] = await bench.stop_bot(run)
        print(f"[{label}] {json.dumps(result[label])}", flush=True)
    await shop.stop(within=10)
    return result
