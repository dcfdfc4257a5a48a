"""The figures of `/stats`: a period, a typed report and the chart's buckets — numbers only.

The storage layer counts; this module decides what the counts mean to a shop owner —
which period, which chart buckets (aligned to the hours and midnights of STATS_TIMEZONE),
which questions count as answered and why the others were not, what the model cost at
the configured prices, which tool names are really the model inventing tools. How the
figures read (the phone table, its Russian and English words, the PNG
chart) is the Telegram layer's business: `bot.telegram.stats_view` draws them from this report.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass, field, replace
from datetime import UTC, datetime, tzinfo

from services.chat import WITHHELD
from services.loop_types import UNAVAILABLE_CODES, StopReason
from services.outcomes import FOLLOW_UP_S
from storage.handoffs import HandoffCounts
from storage.outcomes import OutcomeFigures
from storage.stats import (
    FeedbackFigures,
    ModelFigures,
    QuestionBucket,
    StatsRepository,
    TokenFigures,
    ToolBucketCount,
    ToolFigures,
    TurnFigures,
)
from storage.voice import (
    FAILED,
    OFF,
    TOO_LONG,
    TRANSCRIBED,
    VoiceNoteRepository,
    VoiceStatusCount,
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


@dataclass(frozen=True, slots=True)
class HandoffStats:
    """Handoffs to a person in a period: how they started, how fast a person
    first answered, how many ended; `open_now` is at the time of the report."""

    by_command: int
    by_button: int
    by_model: int
    open_now: int
    closed: int
    first_reply_median_s: float | None  # of handoffs started in the period and answered

    @property
    def started(self) -> int:
        return self.by_command + self.by_button + self.by_model


def handoff_stats(counts: HandoffCounts) -> HandoffStats:
    delays = counts.first_reply_delays_s
    median: float | None = None
    if delays:
        middle = len(delays) // 2
        median = delays[middle] if len(delays) % 2 else (delays[middle - 1] + delays[middle]) / 2
    return HandoffStats(
        by_command=counts.started.get("command", 0),
        by_button=counts.started.get("button", 0),
        by_model=counts.started.get("model", 0),
        open_now=counts.open_now,
        closed=counts.closed,
        first_reply_median_s=median,
    )


# Why a question went unanswered, in the order the owner's table lists them. Keys, not
# wording (bot.telegram.stats_view.wording says them in each language).
NOT_ANSWERED_REASONS = ("unavailable", "declined", "withheld", "failure")


class StatsUsageError(ValueError):
    """The argument after /stats is not a known period."""


@dataclass(frozen=True, slots=True)
class Period:
    """A report window [since, until) in unix seconds; `since=None` = from the start."""

    key: str  # "24h" | "7d" | "30d" | "all"
    since: float | None
    until: float


@dataclass(frozen=True, slots=True)
class Prices:
    """The model's prices per 1,000,000 tokens (MODEL_PRICE_* settings)."""

    input_per_1m: float
    output_per_1m: float
    cached_input_per_1m: float | None = None  # None: cached input costs the input price
    currency: str = "USD"

    def cost(self, tokens: TokenFigures) -> float:
        cached = min(tokens.cached, tokens.prompt)
        cached_price = (
            self.input_per_1m if self.cached_input_per_1m is None else (self.cached_input_per_1m)
        )
        return (
            (tokens.prompt - cached) * self.input_per_1m
            + cached * cached_price
            + tokens.completion * self.output_per_1m
        ) / 1_000_000


@dataclass(frozen=True, slots=True)
class Questions:
    """The owner's first figures: questions asked, answered, and why not."""

    asked: int = 0
    answered: int = 0
    not_answered: dict[str, int] = field(default_factory=dict)  # NOT_ANSWERED_REASONS order
    customers: int = 0

    @property
    def not_answered_total(self) -> int:
        return sum(self.not_answered.values())


@dataclass(frozen=True, slots=True)
class Cost:
    """The model's estimated cost over the period; `amount` None when no prices are set."""

    tokens: TokenFigures
    amount: float | None
    currency: str
    uncounted_turns: int  # turns whose usage the provider did not report (not in the sum)


