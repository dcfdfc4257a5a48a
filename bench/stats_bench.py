"""How long `/stats` takes on a large history (target: `/stats all` <= 1 s).

Fills a throw-away SQLite file (real migrations, so the real indexes) with a realistic
history — 1,000,000 tool-call audit rows and 1,000,000 turns by default, the model calls
(with cached tokens), sessions and 👍/👎 ratings around them — then times the owner's
report for every period (with prices set, so the cost is estimated), the table and the
chart.

    .venv/bin/python bench/stats_bench.py                 # 1,000,000 of each
    .venv/bin/python bench/stats_bench.py --tool-calls 100000 --turns 100000 \
        --keep data/bench.sqlite3

The history spans 90 days ending now; timings are printed, never asserted.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import random
import sqlite3
import statistics
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path

from bot.telegram.stats_view.chart import render_chart
from bot.telegram.stats_view.table import render_table
from services.stats import Prices, StatsService
from storage.sqlite import SqliteDatabase
from storage.stats import StatsRepository

DAY = 86_400.0
SPAN_DAYS = 90
TOOLS = ("get_order_status", "get_return_policy")
TOOL_WEIGHTS = (0.72, 0.28)
# (status, error_code, weight) of one audited call
OUTCOMES = (
    ("success", None, 0.90),
    ("business_error", "rate_limited", 0.02),
    ("business_error", "unavailable", 0.01),
    ("rejected", "invalid_arguments", 0.03),
    ("timeout", "timeout", 0.01),
    ("technical_error", "unavailable", 0.005),
)
UNKNOWN_TOOL_SHARE = 0.015  # the model invents a tool name now and then


ROLLUP_BACKFILL = """
INSERT INTO turn_totals_daily
SELECT CAST(started_at / 86400 AS INTEGER) * 86400.0,
       COUNT(*), SUM(model_steps), MAX(model_steps), SUM(tool_calls),
       COALESCE(SUM(prompt_tokens) FILTER (WHERE completion_tokens IS NOT NULL), 0),
       COALESCE(SUM(completion_tokens) FILTER (WHERE prompt_tokens IS NOT NULL), 0),
       COALESCE(SUM(cached_tokens)
         FILTER (WHERE prompt_tokens IS NOT NULL AND completion_tokens IS NOT NULL), 0),
       COUNT(*) FILTER (WHERE prompt_tokens IS NULL OR completion_tokens IS NULL)
