"""The whole-bot benchmark: `make bench` (or `.venv/bin/python -m bench.run`).

Starts the fake OpenAI server and, per bot run, the fake Bot API, each in its own
process; starts the real bot (`python -m bot`) against them with bench settings (see
`bench_env`); drives customers over HTTP only; reads /proc for memory and CPU; and
prints a results table with pass/fail per target of issue 9. Everything it starts is
stopped when it ends, also on an error or Ctrl-C; every load loop is bounded in count and
in time; all traffic stays on 127.0.0.1.

    .venv/bin/python -m bench.run                 # the full run (about 15 minutes)
    .venv/bin/python -m bench.run --quick         # a smoke run, no verdicts (about 3 minutes)
    .venv/bin/python -m bench.run --profile       # also profile the bot under load
    .venv/bin/python -m bench.run --only instances  # SQLite vs PostgreSQL, 1 and 2 bots

Every bot runs on SQLite (a file per run) unless `--database-url` names a PostgreSQL
server: each run then gets a fresh database there. `--instances 2` starts two bot
processes per run on one database (webhook: the driver's POSTs alternate between them;
polling: a leader and a standby). The `instances` phase compares, in one run, SQLite and
PostgreSQL with one and two instances (bench/instances.py).

Results (JSON, the Markdown table, every process's log, the profile) go to
data/bench/<UTC time>/. It measures and reports; it never fails on a missed target.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import io
import json
import math
import os
import platform
import pstats
import re
import resource
import signal
import socket
import sys
import time
from collections import Counter
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import aiohttp

from bench.analysis import (
    ToolRow,
    estimate_prompt_tokens,
    model_time_by_marker,
    pcts,
    postgres_tool_rows,
    sqlite_tool_rows,
    throughput,
    turn_costs,
)
from bench.driver import KNOWLEDGE_KINDS, Driver, Turn, closed_loop_chat, mixed_kinds
from bench.instances import create_database, instances_rows, phase_instances
from bench.knowledge_turns import knowledge_rows, phase_knowledge
from bench.live_shop import phase_live_shop
from bench.modes import (
    FLOOR_CLIENTS,
    MODES,
    modes_rows,
    phase_modes,
    phase_modes_together,
    together_rows,
)
from bench.procs import REPO_ROOT, Managed, ProcessGroup, sample
from bench.streaming import fetch_signs, phase_streaming, streaming_rows
from bot.runtime.config import Settings

TOKEN = "123456:BENCH-TOKEN"
WEBHOOK_SECRET = "bench-secret_0123456789"
WEBHOOK_PATH = "/telegram/webhook"
STAGGER_S = 2.0  # customers of a closed-loop phase start spread over this many seconds


# the bot's default setWebhook max_connections (WEBHOOK_MAX_CONNECTIONS)
WEBHOOK_MAX_CONNECTIONS = int(Settings.model_fields["webhook_max_connections"].default)


@dataclass(frozen=True)
class Plan:
    """How much load each phase applies (the full run, or --quick)."""

    latency_ms: float
    latency_chats: int = 50
    latency_messages: int = 12
    two_tool_chats: int = 10
    two_tool_messages: int = 2
    load_chats: int = 1000
    load_messages: int = 6
    order_chats: int = 200
    order_messages: int = 5
    distinct_chats: int = 10_000
    distinct_concurrency: int = 1000
    conversation_turns: int = 200
    profile_messages: int = 4
    mode_pairs: int = 2  # --only modes: fresh bots per mode, in ABBA order
    together_control: str | None = None  # --only modes-together --control MODE
    together_floor: str | None = None  # --only modes-together --floor CLIENT
    stats_tool_calls: int = 1_000_000
    phase_timeout_s: float = 300.0


FULL = Plan(latency_ms=1000.0)
# A smoke run of the harness: small numbers and 100 ms model latency, so the bot's
# one-message-a-second pacing per chat shows up in "self-time". No verdicts.
QUICK = Plan(
    latency_ms=100.0,
    latency_chats=10,
    latency_messages=4,
    two_tool_chats=3,
    two_tool_messages=1,
    load_chats=100,
    load_messages=3,
    order_chats=20,
    order_messages=3,
    distinct_chats=300,
    distinct_concurrency=100,
    conversation_turns=60,
    profile_messages=2,
    stats_tool_calls=20_000,
    phase_timeout_s=60.0,
)


def bench_env(
    *, telegram_url: str, openai_url: str, database: Path, **extra: str
) -> dict[str, str]:
    """The bot's settings for the bench: limits raised so the bench measures the bot.

    Per-user message limits, order lookups per hour and MAX_CONCURRENT_TURNS are raised
    (a bench customer writes far more than a person); the Sender's global pace is raised
    from Telegram's ~30/s to a pace a local fake can take. Per-chat pacing (1 message a
    second per chat) stays as in production, except where a phase says otherwise.
    """
    env: dict[str, str] = {
        "PATH": os.environ.get("PATH", "/usr/bin:/bin"),
        "LANG": "C.UTF-8",
        "PYTHONPATH": str(REPO_ROOT),
        "BOT_TOKEN": TOKEN,
        "TELEGRAM_API_URL": telegram_url,
        "OPENAI_API_KEY": "sk-bench-not-a-real-key",
        "OPENAI_BASE_URL": openai_url,
        "OPENAI_MODEL": "fake-model",
        "OPENAI_MAX_RETRIES": "0",
        "DATABASE_PATH": str(database),
        "LOG_LEVEL": "INFO",
        "SHUTDOWN_GRACE_S": "20",
        "USER_MESSAGES_PER_MINUTE": "1000",
        "USER_MESSAGES_PER_DAY": "100000",
        "ORDER_LOOKUPS_PER_HOUR": "10000",
        "MAX_CONCURRENT_TURNS": "5000",
        "TELEGRAM_GLOBAL_SENDS_PER_S": "5000",
    }
    env.update(extra)
    return env


def webhook_settings(port: int) -> dict[str, str]:
    """A bot in webhook mode listening on 127.0.0.1:`port`."""
    return {
        "BOT_MODE": "webhook",
        "WEBHOOK_URL": "https://bench.invalid",
        "WEBHOOK_PATH": WEBHOOK_PATH,
        "WEBHOOK_SECRET": WEBHOOK_SECRET,
        "WEB_HOST": "127.0.0.1",
        "WEB_PORT": str(port),
    }


def free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


@dataclass
class BotRun:
    label: str
    bot: Managed
    telegram: Managed
    telegram_url: str
    database: Path
    webhook_url: str | None
    startup: dict[str, float] = field(default_factory=dict)
    idle: dict[str, float] = field(default_factory=dict)
    # --instances 2: the other bot processes on the same database (and their webhooks)
    others: list[Managed] = field(default_factory=list)
    webhook_urls: list[str] = field(default_factory=list)
    database_url: str | None = None  # PostgreSQL: the run's own database; else SQLite

    @property
    def bots(self) -> list[Managed]:
        return [self.bot, *self.others]

    @property
    def backend(self) -> str:
        return "postgres" if self.database_url else "sqlite"


class Bench:
    """One bench run: the processes, the phases, the results."""

    def __init__(
        self,
        plan: Plan,
        group: ProcessGroup,
        out: Path,
        bot_env: dict[str, str] | None = None,
        *,
        database_url: str | None = None,
        instances: int = 1,
    ) -> None:
        self.plan = plan
        self.bot_env = bot_env or {}  # --bot-env: settings for every bot (A/B runs)
        # --database-url: a PostgreSQL server; every run gets a fresh database on it
        self.database_url = database_url
        self.instances = instances  # --instances: bot processes per run, one database
        self.group = group
        self.out = out
        self.results: dict[str, Any] = {}
        self.openai_url = ""
        self.openai_fake: Managed | None = None
        self._openai_root = ""
        self._timings_seen = 0
        self._update_ids = 1
        self._markers = 0
        self._runs = 0

    # ------------------------------------------------------------------ processes
    async def start_openai(self) -> None:
        fake = await self.group.spawn_python(
            "fake-openai",
            [
                "-m",
                "tests.fakes.openai_server",
                "--port",
                "0",
                "--latency-ms",
                str(self.plan.latency_ms),
                "--no-bodies",
            ],
        )
        self.openai_fake = fake
        self.openai_url = (await fake.wait_for_line("listening on", 60)).split()[-1]
        self._openai_root = self.openai_url.removesuffix("/v1")

    async def set_model_latency(self, latency_ms: float) -> None:
        await self._configure_model({"latency_ms": latency_ms})

    async def set_model_script(self, script: str) -> None:
        """The fake model's script: "default", or "knowledge" (searches the knowledge)."""
        await self._configure_model({"script": script})

    async def _configure_model(self, settings: dict[str, Any]) -> None:
        async with aiohttp.ClientSession() as http:
            async with http.post(f"{self._openai_root}/_fake/config", json=settings) as response:
                response.raise_for_status()

    async def new_timings(self) -> list[dict[str, Any]]:
        """Timing records of the fake model since the last call."""
        return await self.timings_since(self._timings_seen)

    async def timings_since(self, index: int) -> list[dict[str, Any]]:
        """The fake model's timing records from `index` on. Two phases running at the same
        time may both read them: a turn finds its own records by its marker."""
        async with aiohttp.ClientSession() as http:
            async with http.get(f"{self._openai_root}/_fake/timings?after={index}") as response:
                records: list[dict[str, Any]] = await response.json()
        self._timings_seen = max(self._timings_seen, index + len(records))
        return records

    async def start_bot(
        self,
        label: str,
        *,
        webhook: bool = False,
        profile_to: Path | None = None,
        database_url: str | None = None,
        instances: int | None = None,
        program: str = "bot",
        **extra: str,
    ) -> BotRun:
        """Start one run's fake Bot API and its bot process(es), ready for a phase.

        `database_url` (a PostgreSQL server) and `instances` override `--database-url`
        and `--instances` for this run; `program` is the module run (`bench.naive_bot`:
        the floor)."""
        self._runs += 1
        # None: --database-url (if any); "" (instances.SQLITE): a SQLite file regardless
        server_url = self.database_url if database_url is None else database_url
        count = instances or self.instances
        telegram = await self.group.spawn_python(
            f"fake-telegram-{label}", ["-m", "bench.fake_telegram", "--port", "0", "--token", TOKEN]
        )
        telegram_url = (await telegram.wait_for_line("listening on", 60)).split()[-1]
        workdir = self.out / f"bot-{label}"
        workdir.mkdir(parents=True, exist_ok=True)
        database = workdir / "bot.sqlite3"
        run_database_url = (
            await create_database(server_url, f"bench_{self._runs}") if server_url else None
        )
        bots: list[Managed] = []
        webhook_urls: list[str] = []
        for number in range(count):
            name = label if number == 0 else f"{label}-{number + 1}"
            settings = dict(extra)
            if webhook:
                port = free_port()
                settings = {**webhook_settings(port), **settings}
                webhook_urls.append(f"http://127.0.0.1:{port}{WEBHOOK_PATH}")
            if run_database_url:
                settings["DATABASE_URL"] = run_database_url
            if count > 1:
                settings["INSTANCE_ID"] = name
            env = bench_env(
                telegram_url=telegram_url,
                openai_url=self.openai_url,
                database=database,
                **{**self.bot_env, **settings},
            )
            args = ["-m", program]
            if profile_to is not None and number == 0:
                args = ["-m", "cProfile", "-o", str(profile_to), "-m", program]
            bot = await self.group.spawn_python(f"bot-{name}", args, env=env, cwd=workdir)
            await bot.wait_for_line("bot: ready", 120)
            bots.append(bot)
        ready_at = time.time()
        bot = bots[0]
        run = BotRun(
            label,
            bot,
            telegram,
            telegram_url,
            database,
            webhook_urls[0] if webhook_urls else None,
            others=bots[1:],
            webhook_urls=webhook_urls,
            database_url=run_database_url,
        )
        first_call = "setWebhook" if webhook else "getUpdates"
        times = await self._calls(telegram_url, first_call, within=10)
        after_start = [t for t in times if t >= bot.started_at]
        run.startup = {
            "start_to_ready_s": ready_at - bot.started_at,
            f"start_to_first_{first_call}_s": (min(after_start) - bot.started_at)
            if after_start
            else math.nan,
        }
        await asyncio.sleep(1.0)  # let the start settle before the idle sample (not a sync)
        idle = sample(bot.pid)
        run.idle = {"rss_mb": idle.rss_kb / 1024, "hwm_mb": idle.hwm_kb / 1024}
        print(
            f"[{label}] {count} bot(s) on {run.backend} ready: {run.startup} idle {run.idle}",
            flush=True,
        )
        return run

    def _bots_cpu(self, run: BotRun) -> float:
        """CPU seconds used so far by the run's bot processes together."""
        return sum(sample(bot.pid).cpu_s for bot in run.bots)

    async def _tool_rows(self, run: BotRun) -> list[ToolRow]:
        if run.database_url:
            return await postgres_tool_rows(run.database_url)
        if not run.database.exists():  # the floor bot (bench.naive_bot) keeps no audit
            return []
        return await asyncio.to_thread(sqlite_tool_rows, run.database)

    def _fakes_cpu(self, run: BotRun) -> float:
        """CPU seconds used so far by the fake servers (they share the machine)."""
        total = sample(run.telegram.pid).cpu_s
        if self.openai_fake is not None:
            total += sample(self.openai_fake.pid).cpu_s
        return total

    async def _calls(self, telegram_url: str, method: str, *, within: float) -> list[float]:
        deadline = time.monotonic() + within
        async with aiohttp.ClientSession() as http:
            while True:
                async with http.get(f"{telegram_url}/_fake/calls?method={method}") as response:
                    times: list[float] = (await response.json())["result"]
                if times or time.monotonic() > deadline:
                    return times
                await asyncio.sleep(0.05)  # bounded poll for an observable condition

    async def _signs(self, run: BotRun) -> Counter[str]:
        """Typing indicators and drafts the bot has sent so far, by method: Bot API
        requests that are not answers (and count against Telegram's limits like any
        other)."""
        return Counter(sign["method"] for sign in await fetch_signs(run.telegram_url))

    async def stop_bot(self, run: BotRun) -> int | None:
        for other in run.others:
            await other.stop(within=60)
        code = await run.bot.stop(within=60)
        await run.telegram.stop(within=10)
        return code

    def driver(self, run: BotRun) -> Driver:
        driver = Driver(
            telegram_url=run.telegram_url,
            webhook_url=run.webhook_urls,
            webhook_secret=WEBHOOK_SECRET,
            # as Telegram would: no more POSTs at once than the bot asked for in setWebhook
            webhook_connections=int(
                self.bot_env.get("WEBHOOK_MAX_CONNECTIONS", WEBHOOK_MAX_CONNECTIONS)
            ),
            first_update_id=self._update_ids,
            first_marker=self._markers,
        )
        # every run gets fresh ids, so no update or marker is ever reused
        self._update_ids += 10_000_000
        self._markers += 10_000_000
        return driver

    # ------------------------------------------------------------------ phases
    async def closed_loop(
        self, run: BotRun, name: str, chats: Sequence[int], messages: int, kinds: str = "mix"
    ) -> dict[str, Any]:
        """`chats` customers at once, each asking `messages` questions one after another."""
        await self.new_timings()  # skip what came before
        first_timing = self._timings_seen
        bots_cpu_before = self._bots_cpu(run)
        fakes_before = self._fakes_cpu(run)
        signs_before = await self._signs(run)
        machine_before = _machine_cpu()
        driver_before = _own_cpu_s()
        deadline = time.monotonic() + self.plan.phase_timeout_s
        async with self.driver(run) as driver:
            await asyncio.gather(
                *(
                    closed_loop_chat(
                        driver,
                        chat,
                        _kinds(kinds, chat, messages),
                        deadline=deadline,
                        start_after_s=position * STAGGER_S / max(1, len(chats)),
                    )
                    for position, chat in enumerate(chats)
                )
            )
            turns = list(driver.turns)
            problems = {
                "stray_replies": driver.stray_replies,
                "order_violations": driver.order_violations,
                "webhook_errors": driver.webhook_errors,
            }
        after = sample(run.bot.pid)
        bots_cpu = self._bots_cpu(run) - bots_cpu_before
        fakes_after = self._fakes_cpu(run)
        machine_after = _machine_cpu()
        driver_cpu_s = _own_cpu_s() - driver_before
        timings = await self.timings_since(first_timing)
        signs_after = await self._signs(run)
        result = await self._summarise(
            name, run, turns, timings, problems, planned=len(chats) * messages
        )
        # Bot API requests besides the answers, counted by the fake Telegram
        result["signs"] = {
            method: signs_after[method] - signs_before[method]
            for method in ("sendChatAction", "sendMessageDraft")
        }
        result["fakes_cpu_s"] = fakes_after - fakes_before
        result["webhook_connections_opened"] = driver.webhook_connections_opened
        if driver.webhook_post_ms:  # how long updates wait at "Telegram" for the bot
            result["webhook_post_ms"] = pcts(driver.webhook_post_ms)
        # the customers' side (this process): POSTing to a webhook costs it more than
        # queueing updates for a poll, on the same cores as the bot
        result["driver_cpu_s"] = driver_cpu_s
        busy = machine_after[0] - machine_before[0]
        total = machine_after[1] - machine_before[1]
        result["machine_cpu_busy_pct"] = 100.0 * busy / total if total else math.nan
        answered = result["answered"]
        result["cpu_s"] = bots_cpu  # every bot process of the run
        result["cpu_ms_per_turn"] = 1000 * result["cpu_s"] / answered if answered else math.nan
        result["rss_mb_after"] = after.rss_kb / 1024
        result["hwm_mb_after"] = after.hwm_kb / 1024
        print(f"[{run.label}] {name}: {_brief(result)}", flush=True)
        return result

    async def _summarise(
        self,
        name: str,
        run: BotRun,
        turns: list[Turn],
        timings: list[dict[str, Any]],
        problems: dict[str, int],
        *,
        planned: int,
    ) -> dict[str, Any]:
        costs = turn_costs(turns, timings, await self._tool_rows(run))
        with (self.out / f"turns-{run.label}-{name}.jsonl").open("w") as raw:
            for row in costs.rows:
                raw.write(json.dumps(row) + "\n")
        answered = sum(1 for t in turns if t.ok)
        wrong = sum(1 for t in turns if t.reply_text is not None and not t.ok)
        missing = planned - answered - wrong
        return {
            "phase": name,
            "mode": "webhook" if run.webhook_url else "polling",
            "backend": run.backend,
            "instances": len(run.bots),
            "planned": planned,
            "answered": answered,
            "wrong_answers": wrong,
            "missing": missing,
            "errors": wrong + missing + problems["stray_replies"] + problems["webhook_errors"],
            **problems,
            "throughput": throughput(turns),
            "e2e_ms": pcts(costs.e2e_ms),
            "self_ms": pcts(costs.self_ms),
            # each customer's first turn opens connections and sessions: reported apart
            "self_ms_after_first_turn": pcts([r["self_ms"] for r in costs.rows if r["index"] > 0]),
            "self_ms_first_turn": pcts([r["self_ms"] for r in costs.rows if r["index"] == 0]),
            "model_ms": pcts(costs.model_ms),
            "tool_ms": pcts(costs.tool_ms),
            "round_trips": {k: pcts([float(v) for v in vs]) for k, vs in costs.round_trips.items()},
            "summary_requests": sum(1 for r in timings if not r.get("tools")),
            "wrong_samples": [t.reply_text for t in turns if t.reply_text and not t.ok][:3],
        }

    async def burst_order(self, run: BotRun, chats: Sequence[int], messages: int) -> dict[str, Any]:
        """Each chat sends all its questions at once; every answer must match its question
        in order (each question names a different order number)."""
        await self.new_timings()
        async with self.driver(run) as driver:
            turns = []
            for chat in chats:
                for index in range(messages):
                    kind = ("one", "two")[index % 2]
                    turns.append(driver.new_turn(chat, index, kind, order_id=str(2000 + index)))
            await driver.submit(turns)
            await driver.wait_all(turns, self.plan.phase_timeout_s)
            problems = {
                "stray_replies": driver.stray_replies,
                "order_violations": driver.order_violations,
                "webhook_errors": driver.webhook_errors,
            }
        timings = await self.new_timings()
        result = await self._summarise(
            "order", run, turns, timings, problems, planned=len(chats) * messages
        )
        print(f"[{run.label}] order: {_brief(result)}", flush=True)
        return result

    async def distinct_chats(self, run: BotRun, first_chat: int) -> dict[str, Any]:
        """`distinct_chats` customers, one question each, `distinct_concurrency` at a time."""
        await self.new_timings()
        plan = self.plan
        chats = iter(range(first_chat, first_chat + plan.distinct_chats))
        deadline = time.monotonic() + plan.phase_timeout_s
        before = sample(run.bot.pid)
        async with self.driver(run) as driver:

            async def worker() -> None:
                for chat in chats:
                    remaining = deadline - time.monotonic()
                    if remaining <= 0:
                        return
                    kind = mixed_kinds(chat, 1)[0]
                    await driver.ask(driver.new_turn(chat, 0, kind), remaining)

            await asyncio.gather(*(worker() for _ in range(plan.distinct_concurrency)))
            turns = list(driver.turns)
            problems = {
                "stray_replies": driver.stray_replies,
                "order_violations": driver.order_violations,
                "webhook_errors": driver.webhook_errors,
            }
        timings = await self.new_timings()
        after = sample(run.bot.pid)
        result = await self._summarise(
            "distinct_chats", run, turns, timings, problems, planned=plan.distinct_chats
        )
        result["rss_mb_after"] = after.rss_kb / 1024
        result["hwm_mb_after"] = after.hwm_kb / 1024
        result["rss_mb_before"] = before.rss_kb / 1024
        result["idle_rss_mb"] = run.idle["rss_mb"]
        result["hwm_above_idle_mb"] = after.hwm_kb / 1024 - run.idle["rss_mb"]
        result["rss_above_idle_mb"] = after.rss_kb / 1024 - run.idle["rss_mb"]
        result["cpu_ms_per_turn"] = (
            1000 * (after.cpu_s - before.cpu_s) / result["answered"]
            if result["answered"]
            else math.nan
        )
        print(f"[{run.label}] distinct_chats: {_brief(result)}", flush=True)
        return result

    async def conversation(self, run: BotRun, chat: int) -> dict[str, Any]:
        """One customer, `conversation_turns` questions in a row: prompt size per turn."""
        await self.new_timings()
        deadline = time.monotonic() + self.plan.phase_timeout_s
        turns_total = self.plan.conversation_turns
        async with self.driver(run) as driver:
            await closed_loop_chat(driver, chat, mixed_kinds(chat, turns_total), deadline=deadline)
            turns = list(driver.turns)
        timings = await self.new_timings()
        by_marker = model_time_by_marker(timings)
        series = []
        for turn in turns:
            m = by_marker.get(turn.marker)
            series.append(
                {
                    "turn": turn.index + 1,
                    "kind": turn.kind,
                    "ok": turn.ok,
                    "first_request_tokens": m.first_prompt_tokens if m else None,
                    "turn_prompt_tokens": m.prompt_tokens_total if m else None,
                }
            )
        summaries = [r for r in timings if not r.get("tools")]
        result: dict[str, Any] = {
            "phase": "conversation",
            "turns": len(turns),
            "answered": sum(1 for t in turns if t.ok),
            "series": series,
            "summary_requests": len(summaries),
            "summary_prompt_tokens_max": max(
                (estimate_prompt_tokens(r) for r in summaries), default=0
            ),
        }
        for at in (1, 10, 25, 50, 100, 150, 200):
            row = next((s for s in series if s["turn"] == at), None)
            if row is not None:
                result[f"tokens_at_{at}"] = row["first_request_tokens"]
        # compare like with like: the same kind of question at turn 50 and turn 200
        t50, t200 = result.get("tokens_at_50"), result.get("tokens_at_200")
        if t50 and t200:
            result["growth_200_vs_50"] = (t200 - t50) / t50
        print(
            f"[{run.label}] conversation: answered {result['answered']}/{len(turns)}, "
            + ", ".join(f"t{a}={result.get(f'tokens_at_{a}')}" for a in (1, 50, 100, 200)),
            flush=True,
        )
        return result

    async def stats_over_rows(self) -> dict[str, Any]:
        """`/stats all` over a filled audit table: the stats helper's bench/stats_bench.py."""
        proc = await self.group.spawn_python(
            "stats-bench",
            [
                str(REPO_ROOT / "bench" / "stats_bench.py"),
                "--tool-calls",
                str(self.plan.stats_tool_calls),
                "--repeats",
                "3",
            ],
            env={**os.environ, "PYTHONPATH": str(REPO_ROOT)},
        )
        try:
            await asyncio.wait_for(proc.proc.wait(), 900)
        except TimeoutError:
            await proc.stop(within=5)
        await proc.stop(within=5)
        lines = proc.lines
        result: dict[str, Any] = {"phase": "stats", "tool_calls": self.plan.stats_tool_calls}
        for line in lines:
            match = re.search(r"/stats\s+(\w+): report median\s+([\d.]+) ms", line)
            if match:
                result[f"{match.group(1)}_ms"] = float(match.group(2))
            if line.startswith("filled"):
                result["filled"] = line
        result["output"] = lines[-8:]
        print(f"[stats] {result.get('all_ms')} ms for /stats all", flush=True)
        return result


