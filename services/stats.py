"""The figures of `/stats`: a period, a typed report and the chart's buckets — numbers only.

The storage layer counts; this module decides what the counts mean to a shop owner —
which period, which chart buckets, which tool names are really the model inventing
tools. How the figures read (the phone table, its Russian and English words, the PNG
chart) is the Telegram layer's business: `bot.stats_view` draws them from this report.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass, field, replace

from storage.stats import (
    ModelFigures,
    StatsRepository,
    ToolBucketCount,
    ToolFigures,
    TurnFigures,
)

PERIOD_SECONDS: dict[str, float | None] = {
    "24h": 24 * 3600.0,
    "7d": 7 * 86400.0,
    "30d": 30 * 86400.0,
    "all": None,
}
DEFAULT_PERIOD = "24h"
MAX_BARS = 31
# Chart bucket widths to choose from, smallest first: the first that gives <= MAX_BARS.
_BUCKET_CHOICES = tuple(
    h * 3600.0 for h in (1, 2, 3, 6, 12, 24, 48, 72, 7 * 24, 14 * 24, 30 * 24, 91 * 24, 365 * 24)
)
# The key the model's invented tool names are merged under (in `ChartData.tools` and
# `StatsReport.unknown_tools`). It is a key, not wording: it can never be a registered
# tool's name (those match ^[a-z][a-z0-9_]{0,63}$); the chart shows its own label for it.
UNKNOWN_TOOLS = "(unknown tools)"


class StatsUsageError(ValueError):
    """The argument after /stats is not a known period."""


@dataclass(frozen=True, slots=True)
class Period:
    """A report window [since, until) in unix seconds; `since=None` = from the start."""

    key: str  # "24h" | "7d" | "30d" | "all"
    since: float | None
    until: float


@dataclass(frozen=True, slots=True)
class ChartData:
    """Tool calls per time bucket, per tool and status — what the PNG chart draws."""

    bucket_start: float
    bucket_s: float
    bucket_count: int
    tools: tuple[str, ...]  # panel order: most calls first
    counts: dict[tuple[str, str], tuple[int, ...]]  # (tool, status) -> calls per bucket

    def series(self, tool: str, status: str) -> tuple[int, ...]:
        return self.counts.get((tool, status), (0,) * self.bucket_count)


@dataclass(frozen=True, slots=True)
class StoppedFigures:
    """Streamed answers the customer stopped (the stop button), issue 17's numbers."""

    stopped: int = 0
    with_text: int = 0  # the partial answer was sent; the others got the "stopped" note


@dataclass(frozen=True, slots=True)
class StatsReport:
    """Every figure of one `/stats` answer; the bot draws the table and the chart from it."""

    period: Period
    since: float | None  # the period's start, or the first activity for "all"
    until: float
    tools: tuple[ToolFigures, ...] = ()  # most calls first
    unknown_tools: ToolFigures | None = None  # names the model invented, merged
    unknown_tool_names: int = 0
    turns: TurnFigures = field(default_factory=TurnFigures)
    models: ModelFigures = field(default_factory=ModelFigures)
    resets: int = 0
    chart: ChartData | None = None
    stopped: StoppedFigures = field(default_factory=StoppedFigures)

    @property
    def tool_calls_total(self) -> int:
        unknown = self.unknown_tools.calls if self.unknown_tools else 0
        return sum(t.calls for t in self.tools) + unknown

    @property
    def is_empty(self) -> bool:
        models = self.models
        return not (
            self.tool_calls_total
            or self.turns.count
            or self.resets
            or models.fallback_answers
            or models.summaries_ok
            or models.summaries_failed
        )

    @property
    def model_steps_mean(self) -> float | None:
        n = self.turns.count
        return self.turns.model_steps_total / n if n else None

    @property
    def tool_calls_per_turn(self) -> float | None:
        n = self.turns.count
        return self.turns.tool_calls_total / n if n else None