@dataclass(frozen=True, slots=True)
class ChartData:
    """Per time bucket: questions answered / not answered, and tool calls per tool and
    status — what the PNG chart draws. `timezone` is STATS_TIMEZONE, for the labels."""

    bucket_start: float
    bucket_s: float
    bucket_count: int
    tools: tuple[str, ...]  # panel order: most calls first
    counts: dict[tuple[str, str], tuple[int, ...]]  # (tool, status) -> calls per bucket
    answered: tuple[int, ...] = ()  # questions answered per bucket
    not_answered: tuple[int, ...] = ()
    timezone: tzinfo = UTC

    def series(self, tool: str, status: str) -> tuple[int, ...]:
        return self.counts.get((tool, status), (0,) * self.bucket_count)


@dataclass(frozen=True, slots=True)
class VoiceStats:
    """Voice and video notes received in the period.

    `received` counts every note; of those `transcribed` became a turn's text, `failed`
    could not be heard (download, transcription or nothing said),
    `too_long` were refused unheard and `off` got the text-only reply. `audio_s` is the
    length of the transcribed notes (what a per-minute price is charged on) and
    `transcription_s` the time spent waiting for transcriptions.
    """

    received: int = 0
    transcribed: int = 0
    failed: int = 0
    too_long: int = 0
    off: int = 0
    audio_s: int = 0
    transcription_s: float = 0.0

    @classmethod
    def from_counts(cls, counts: list[VoiceStatusCount]) -> VoiceStats:
        by_status: dict[str, int] = {}
        audio_s = 0
        for count in counts:
            by_status[count.status] = by_status.get(count.status, 0) + count.notes
            if count.status == TRANSCRIBED:
                audio_s += count.audio_s
        return cls(
            received=sum(c.notes for c in counts),
            transcribed=by_status.get(TRANSCRIBED, 0),
            failed=by_status.get(FAILED, 0),
            too_long=by_status.get(TOO_LONG, 0),
            off=by_status.get(OFF, 0),
            audio_s=audio_s,
            transcription_s=sum(c.transcription_s for c in counts),
        )