def _kinds(kinds: str, chat: int, messages: int) -> list[str]:
    """ "mix" (greet, one, two), "mix-faq" (and faq), or one kind for every question."""
    if kinds == "mix":
        return mixed_kinds(chat, messages)
    if kinds == "mix-faq":
        return mixed_kinds(chat, messages, KNOWLEDGE_KINDS)
    return [kinds] * messages


def _brief(result: dict[str, Any]) -> str:
    t = result.get("throughput", {})
    return (
        f"answered {result['answered']}/{result['planned']}, errors {result['errors']}, "
        f"order violations {result['order_violations']}, "
        f"{t.get('overall', 0):.1f} turns/s (steady {t.get('steady', 0):.1f}), "
        f"cpu/turn {result.get('cpu_ms_per_turn', math.nan):.2f} ms, "
        f"machine busy {result.get('machine_cpu_busy_pct', math.nan):.0f} %, "
        f"driver {result.get('driver_cpu_s', math.nan):.1f} / fakes "
        f"{result.get('fakes_cpu_s', math.nan):.1f} CPU-s, "
        + (
            f"webhook POST p50 {result['webhook_post_ms']['p50']:.0f} ms, "
            if "webhook_post_ms" in result
            else ""
        )
        + f"typing {result.get('signs', {}).get('sendChatAction', 0)}, drafts "
        f"{result.get('signs', {}).get('sendMessageDraft', 0)}, "
        f"e2e p50 {result['e2e_ms']['p50']:.0f} ms, self p50/p95/p99 "
        f"{result['self_ms']['p50']:.1f}/{result['self_ms']['p95']:.1f}/"
        f"{result['self_ms']['p99']:.1f} ms"
    )


