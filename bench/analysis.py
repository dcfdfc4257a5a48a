"""Turning raw observations into the numbers the report shows.

Bot self-time of a turn = end-to-end latency − time inside the fake model − time inside
tools. The fake model reports its own time per request (`/_fake/timings`), matched to
the turn by the marker at the end of the question; tool time is the union of the turn's
tool-call audit intervals (parallel calls overlap, so their time counts once), read from
the bot's own database (`updates.turn_id` → `tool_calls`): its SQLite file, or its
PostgreSQL database (`--database-url`).
"""

from __future__ import annotations

import math
import re
import sqlite3
from collections import defaultdict
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import asyncpg

from bench.driver import Turn

# (update id, tool call started at, its duration in ms) for every audited tool call
ToolRow = tuple[int, float, float]
TOOL_ROWS_SQL = (
    "SELECT u.update_id, t.started_at, t.duration_ms FROM updates u"
    " JOIN tool_calls t ON t.turn_id = u.turn_id"
)

MARKER_RE = re.compile(r"(#[bcdfghjklmnpqrstvwxz]+)\s*$")
# a rough figure from the characters the fake model logs (the text itself is not logged;
# the bot counts tokens by what the text is made of, services/history.py, and
# bench/prompt_tokens.py counts requests by part with a real tokenizer)
CHARS_PER_TOKEN = 4
TOKENS_PER_MESSAGE = 4


def percentile(values: Sequence[float], pct: float) -> float:
    """Nearest-rank percentile; NaN for no values."""
    if not values:
        return math.nan
    ordered = sorted(values)
    rank = max(1, math.ceil(pct / 100 * len(ordered)))
    return ordered[rank - 1]


def pcts(values: Sequence[float]) -> dict[str, float]:
    return {f"p{p}": percentile(values, p) for p in (50, 95, 99)} | {
        "max": max(values) if values else math.nan,
        "n": float(len(values)),
    }


@dataclass(frozen=True)
class ModelTime:
    round_trips: int
    model_ms: float
    first_prompt_tokens: int
    prompt_tokens_total: int


def estimate_prompt_tokens(record: dict[str, Any]) -> int:
    """A rough size: 4 characters a token, 4 per message, plus the tool schemas."""
    chars = int(record["prompt_chars"]) + int(record.get("tools_chars", 0))
    return math.ceil(chars / CHARS_PER_TOKEN) + TOKENS_PER_MESSAGE * int(record["messages"])


def model_time_by_marker(timings: Iterable[dict[str, Any]]) -> dict[str, ModelTime]:
    """Chat requests (tools offered) grouped by the marker of their last user message."""
    grouped: dict[str, list[dict[str, Any]]] = defaultdict(list)
    for record in timings:
        if not record.get("tools"):
            continue  # a background summary, not part of a turn
        match = MARKER_RE.search(str(record.get("last_user", "")))
        if match:
            grouped[match.group(1)].append(record)
    result = {}
    for tag, records in grouped.items():
        records.sort(key=lambda r: r["arrived"])
        tokens = [estimate_prompt_tokens(r) for r in records]
        result[tag] = ModelTime(
            round_trips=len(records),
            model_ms=sum(float(r["model_ms"]) for r in records),
            first_prompt_tokens=tokens[0],
            prompt_tokens_total=sum(tokens),
        )
    return result


def _union_ms(intervals: list[tuple[float, float]]) -> float:
    total = 0.0
    end = -math.inf
    for start, stop in sorted(intervals):
        if start > end:
            total += stop - start
            end = stop
        elif stop > end:
            total += stop - end
            end = stop
    return total * 1000.0


def sqlite_tool_rows(db_path: Path) -> list[ToolRow]:
    conn = sqlite3.connect(f"file:{db_path}?mode=ro", uri=True)
    try:
        return [(int(u), float(s), float(d)) for u, s, d in conn.execute(TOOL_ROWS_SQL)]
    finally:
        conn.close()


async def postgres_tool_rows(url: str) -> list[ToolRow]:
    conn = await asyncpg.connect(url)
    try:
        return [(int(u), float(s), float(d)) for u, s, d in await conn.fetch(TOOL_ROWS_SQL)]
    finally:
        await conn.close()


def tool_time_by_update(rows: Iterable[ToolRow], update_ids: Iterable[int]) -> dict[int, float]:
    """Milliseconds inside tools per update (union of the audit intervals)."""
    wanted = set(update_ids)
    intervals: dict[int, list[tuple[float, float]]] = defaultdict(list)
    for update_id, started_at, duration_ms in rows:
        if update_id in wanted:
            intervals[update_id].append((started_at, started_at + duration_ms / 1000.0))
    return {uid: _union_ms(spans) for uid, spans in intervals.items()}


@dataclass(frozen=True)
class TurnCosts:
    e2e_ms: list[float]
    self_ms: list[float]
    model_ms: list[float]
    tool_ms: list[float]
    round_trips: dict[str, list[int]]  # per kind
    rows: list[dict[str, Any]]  # one per answered turn, for a closer look (turns-*.jsonl)


def turn_costs(
    turns: Sequence[Turn], timings: Iterable[dict[str, Any]], tool_rows: Iterable[ToolRow]
) -> TurnCosts:
    answered = [t for t in turns if t.ok and t.latency_s is not None]
    models = model_time_by_marker(timings)
    tools = tool_time_by_update(tool_rows, (t.update_id for t in answered))
    e2e, own, model, tool = [], [], [], []
    trips: dict[str, list[int]] = defaultdict(list)
    rows: list[dict[str, Any]] = []
    for turn in answered:
        assert turn.latency_s is not None
        m = models.get(turn.marker)
        model_ms = m.model_ms if m else 0.0
        tool_ms = tools.get(turn.update_id, 0.0)
        e2e.append(turn.latency_s * 1000.0)
        model.append(model_ms)
        tool.append(tool_ms)
        own.append(turn.latency_s * 1000.0 - model_ms - tool_ms)
        trips[turn.kind].append(m.round_trips if m else 0)
        rows.append(
            {
                "chat": turn.chat_id,
                "index": turn.index,
                "kind": turn.kind,
                "update_id": turn.update_id,
                "sent_at": turn.sent_at,
                "e2e_ms": e2e[-1],
                "model_ms": model_ms,
                "tool_ms": tool_ms,
                "self_ms": own[-1],
                "round_trips": m.round_trips if m else 0,
            }
        )
    return TurnCosts(e2e, own, model, tool, dict(trips), rows)


def throughput(turns: Sequence[Turn]) -> dict[str, float]:
    """Answered turns per second over the phase, and over its steady middle (20–80 %)."""
    done = sorted(t.reply_at for t in turns if t.reply_at is not None and t.ok)
    sent = [t.sent_at for t in turns if t.sent_at]
    if not done or not sent:
        return {"overall": 0.0, "steady": 0.0, "duration_s": 0.0}
    start, end = min(sent), done[-1]
    duration = max(end - start, 1e-9)
    lo, hi = start + 0.2 * duration, start + 0.8 * duration
    middle = [t for t in done if lo <= t <= hi]
    return {
        "overall": len(done) / duration,
        "steady": len(middle) / max(hi - lo, 1e-9),
        "duration_s": duration,
    }