@dataclass(frozen=True, slots=True)
class StoppedFigures:
    """Streamed answers the customer stopped (the stop button)."""

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
    voice: VoiceStats = field(default_factory=VoiceStats)
    stopped: StoppedFigures = field(default_factory=StoppedFigures)
    feedback: FeedbackFigures = field(default_factory=FeedbackFigures)
    cost: Cost | None = None
    timezone: tzinfo = UTC  # STATS_TIMEZONE: the table's and the chart's times
    outcomes: OutcomeFigures = field(default_factory=OutcomeFigures)

    @property
    def questions(self) -> Questions:
        return questions_of(self.turns)

    @property
    def tool_calls_total(self) -> int:
        unknown = self.unknown_tools.calls if self.unknown_tools else 0
        return sum(t.calls for t in self.tools) + unknown

    @property
    def is_empty(self) -> bool:
        """Nothing the owner's view shows: no questions, tool calls, ratings or voice notes."""
        return not (
            self.tool_calls_total or self.turns.count or self.feedback.rated or self.voice.received
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

    def __init__(
        self,
        repository: StatsRepository,
        clock: Callable[[], float],
        *,
        voice: VoiceNoteRepository | None = None,
        timezone: tzinfo = UTC,
        prices: Prices | None = None,
        currency: str = "USD",
    ) -> None:
        self._repo = repository
        self._clock = clock
        self._voice = voice
        self._tz = timezone
        self._prices = prices
        self._currency = prices.currency if prices else currency

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
        voice = VoiceStats.from_counts(await self._voice_counts(since, until))
        # "all" starts at the first turn or tool call; the chart's buckets start there too
        start = since if since is not None else await self._repo.first_activity()
        base = StatsReport(
            period=period,
            since=start,
            until=until,
            turns=turns,
            models=await self._repo.model_figures(since, until),
            resets=await self._repo.resets(since, until),
            feedback=await self._repo.feedback_figures(since, until),
            cost=await self._cost(turns, since, until),
            timezone=self._tz,
            voice=voice,
            stopped=StoppedFigures(*await self._repo.stopped_turns(since, until)),
            outcomes=await self._repo.outcome_figures(since, until, FOLLOW_UP_S),
        )
        if start is None or start >= until:
            return base
        bucket_s = choose_bucket(until - start)
        bucket_start = aligned_start(start, bucket_s, until, self._tz)
        usage = await self._repo.tool_usage(
            since, until, bucket_s=bucket_s, bucket_start=bucket_start
        )
        questions = await self._repo.question_buckets(
            since, until, bucket_s=bucket_s, bucket_start=bucket_start
        )
        known, invented = _split_invented_tools(usage.tools)
        known.sort(key=lambda t: (-t.calls, t.tool_name))
        invented_names = {t.tool_name for t in invented}
        chart = _chart_data(usage.buckets, known, invented_names, bucket_start, bucket_s, until)
        return replace(
            base,
            tools=tuple(known),
            unknown_tools=_merge_unknown(invented),
            unknown_tool_names=len(invented),
            chart=_with_questions(chart, questions, self._tz),
        )

    async def _voice_counts(self, since: float | None, until: float) -> list[VoiceStatusCount]:
        return [] if self._voice is None else await self._voice.status_counts(since, until)

    async def _cost(self, turns: TurnFigures, since: float | None, until: float) -> Cost:
        summaries = await self._repo.summary_tokens(since, until)
        tokens = TokenFigures(
            prompt=turns.prompt_tokens + summaries.prompt,
            completion=turns.completion_tokens + summaries.completion,
            cached=turns.cached_tokens + summaries.cached,
        )
        amount = self._prices.cost(tokens) if self._prices else None
        return Cost(tokens, amount, self._currency, turns.usage_unknown)


def questions_of(turns: TurnFigures) -> Questions:
    """Answered = the customer got the model's answer (complete or cut short); a refusal,
    an answer withheld by the output guard or a failed turn is a question not answered."""
    by_stop = turns.answered_by_stop_reason
    declined = by_stop.get(StopReason.REFUSED.value, 0) + by_stop.get(WITHHELD, 0)
    reasons = dict.fromkeys(NOT_ANSWERED_REASONS, 0)
    reasons["declined"] = by_stop.get(StopReason.REFUSED.value, 0)
    # the output guard held the model's answer back: its own line, so the owner sees why
    reasons["withheld"] = by_stop.get(WITHHELD, 0)
    for code, n in turns.failed_by_error.items():
        reasons["unavailable" if code in UNAVAILABLE_CODES else "failure"] += n
    return Questions(
        asked=turns.count,
        answered=turns.answered - declined,
        not_answered={k: n for k, n in reasons.items() if n},
        customers=turns.users,
    )


def aligned_start(start: float, bucket_s: float, until: float, tz: tzinfo) -> float:
    """The first bucket's start: bars begin on whole hours / local midnights of `tz`
    (its offset at `until`; a DST change inside the period shifts bars by that hour)."""
    offset = datetime.fromtimestamp(until, tz).utcoffset()
    shift = offset.total_seconds() if offset is not None else 0.0
    return math.floor((start + shift) / bucket_s) * bucket_s - shift


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


def _with_questions(chart: ChartData, buckets: list[QuestionBucket], tz: tzinfo) -> ChartData:
    n = (
        max(chart.bucket_count, *(b.bucket + 1 for b in buckets))
        if buckets
        else (chart.bucket_count)
    )
    answered = [0] * n
    missed = [0] * n
    for b in buckets:
        answered[b.bucket] += b.turns - b.not_answered
        missed[b.bucket] += b.not_answered
    counts = {k: v + (0,) * (n - len(v)) for k, v in chart.counts.items()}
    return ChartData(
        bucket_start=chart.bucket_start,
        bucket_s=chart.bucket_s,
        bucket_count=n,
        tools=chart.tools,
        counts=counts,
        answered=tuple(answered),
        not_answered=tuple(missed),
        timezone=tz,
    )


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
    "NOT_ANSWERED_REASONS",
    "PERIOD_SECONDS",
    "UNKNOWN_TOOLS",
    "ChartData",
    "Cost",
    "Period",
    "Prices",
    "Questions",
    "StatsReport",
    "StatsService",
    "StatsUsageError",
    "VoiceStats",
    "aligned_start",
    "choose_bucket",
    "questions_of",
]