def profile_top(path: Path, lines: int = 30) -> str:
    """The top of a cProfile dump, by own time and by cumulative time."""
    out = io.StringIO()
    stats = pstats.Stats(str(path), stream=out)
    stats.strip_dirs().sort_stats("tottime").print_stats(lines)
    stats.sort_stats("cumulative").print_stats(lines)
    return out.getvalue()


# ---------------------------------------------------------------------- the run
async def _phase_polling(bench: Bench, plan: Plan) -> dict[str, Any]:
    run = await bench.start_bot("polling")
    r: dict[str, Any] = {"startup": run.startup, "idle": run.idle}
    r["latency"] = await bench.closed_loop(
        run, "latency", range(1, plan.latency_chats + 1), plan.latency_messages
    )
    r["two_tool_parallel"] = await bench.closed_loop(
        run,
        "two_tool",
        range(100_001, 100_001 + plan.two_tool_chats),
        plan.two_tool_messages,
        kinds="two",
    )
    r["load"] = await bench.closed_loop(
        run, "load", range(200_001, 200_001 + plan.load_chats), plan.load_messages
    )
    r["order"] = await bench.burst_order(
        run, range(300_001, 300_001 + plan.order_chats), plan.order_messages
    )
    r["distinct_chats"] = await bench.distinct_chats(run, first_chat=1_000_001)
    r["exit_code"] = await bench.stop_bot(run)
    return r