class StatsService:
    """Builds `/stats` reports from the repository; `clock()` returns unix seconds."""

    def __init__(self, repository: StatsRepository, clock: Callable[[], float]) -> None:
        self._repo = repository
        self._clock = clock

    def parse_period(self, arg: str | None) -> Period:
        """`24h` (default), `7d`, `30d` or `all`, ending now; anything else is a usage error."""
        key = (arg or "").strip().lower() or DEFAULT_PERIOD
        if key not in PERIOD_SECONDS:
            raise StatsUsageError(f"unknown period {arg!r}")
        until = self._clock()
        length = PERIOD_SECONDS[key]
        return Period(key=key, since=None if length is None else until - length, until=until)

    async def report(self, period: Period) -> StatsReport:
        since, until = period.since, period.until
        turns = await self._repo.turn_figures(since, until)
        models = await self._repo.model_figures(since, until)
        resets = await self._repo.resets(since, until)
        report = await self._report(period, turns, models, resets)
        stopped = StoppedFigures(*await self._repo.stopped_turns(since, until))
        return replace(report, stopped=stopped)

    async def _report(
        self, period: Period, turns: TurnFigures, models: ModelFigures, resets: int
    ) -> StatsReport:
        since, until = period.since, period.until
        # "all" starts at the first turn or tool call; the chart's buckets start there too
        start = since if since is not None else await self._repo.first_activity()
        if start is None or start >= until:
            return StatsReport(
                period=period, since=start, until=until, turns=turns, models=models, resets=resets
            )
        bucket_s = choose_bucket(until - start)
        # buckets end exactly at `until`, so the latest bar is whole; only the first, which
        # begins before the first activity of "all", may be partly empty
        bucket_start = until - math.ceil((until - start) / bucket_s) * bucket_s
        usage = await self._repo.tool_usage(
            since, until, bucket_s=bucket_s, bucket_start=bucket_start
        )
        known, invented = _split_invented_tools(usage.tools)
        known.sort(key=lambda t: (-t.calls, t.tool_name))
        invented_names = {t.tool_name for t in invented}
        return StatsReport(
            period=period,
            since=start,
            until=until,
            tools=tuple(known),
            unknown_tools=_merge_unknown(invented),
            unknown_tool_names=len(invented),
            turns=turns,
            models=models,
            resets=resets,
            chart=_chart_data(usage.buckets, known, invented_names, bucket_start, bucket_s, until),
        )


def choose_bucket(span_s: float) -> float:
    """The narrowest bucket that draws the span in at most MAX_BARS bars."""
    for width in _BUCKET_CHOICES:
        if math.ceil(span_s / width) <= MAX_BARS:
            return width
    return math.ceil(span_s / MAX_BARS)


def _split_invented_tools(
    tools: list[ToolFigures],
) -> tuple[list[ToolFigures], list[ToolFigures]]:
    """Names whose every call was rejected as `unknown_tool` are the model's inventions."""
    known: list[ToolFigures] = []
    invented: list[ToolFigures] = []
    for tool in tools:
        only_unknown = tool.calls > 0 and tool.rejected.get("unknown_tool", 0) == tool.calls
        (invented if only_unknown else known).append(tool)
    return known, invented


def _merge_unknown(tools: list[ToolFigures]) -> ToolFigures | None:
    if not tools:
        return None
    calls = sum(t.calls for t in tools)
    return ToolFigures(
        tool_name=UNKNOWN_TOOLS,
        calls=calls,
        success=0,
        business_errors={},
        rejected={"unknown_tool": calls},
        timeouts=0,
        technical_errors=0,
        p50_ms=None,
        p95_ms=None,
    )


def _chart_data(
    buckets: list[ToolBucketCount],
    known: list[ToolFigures],
    invented: set[str],
    start: float,
    bucket_s: float,
    until: float,
) -> ChartData:
    # the SQL made the buckets; float rounding may give one more than the arithmetic here
    count = max(1, math.ceil((until - start) / bucket_s), *(b.bucket + 1 for b in buckets))
    series: dict[tuple[str, str], list[int]] = {}
    for b in buckets:
        tool = UNKNOWN_TOOLS if b.tool_name in invented else b.tool_name
        series.setdefault((tool, b.status), [0] * count)[b.bucket] += b.calls
    names = [t.tool_name for t in known] + ([UNKNOWN_TOOLS] if invented else [])
    return ChartData(
        bucket_start=start,
        bucket_s=bucket_s,
        bucket_count=count,
        tools=tuple(names),
        counts={key: tuple(values) for key, values in series.items()},
    )


__all__ = [
    "DEFAULT_PERIOD",
    "PERIOD_SECONDS",
    "UNKNOWN_TOOLS",
    "ChartData",
    "Period",
    "StatsReport",
    "StatsService",
    "StatsUsageError",
    "choose_bucket",
]