FROM turns GROUP BY 1
"""
RATED_SHARE = 0.08  # answers a customer rated
THUMBS_UP_SHARE = 0.8


def _tool_calls_per_turn(rng: random.Random) -> int:
    """Half the turns look one thing up, some none (greetings), a few two or three
    (one call per turn on average)."""
    r = rng.random()
    if r < 0.30:
        return 0
    if r < 0.80:
        return 1
    if r < 0.90:
        return 2
    return 3


Rows = list[tuple[object, ...]]


def _history(
    rng: random.Random, tool_calls: int, turns: int, now: float
) -> Iterator[tuple[tuple[object, ...], Rows, Rows, Rows]]:
    """Yield (turn row, tool rows, llm rows, feedback rows) until both targets are made."""
    made = 0
    turn_no = 0
    start = now - SPAN_DAYS * DAY
    chats = max(1000, tool_calls // 40)
    outcome_weights = [w for _, _, w in OUTCOMES]
    while made < tool_calls or turn_no < turns:
        turn_no += 1
        chat_id = rng.randrange(1, chats + 1)
        user_id = chat_id  # private chats
        session_id = chat_id  # one open session per chat in the bench
        progress = min(1.0, max(made / max(tool_calls, 1), turn_no / max(turns, 1)))
        started = start + progress * SPAN_DAYS * DAY + rng.random() * 60
        n_tools = min(_tool_calls_per_turn(rng), tool_calls - made)
        steps = 1 + (1 if n_tools else 0) + (1 if n_tools and rng.random() < 0.1 else 0)
        turn_id = f"t{turn_no:09d}"
        tool_rows: list[tuple[object, ...]] = []
        at = started + 0.8
        for i in range(n_tools):
            if rng.random() < UNKNOWN_TOOL_SHARE:
                name, status, code = "search_web", "rejected", "unknown_tool"
            else:
                name = rng.choices(TOOLS, TOOL_WEIGHTS)[0]
                status, code, _ = rng.choices(OUTCOMES, outcome_weights)[0]
            duration = rng.lognormvariate(3.5, 0.8) if status != "timeout" else 5000.0
            tool_rows.append(
                (
                    turn_id,
                    session_id,
                    chat_id,
                    user_id,
                    f"call_{turn_no}_{i}",
                    name,
                    at,
                    round(duration, 2),
                    status,
                    code,
                )
            )
        made += n_tools
        failed = rng.random() < 0.02
        unknown_usage = rng.random() < 0.05
        llm_rows: list[tuple[object, ...]] = []
        for step in range(steps):
            fallback = 1 if rng.random() < 0.01 else 0
            ok = not (failed and step == steps - 1)
            llm_rows.append(
                (
                    turn_id,
                    session_id,
                    "chat",
                    "gpt-4o-mini",
                    ("gpt-4.1-mini" if fallback else "gpt-4o-mini") if ok else None,
                    fallback if ok else 0,
                    started + step,
                    rng.lognormvariate(6.8, 0.4),
                    "ok" if ok else "error",
                    None if ok else "unavailable",
                    "stop" if ok else None,
                    None if unknown_usage else 900,
                    None if unknown_usage else 60,
                    None if unknown_usage else 960,
                    None if unknown_usage else 512,
                )
            )
        if rng.random() < 0.03:
            llm_rows.append(
                (
                    None,
                    session_id,
                    "summary",
                    "gpt-4o-mini",
                    "gpt-4o-mini",
                    0,
                    started + 5,
                    rng.lognormvariate(7.0, 0.3),
                    "ok" if rng.random() < 0.97 else "error",
                    None,
                    "stop",
                    1500,
                    200,
                    1700,
                    1024,
                )
            )
        turn_row = (
            turn_id,
            session_id,
            chat_id,
            user_id,
            started,
            round(rng.lognormvariate(7.6, 0.5), 1),
            "failed" if failed else "answered",
            None if failed else ("completed" if rng.random() < 0.98 else "truncated"),
            "unavailable" if failed else None,
            steps,
            n_tools,
            None if unknown_usage else 900 * steps,
            None if unknown_usage else 60 * steps,
            None if unknown_usage else 960 * steps,
            "support_chat@1",
            None if unknown_usage else 512 * steps,
        )
        feedback_rows: Rows = []
        if not failed and rng.random() < RATED_SHARE:
            rating = 1 if rng.random() < THUMBS_UP_SHARE else -1
            feedback_rows.append((turn_id, chat_id, user_id, rating, started, started + 30))
        yield turn_row, tool_rows, llm_rows, feedback_rows


def fill(
    path: Path, tool_calls: int, turns_wanted: int, now: float, seed: int = 7
) -> dict[str, int]:
    """Write the synthetic history with the stdlib driver (fast bulk insert)."""
    rng = random.Random(seed)
    conn = sqlite3.connect(path)
    conn.execute("PRAGMA synchronous = OFF")
    chats = max(1000, tool_calls // 40)
    counts = {"turns": 0, "tool_calls": 0, "llm_calls": 0, "sessions": 0, "ratings": 0}
    with conn:
        sessions = []
        for chat_id in range(1, chats + 1):
            sessions.append((chat_id, chat_id, now - SPAN_DAYS * DAY, None, None))
        # closed sessions: /new resets and a few others, spread over the span
        for i in range(chats // 3):
            opened = now - SPAN_DAYS * DAY + rng.random() * SPAN_DAYS * DAY
            closed = min(now - 1, opened + rng.random() * DAY)
            reason = "reset" if rng.random() < 0.8 else "expired"
            sessions.append((chats + 1 + i, rng.randrange(1, chats + 1), opened, closed, reason))
        conn.executemany(
            "INSERT INTO sessions (id, chat_id, opened_at, closed_at, close_reason)"
            " VALUES (?, ?, ?, ?, ?)",
            sessions,
        )
        counts["sessions"] = len(sessions)
        turns: list[tuple[object, ...]] = []
        tools: list[tuple[object, ...]] = []
        llms: list[tuple[object, ...]] = []
        ratings: list[tuple[object, ...]] = []

        def flush() -> None:
            conn.executemany(
                "INSERT INTO turns (id, session_id, chat_id, user_id, started_at, duration_ms,"
                " status, stop_reason, error_code, model_steps, tool_calls, prompt_tokens,"
                " completion_tokens, total_tokens, prompt, cached_tokens)"
                " VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
                turns,
            )
            conn.executemany(
                "INSERT INTO answer_feedback (turn_id, chat_id, user_id, rating, answered_at,"
                " rated_at) VALUES (?, ?, ?, ?, ?, ?)",
                ratings,
            )
            conn.executemany(
                "INSERT INTO tool_calls (turn_id, session_id, chat_id, user_id, call_id,"
                " tool_name, started_at, duration_ms, status, error_code)"
                " VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
                tools,
            )
            conn.executemany(
                "INSERT INTO llm_calls (turn_id, session_id, purpose, requested_model, model,"
                " fallback, started_at, latency_ms, status, error_code, finish_reason,"
                " prompt_tokens, completion_tokens, total_tokens, cached_tokens)"
                " VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
                llms,
            )
            counts["ratings"] += len(ratings)
            ratings.clear()
            counts["turns"] += len(turns)
            counts["tool_calls"] += len(tools)
            counts["llm_calls"] += len(llms)
            turns.clear()
            tools.clear()
            llms.clear()

        for turn_row, tool_rows, llm_rows, feedback_rows in _history(
            rng, tool_calls, turns_wanted, now
        ):
            turns.append(turn_row)
            tools.extend(tool_rows)
            llms.extend(llm_rows)
            ratings.extend(feedback_rows)
            if len(turns) >= 50_000:
                flush()
        flush()
        # the bot adds each turn to its day's totals as it records it (storage/records.py);
        # the bulk insert above bypasses that, so sum the days the way migration 0009 does
        conn.execute(ROLLUP_BACKFILL)
    conn.close()
    return counts


async def measure(path: Path, now: float, repeats: int, show: bool) -> None:
    db = await SqliteDatabase.open(path)
    try:
        service = StatsService(
            StatsRepository(db), clock=lambda: now, prices=Prices(0.15, 0.60, 0.075)
        )
        for arg in ("24h", "7d", "30d", "all"):
            period = service.parse_period(arg)
            times = []
            cpu = []  # CPU seconds of the whole process (SQLite runs in aiosqlite's thread):
            # what the wall time would be on an idle core, when the machine is shared
            report = None
            for _ in range(repeats):
                t0, c0 = time.perf_counter(), time.process_time()
                report = await service.report(period)
                times.append(time.perf_counter() - t0)
                cpu.append(time.process_time() - c0)
            assert report is not None
            t0 = time.perf_counter()
            chunks = render_table(report, "en")
            table_s = time.perf_counter() - t0
            t0 = time.perf_counter()
            png = await asyncio.to_thread(render_chart, report, "ru")
            chart_s = time.perf_counter() - t0
            print(
                f"/stats {arg:>3}: report median {statistics.median(times) * 1000:7.1f} ms"
                f" (min {min(times) * 1000:.1f}, max {max(times) * 1000:.1f}, n={repeats};"
                f" CPU median {statistics.median(cpu) * 1000:.1f} ms);"
                f" {report.tool_calls_total:>9,} tool calls, {report.turns.count:>8,} turns;"
                f" table {table_s * 1000:.1f} ms ({len(chunks)} msg);"
                f" chart {chart_s * 1000:.1f} ms ({len(png):,} B)"
            )
        if show:
            print("\n\n".join(render_table(report, "en")))
    finally:
        await db.close()


async def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--tool-calls", type=int, default=1_000_000)
    parser.add_argument("--turns", type=int, default=1_000_000)
    parser.add_argument("--repeats", type=int, default=5)
    parser.add_argument("--keep", type=Path, help="write the database here and keep it")
    parser.add_argument("--reuse", action="store_true", help="reuse --keep if it exists")
    parser.add_argument("--show", action="store_true", help="print the `all` table")
    args = parser.parse_args()
    now = time.time()
    with tempfile.TemporaryDirectory() as tmp:
        path = args.keep or Path(tmp) / "stats-bench.sqlite3"
        if args.reuse and path.exists():
            conn = sqlite3.connect(path)
            now = conn.execute("SELECT MAX(started_at) FROM turns").fetchone()[0]
            conn.close()
        else:
            path.unlink(missing_ok=True)
            db = await SqliteDatabase.open(path)  # the real migrations, so the real indexes
            await db.close()
            t0 = time.perf_counter()
            counts = fill(path, args.tool_calls, args.turns, now)
            print(
                f"filled in {time.perf_counter() - t0:.1f} s: "
                + ", ".join(f"{v:,} {k}" for k, v in counts.items())
                + f"; file {path.stat().st_size / 1e6:.0f} MB"
            )
        load = ", ".join(f"{x:.2f}" for x in os.getloadavg())
        print(f"load average before measuring: {load} ({os.cpu_count()} CPUs)")
        # a minute of jitter puts the newest rows just after `now`: ask a little later
        await measure(path, now + 120, args.repeats, args.show)


if __name__ == "__main__":
    asyncio.run(main())