async def _phase_sequential(bench: Bench, plan: Plan) -> dict[str, Any]:
    run = await bench.start_bot("sequential-tools", PARALLEL_TOOL_CALLS="false")
    r: dict[str, Any] = {"startup": run.startup, "idle": run.idle}
    r["two_tool_sequential"] = await bench.closed_loop(
        run,
        "two_tool",
        range(100_001, 100_001 + plan.two_tool_chats),
        plan.two_tool_messages,
        kinds="two",
    )
    r["exit_code"] = await bench.stop_bot(run)
    return r


async def _phase_conversation(bench: Bench, plan: Plan) -> dict[str, Any]:
    # model latency and per-chat pacing off: 200 turns in seconds, not minutes;
    # the prompt size per turn does not depend on either
    run = await bench.start_bot("conversation", TELEGRAM_CHAT_INTERVAL_S="0")
    r: dict[str, Any] = {"startup": run.startup, "idle": run.idle}
    await bench.set_model_latency(5.0)
    try:
        r["conversation"] = await bench.conversation(run, chat=500_001)
    finally:
        await bench.set_model_latency(plan.latency_ms)
    r["exit_code"] = await bench.stop_bot(run)
    return r


async def _phase_webhook(bench: Bench, plan: Plan) -> dict[str, Any]:
    run = await bench.start_bot("webhook", webhook=True)
    r: dict[str, Any] = {"startup": run.startup, "idle": run.idle}
    r["latency"] = await bench.closed_loop(
        run, "latency", range(1, plan.latency_chats + 1), plan.latency_messages
    )
    r["load"] = await bench.closed_loop(
        run, "load", range(200_001, 200_001 + plan.load_chats), plan.load_messages
    )
    r["exit_code"] = await bench.stop_bot(run)
    return r


async def _phase_latency(bench: Bench, plan: Plan) -> dict[str, Any]:
    """The 50-chat latency phase alone."""
    run = await bench.start_bot("latency")
    r: dict[str, Any] = {"startup": run.startup, "idle": run.idle}
    r["latency"] = await bench.closed_loop(
        run, "latency", range(1, plan.latency_chats + 1), plan.latency_messages
    )
    r["exit_code"] = await bench.stop_bot(run)
    return r


async def _phase_memory(bench: Bench, plan: Plan) -> dict[str, Any]:
    """Distinct chats on a fresh bot."""
    run = await bench.start_bot("memory")
    r: dict[str, Any] = {"startup": run.startup, "idle": run.idle}
    r["distinct_chats"] = await bench.distinct_chats(run, first_chat=1_000_001)
    r["exit_code"] = await bench.stop_bot(run)
    return r


async def _phase_load(bench: Bench, plan: Plan) -> dict[str, Any]:
    """The load phase alone, e.g. before/after a change."""
    run = await bench.start_bot("load")
    r: dict[str, Any] = {"startup": run.startup, "idle": run.idle}
    r["load"] = await bench.closed_loop(
        run, "load", range(200_001, 200_001 + plan.load_chats), plan.load_messages
    )
    r["exit_code"] = await bench.stop_bot(run)
    return r


async def _phase_webhook_load(bench: Bench, plan: Plan) -> dict[str, Any]:
    """The load phase alone on a fresh webhook bot: the webhook's twin of `load`.

    The `webhook` phase runs its 1,000-chat load after the 50-chat latency phase in the
    same process, which cost its load 0.2-0.4 ms of CPU per turn in our runs; `load`
    (polling) starts fresh. `--only load,webhook-load` compares the modes like for like.
    """
    run = await bench.start_bot("webhook-load", webhook=True)
    r: dict[str, Any] = {"startup": run.startup, "idle": run.idle}
    r["load"] = await bench.closed_loop(
        run, "load", range(200_001, 200_001 + plan.load_chats), plan.load_messages
    )
    r["exit_code"] = await bench.stop_bot(run)
    return r


async def _phase_profile(bench: Bench, plan: Plan) -> dict[str, Any]:
    profile_path = bench.out / "bot.prof"
    run = await bench.start_bot("profile", profile_to=profile_path)
    r: dict[str, Any] = {"startup": run.startup, "idle": run.idle}
    r["load"] = await bench.closed_loop(
        run, "load", range(200_001, 200_001 + plan.load_chats), plan.profile_messages
    )
    r["exit_code"] = await bench.stop_bot(run)
    if profile_path.exists():
        top = profile_top(profile_path)
        (bench.out / "profile.txt").write_text(top)
        r["profile_top"] = top
    return r


async def _phase_modes(bench: Bench, plan: Plan) -> dict[str, Any]:
    return await phase_modes(bench, plan, pairs=plan.mode_pairs)


async def _phase_modes_together(bench: Bench, plan: Plan) -> dict[str, Any]:
    return await phase_modes_together(
        bench,
        plan,
        pairs=plan.mode_pairs,
        control=plan.together_control,
        floor=plan.together_floor,
    )


async def _phase_knowledge(bench: Bench, plan: Plan) -> dict[str, Any]:
    return await phase_knowledge(bench, plan, pairs=plan.mode_pairs)


Phase = Callable[[Bench, Plan], Awaitable[dict[str, Any]]]
# (name, runs without --only, phase), in the order they run
PHASES: tuple[tuple[str, bool, Phase], ...] = (
    ("polling", True, _phase_polling),
    ("sequential", True, _phase_sequential),
    ("conversation", True, _phase_conversation),
    ("webhook", True, _phase_webhook),
    ("latency", False, _phase_latency),
    ("memory", False, _phase_memory),
    ("webhook-load", False, _phase_webhook_load),  # --only load,webhook-load
    ("load", False, _phase_load),
    ("streaming", False, phase_streaming),  # issue 17: --only streaming
    ("instances", False, phase_instances),  # issue 20: --only instances
    ("modes", False, _phase_modes),  # issue 19: --only modes (--pairs N)
    ("modes-together", False, _phase_modes_together),  # --only modes-together (--pairs N)
    ("live-shop", False, phase_live_shop),  # issue 31: --only live-shop
    ("knowledge", False, _phase_knowledge),  # issue 40: --only knowledge (--pairs N)
)


def _plan(args: argparse.Namespace) -> Plan:
    plan = QUICK if args.quick else FULL
    if args.latency_ms is not None:
        plan = Plan(**{**plan.__dict__, "latency_ms": args.latency_ms})
    if args.distinct_concurrency is not None:
        plan = Plan(**{**plan.__dict__, "distinct_concurrency": args.distinct_concurrency})
    if args.load_chats is not None:  # e.g. a shared machine that 1,000 chats would swamp
        plan = Plan(**{**plan.__dict__, "load_chats": args.load_chats})
    if args.load_messages is not None:  # a longer load phase: less noise in one run
        plan = Plan(**{**plan.__dict__, "load_messages": args.load_messages})
    if args.pairs is not None:
        plan = Plan(**{**plan.__dict__, "mode_pairs": args.pairs})
    if args.control is not None:
        plan = Plan(**{**plan.__dict__, "together_control": args.control})
    if args.floor is not None:
        plan = Plan(**{**plan.__dict__, "together_floor": args.floor})
    return plan


async def run_bench(args: argparse.Namespace) -> dict[str, Any]:
    plan = _plan(args)
    stamp = datetime.now(UTC).strftime("%Y%m%dT%H%M%SZ")
    out = Path(args.out or REPO_ROOT / "data" / "bench" / stamp)
    await asyncio.to_thread(out.mkdir, parents=True, exist_ok=True)
    print(f"bench: results and logs in {out}", flush=True)
    results: dict[str, Any] = {
        "machine": machine(),
        "date": datetime.now(UTC).isoformat(timespec="seconds"),
        "command": " ".join([Path(sys.executable).name, "-m", "bench.run", *sys.argv[1:]]),
        "plan": plan.__dict__,
    }
    only = set(args.only.split(",")) if args.only else None

    async with ProcessGroup(out) as group:
        bench = Bench(
            plan,
            group,
            out,
            bot_env=dict(args.bot_env or []),
            database_url=args.database_url,
            instances=args.instances,
        )
        await bench.start_openai()
        runs: dict[str, Any] = {}
        results["runs"] = runs
        for name, by_default, phase in PHASES:
            if (only is None and by_default) or (only is not None and name in only):
                runs[name] = await phase(bench, plan)
        if args.profile:
            runs["profile"] = await _phase_profile(bench, plan)
        if (only is None or "stats" in only) and not args.skip_stats:
            results["stats"] = await bench.stats_over_rows()

    results["targets"] = targets(results, plan)
    (out / "results.json").write_text(json.dumps(results, indent=2, ensure_ascii=False))
    table = markdown_table(results["targets"])
    (out / "results.md").write_text(table + "\n")
    print("\n" + table, flush=True)
    print(f"\nbench: full results in {out / 'results.json'}", flush=True)
    return results


def _own_cpu_s() -> float:
    usage = resource.getrusage(resource.RUSAGE_SELF)
    return usage.ru_utime + usage.ru_stime


def _machine_cpu() -> tuple[float, float]:
    """(busy, total) jiffies of all CPUs from /proc/stat: how loaded the machine was."""
    fields = [int(v) for v in Path("/proc/stat").read_text().splitlines()[0].split()[1:]]
    idle = fields[3] + fields[4]  # idle + iowait
    return float(sum(fields) - idle), float(sum(fields))


def machine() -> dict[str, Any]:
    cpu = "unknown"
    with contextlib.suppress(OSError):
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                cpu = line.split(":", 1)[1].strip()
                break
    mem_kb = 0
    with contextlib.suppress(OSError, ValueError):
        for line in Path("/proc/meminfo").read_text().splitlines():
            if line.startswith("MemTotal"):
                mem_kb = int(line.split()[1])
    return {
        "nproc": os.cpu_count(),
        "cpu": cpu,
        "memory_gb": round(mem_kb / 1024 / 1024, 1),
        "python": platform.python_version(),
        "platform": platform.platform(),
        "load_average_at_start": os.getloadavg(),
    }


def _get(data: dict[str, Any], *path: str) -> Any:
    for key in path:
        if not isinstance(data, dict) or key not in data:
            return None
        data = data[key]
    return data


Row = tuple[str, str, bool | None]  # target, what was measured, passed (None: no target)


def targets(results: dict[str, Any], plan: Plan) -> list[dict[str, Any]]:
    """One row per target of issue 9: what was measured and whether it passed."""
    runs = results.get("runs", {})
    smoke = plan.load_chats < FULL.load_chats  # --quick: numbers only, no verdicts
    found: list[Row] = [
        *_throughput_rows(runs, plan),
        *_latency_rows(runs, plan),
        *_tool_rows(runs, plan),
        *_memory_rows(runs, plan),
        *_cost_rows(results, plan),
        *_startup_rows(runs),
        *streaming_rows(runs, plan),
        *instances_rows(runs),
        *modes_rows(runs),
        *together_rows(runs),
        *knowledge_rows(runs),
    ]
    return [
        {"target": target, "measured": measured, "pass": None if smoke else passed}
        for target, measured, passed in found
    ]


def _load_phase(runs: dict[str, Any]) -> Any:
    return _get(runs, "polling", "load") or _get(runs, "load", "load")


def _throughput_rows(runs: dict[str, Any], plan: Plan) -> list[Row]:
    rows: list[Row] = []
    load = _load_phase(runs)
    if load:
        tput = load["throughput"]
        ok = (
            tput["overall"] >= 120
            and load["errors"] == 0
            and load["order_violations"] == 0
            and plan.load_chats >= 1000
        )
        rows.append(
            (
                f">= 120 turns/s with {plan.load_chats} concurrent chats, 0 errors, order kept",
                f"{tput['overall']:.1f} turns/s overall, {tput['steady']:.1f} steady; "
                f"{load['errors']} errors, {load['order_violations']} order violations "
                f"({load['answered']}/{load['planned']} answered)",
                ok,
            )
        )
    order = _get(runs, "polling", "order")
    if order:
        rows.append(
            (
                "per-chat order kept (burst of questions per chat)",
                f"{order['answered']}/{order['planned']} answered in order, "
                f"{order['order_violations']} violations, {order['errors']} errors",
                order["errors"] == 0 and order["order_violations"] == 0,
            )
        )
    wload = _get(runs, "webhook", "load")
    if wload:
        tput = wload["throughput"]
        rows.append(
            (
                f"(webhook) >= 120 turns/s with {plan.load_chats} chats, 0 errors",
                f"{tput['overall']:.1f} turns/s overall, {tput['steady']:.1f} steady; "
                f"{wload['errors']} errors",
                tput["overall"] >= 120 and wload["errors"] == 0 and plan.load_chats >= 1000,
            )
        )
    return rows


def _latency_rows(runs: dict[str, Any], plan: Plan) -> list[Row]:
    rows: list[Row] = []
    for mode, lat in (
        ("polling", _get(runs, "polling", "latency") or _get(runs, "latency", "latency")),
        ("webhook", _get(runs, "webhook", "latency")),
    ):
        if not lat:
            continue
        s, w = lat["self_ms"], lat["self_ms_after_first_turn"]
        rows.append(
            (
                f"bot self-time p50 <= 10 ms, p99 <= 50 ms at {plan.latency_chats} chats ({mode})",
                f"all turns: p50 {s['p50']:.1f}, p95 {s['p95']:.1f}, p99 {s['p99']:.1f} ms; "
                f"after each chat's first turn: p50 {w['p50']:.1f}, p95 {w['p95']:.1f}, "
                f"p99 {w['p99']:.1f} ms (e2e p50 {lat['e2e_ms']['p50']:.0f} ms; "
                f"{lat['errors']} errors)",
                s["p50"] <= 10 and s["p99"] <= 50,
            )
        )
    return rows


def _tool_rows(runs: dict[str, Any], plan: Plan) -> list[Row]:
    rows: list[Row] = []
    two = _get(runs, "polling", "two_tool_parallel")
    if two:
        trips = two["round_trips"].get("two", {}).get("p50", math.nan)
        wall = two["e2e_ms"]["p50"]
        tool = two["tool_ms"]["max"]
        expected = 2 * plan.latency_ms + tool
        rows.append(
            (
                "two-tool question: 2 model round trips (parallel), "
                "wall ~ 2 x latency + slowest tool",
                f"{trips:.0f} round trips; wall p50 {wall:.0f} ms vs 2 x {plan.latency_ms:.0f} + "
                f"{tool:.1f} = {expected:.0f} ms",
                trips == 2 and wall <= expected + 0.1 * plan.latency_ms,
            )
        )
    seq = _get(runs, "sequential", "two_tool_sequential")
    if seq:
        trips = seq["round_trips"].get("two", {}).get("p50", math.nan)
        rows.append(
            (
                "two-tool question with PARALLEL_TOOL_CALLS=false (for comparison)",
                f"{trips:.0f} round trips; wall p50 {seq['e2e_ms']['p50']:.0f} ms",
                None,
            )
        )
    conv = _get(runs, "conversation", "conversation")
    if conv and "growth_200_vs_50" in conv:
        growth = conv["growth_200_vs_50"]
        rows.append(
            (
                "prompt tokens at turn 200 within 10 % of turn 50",
                f"turn 50: {conv['tokens_at_50']}, turn 200: {conv['tokens_at_200']} "
                f"({growth * 100:+.1f} %); turn 1: {conv.get('tokens_at_1')}",
                abs(growth) <= 0.10,
            )
        )
    return rows


def _memory_rows(runs: dict[str, Any], plan: Plan) -> list[Row]:
    rows: list[Row] = []
    for label, distinct in (
        ("after the other polling phases", _get(runs, "polling", "distinct_chats")),
        ("fresh bot", _get(runs, "memory", "distinct_chats")),
    ):
        if not distinct:
            continue
        rows.append(
            (
                f"RSS after {plan.distinct_chats:,} distinct chats <= 50 MB above idle ({label})",
                f"idle {distinct['idle_rss_mb']:.0f} MB; after: RSS "
                f"{distinct['rss_mb_after']:.0f} MB (+{distinct['rss_above_idle_mb']:.0f}), "
                f"peak {distinct['hwm_mb_after']:.0f} MB (+{distinct['hwm_above_idle_mb']:.0f});"
                f" the phase itself added"
                f" {distinct['rss_mb_after'] - distinct['rss_mb_before']:+.1f} MB;"
                f" {distinct['errors']} errors",
                distinct["hwm_above_idle_mb"] <= 50 and plan.distinct_chats >= 10_000,
            )
        )
    return rows


def _cost_rows(results: dict[str, Any], plan: Plan) -> list[Row]:
    rows: list[Row] = []
    load = _load_phase(results.get("runs", {}))
    if load:
        rows.append(
            (
                "CPU seconds per turn (measured, no target)",
                f"{load['cpu_ms_per_turn']:.2f} ms CPU per turn under load "
                f"({load['cpu_s']:.1f} s for {load['answered']} turns)",
                None,
            )
        )
    stats = results.get("stats")
    if stats and "all_ms" in stats:
        rows.append(
            (
                f"/stats all <= 1 s over {plan.stats_tool_calls:,} audit rows",
                f"{stats['all_ms']:.0f} ms (median of 3)",
                stats["all_ms"] <= 1000 and plan.stats_tool_calls >= 1_000_000,
            )
        )
    return rows


def _startup_rows(runs: dict[str, Any]) -> list[Row]:
    starts = sorted(
        v
        for name, r in runs.items()
        if name != "profile"  # cProfile slows the start-up itself
        for k, v in (r.get("startup") or {}).items()
        if k == "start_to_first_getUpdates_s" and not math.isnan(v)
    )
    if not starts:
        return []
    median = starts[len(starts) // 2]
    return [
        (
            "start to first getUpdates <= 2 s",
            f"median {median:.2f} s over {len(starts)} starts "
            f"(min {starts[0]:.2f}, max {starts[-1]:.2f})",
            median <= 2.0,
        )
    ]


def markdown_table(rows: list[dict[str, Any]]) -> str:
    lines = ["| Target | Measured | Result |", "|---|---|---|"]
    for r in rows:
        verdict = {True: "pass", False: "**miss**", None: "—"}[r["pass"]]
        lines.append(f"| {r['target']} | {r['measured']} | {verdict} |")
    return "\n".join(lines)


def _setting(text: str) -> tuple[str, str]:
    name, sep, value = text.partition("=")
    if not sep or not name:
        raise argparse.ArgumentTypeError("expected NAME=VALUE")
    return name, value


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description="Benchmark of the whole bot")
    parser.add_argument("--quick", action="store_true", help="small, fast smoke run")
    parser.add_argument("--latency-ms", type=float, help="fake model latency (default 1000)")
    parser.add_argument(
        "--only",
        help="comma-separated runs: polling,sequential,conversation,webhook,stats"
        " (and, only when named: latency, load, webhook-load, memory, streaming, instances,"
        " modes, modes-together, live-shop, knowledge)",
    )
    parser.add_argument(
        "--pairs",
        type=int,
        help="--only modes: fresh bots per mode, run webhook, polling, polling, webhook, ...;"
        " --only modes-together: pairs of bots at the same time (default 2)",
    )
    against = parser.add_mutually_exclusive_group()
    against.add_argument(
        "--control",
        choices=MODES,
        help="--only modes-together: pairs of two bots of this mode instead of webhook"
        " against polling (how far a pair scatters with nothing to find)",
    )
    against.add_argument(
        "--floor",
        choices=FLOOR_CLIENTS,
        help="--only modes-together: pairs of the bot (polling) and bench.naive_bot, the"
        " naive support bot it is measured against, calling the model with this client",
    )
    parser.add_argument(
        "--distinct-concurrency", type=int, help="customers at once in the distinct-chats phase"
    )
    parser.add_argument(
        "--load-chats", type=int, help="customers at once in the load phases (default 1000)"
    )
    parser.add_argument(
        "--load-messages",
        type=int,
        help="messages per chat in the load phases (default 6); more lengthens each run"
        " and narrows its noise",
    )
    parser.add_argument("--profile", action="store_true", help="also run the bot under cProfile")
    parser.add_argument("--skip-stats", action="store_true", help="skip the /stats timing")
    parser.add_argument("--out", help="results folder (default data/bench/<UTC time>)")
    parser.add_argument(
        "--bot-env",
        action="append",
        type=_setting,
        metavar="NAME=VALUE",
        help="a setting for every bot process, e.g. --bot-env UVLOOP_ENABLED=false (A/B runs)",
    )
    parser.add_argument(
        "--database-url",
        help="a PostgreSQL server (postgresql://...): every bot run gets a fresh database "
        "there instead of a SQLite file",
    )
    parser.add_argument(
        "--instances",
        type=int,
        choices=(1, 2),
        default=1,
        help="bot processes per run on one database (webhook: POSTs alternate; "
        "polling: leader + standby)",
    )
    args = parser.parse_args(argv)

    async def guarded() -> None:
        task = asyncio.current_task()
        loop = asyncio.get_running_loop()
        assert task is not None
        for sig in (signal.SIGTERM, signal.SIGINT):
            loop.add_signal_handler(sig, task.cancel)  # unwinds: every process is stopped
        await run_bench(args)

    with contextlib.suppress(asyncio.CancelledError):
        asyncio.run(guarded())


if __name__ == "__main__":
    main()
