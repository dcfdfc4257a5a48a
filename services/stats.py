"""What an admin sees with `/stats`: a period, a typed report and a phone-sized table.

The storage layer counts; this module decides what the counts mean to a shop owner —
which period, which chart buckets, which tool names are really the model inventing
tools — and how the figures read on a phone: a monospace table about 34 characters
wide, in Russian or English, split under Telegram's 4096-character limit. The text is
plain; the Telegram layer wraps it in a monospace block.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import UTC, datetime

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
TABLE_WIDTH = 34  # characters that fit a phone screen in a monospace block
MESSAGE_LIMIT = 4000  # Telegram allows 4096; a margin for the caller's wrapping
MAX_BARS = 31
# Chart bucket widths to choose from, smallest first: the first that gives <= MAX_BARS.
_BUCKET_CHOICES = tuple(
    h * 3600.0 for h in (1, 2, 3, 6, 12, 24, 48, 72, 7 * 24, 14 * 24, 30 * 24, 91 * 24, 365 * 24)
)
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
class StatsReport:
    """Every figure of one `/stats` answer; the table and the chart are drawn from it."""

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

    def usage_hint(self, lang: str) -> str:
        return _words(lang).usage

    def chart_caption(self, report: StatsReport, lang: str) -> str:
        w = _words(lang)
        return w.chart_caption.format(
            period=w.periods[report.period.key], calls=_int(report.tool_calls_total, lang)
        )

    def render_table(self, report: StatsReport, lang: str) -> list[str]:
        """The report as plain monospace text, split into messages under the limit."""
        w = _words(lang)
        header = [f"/stats · {w.periods[report.period.key]}", _range_line(report)]
        if report.is_empty:
            return ["\n".join([*header, "", w.no_data])]
        blocks: list[list[str]] = [header]
        if report.tool_calls_total:
            blocks.append([_kv(w.tool_calls, _int(report.tool_calls_total, lang), indent=0)])
            for tool in report.tools:
                blocks.append(_tool_block(tool, tool.tool_name, w, lang))
            if report.unknown_tools:
                title = w.unknown_tools.format(n=report.unknown_tool_names)
                blocks.append(_tool_block(report.unknown_tools, title, w, lang))
        else:
            blocks.append([_kv(w.tool_calls, "0", indent=0)])
        blocks.append(_turn_block(report, w, lang))
        return _pack(blocks, MESSAGE_LIMIT)


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


# --- wording -----------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class _Words:
    periods: dict[str, str]
    no_data: str
    usage: str
    chart_caption: str  # {period} {calls}
    tool_calls: str
    calls: str
    success: str
    business: str
    rejected: str
    timeouts: str
    technical: str
    duration: str
    unknown_tools: str  # {n}
    turns_title: str
    turns: str
    chats_users: str
    answered: str
    failed: str
    steps: str
    steps_value: str  # {mean} {max}
    tools_per_turn: str
    latency: str
    prompt_tokens: str
    completion_tokens: str
    usage_unknown: str
    usage_unknown_value: str  # {n}
    fallback: str
    summaries: str
    summaries_value: str  # {ok} {failed}
    resets: str
    ms: str
    s: str
    stop_reasons: dict[str, str]


_EN = _Words(
    periods={"24h": "last 24 hours", "7d": "last 7 days", "30d": "last 30 days", "all": "all time"},
    no_data="No data for this period yet.",
    usage="Usage: /stats [24h|7d|30d|all] (default 24h)",
    chart_caption="Tool calls by status, {period}: {calls}",
    tool_calls="TOOL CALLS",
    calls="calls",
    success="success",
    business="business errors",
    rejected="rejected",
    timeouts="timeouts",
    technical="technical errors",
    duration="p50 / p95",
    unknown_tools="unknown tool names: {n}",
    turns_title="TURNS",
    turns="turns",
    chats_users="chats / users",
    answered="answered",
    failed="failed",
    steps="model steps",
    steps_value="{mean} avg, max {max}",
    tools_per_turn="tool calls / turn",
    latency="latency p50/p95",
    prompt_tokens="prompt tokens",
    completion_tokens="completion tokens",
    usage_unknown="usage unknown",
    usage_unknown_value="{n} turns",
    fallback="fallback answers",
    summaries="summaries",
    summaries_value="{ok} ok, {failed} failed",
    resets="/new resets",
    ms="ms",
    s="s",
    stop_reasons={},
)

_RU = _Words(
    periods={"24h": "за 24 часа", "7d": "за 7 дней", "30d": "за 30 дней", "all": "за всё время"},
    no_data="Пока нет данных за этот период.",
    usage="Использование: /stats [24h|7d|30d|all] (по умолчанию 24h)",
    chart_caption="Вызовы инструментов по статусам {period}: {calls}",
    tool_calls="ВЫЗОВЫ ИНСТРУМЕНТОВ",
    calls="вызовов",
    success="успешно",
    business="бизнес-ошибки",
    rejected="отклонено",
    timeouts="таймауты",
    technical="тех. сбои",
    duration="p50 / p95",
    unknown_tools="неизвестные названия: {n}",
    turns_title="ХОДЫ ДИАЛОГА",
    turns="ходов",
    chats_users="чатов / польз.",
    answered="с ответом",
    failed="сбои",
    steps="шаги модели",
    steps_value="{mean} ср., макс {max}",
    tools_per_turn="инструм. на ход",
    latency="время p50/p95",
    prompt_tokens="токены запроса",
    completion_tokens="токены ответа",
    usage_unknown="токены неизвестны",
    usage_unknown_value="{n} ход.",
    fallback="ответы резервной",
    summaries="сводки",
    summaries_value="{ok} ок, {failed} сбой",
    resets="сбросы /new",
    ms="мс",
    s="с",
    stop_reasons={"completed": "завершён", "truncated": "обрезан", "refused": "отказ"},
)


def _words(lang: str) -> _Words:
    return _RU if lang == "ru" else _EN


# --- formatting --------------------------------------------------------------------------


def _int(value: int, lang: str) -> str:
    text = f"{value:,}"
    return text.replace(",", " ") if lang == "ru" else text


def _dec(value: float, lang: str, digits: int = 2) -> str:
    text = f"{value:.{digits}f}"
    return text.replace(".", ",") if lang == "ru" else text


def _share(part: int, whole: int, lang: str) -> str:
    if whole == 0:
        return ""
    pct = 100.0 * part / whole
    if part == whole or pct == 0:
        return f"{round(pct)}%"
    # never show 100% or 0% for a share that is not complete or empty
    return f"{_dec(min(max(pct, 0.1), 99.9), lang, 1)}%"


def _duration_pair(p50: float | None, p95: float | None, w: _Words, lang: str) -> str:
    """`34 / 133 ms`, `2.0 / 4.6 s`, or `850 ms / 1.2 s` when the units differ."""
    if p50 is None or p95 is None:
        return "—"

    def one(value: float) -> tuple[str, str]:
        if value < 1000:
            return str(round(value)), w.ms
        return _dec(value / 1000, lang, 1), w.s

    (a, unit_a), (b, unit_b) = one(p50), one(p95)
    if unit_a == unit_b:
        return f"{a} / {b} {unit_a}"
    return f"{a} {unit_a} / {b} {unit_b}"


def _kv(label: str, value: str, indent: int = 1) -> str:
    """`label ... value` right-aligned to the table width; the value wins if space is short."""
    left = " " * indent + label
    gap = TABLE_WIDTH - len(left) - len(value)
    if gap >= 1:
        return left + " " * gap + value
    return f"{left} {value}"


def _clip(text: str) -> str:
    return text if len(text) <= TABLE_WIDTH else text[: TABLE_WIDTH - 1] + "…"


def _range_line(report: StatsReport) -> str:
    until = datetime.fromtimestamp(report.until, UTC)
    if report.since is None:
        return f"… – {until:%d.%m %H:%M} UTC"
    since = datetime.fromtimestamp(report.since, UTC)
    same_year = since.year == until.year
    fmt = "%d.%m %H:%M" if same_year else "%d.%m.%y %H:%M"
    return f"{since.strftime(fmt)} – {until.strftime(fmt)} UTC"


def _tool_block(tool: ToolFigures, title: str, w: _Words, lang: str) -> list[str]:
    lines = [_clip(title), _kv(w.calls, _int(tool.calls, lang))]
    if tool.tool_name != UNKNOWN_TOOLS:
        share = _share(tool.success, tool.calls, lang)
        lines.append(_kv(w.success, f"{_int(tool.success, lang)}  {share}".rstrip()))
        lines.append(_kv(w.business, _int(tool.business_error_total, lang)))
        lines.extend(_kv(code, _int(n, lang), indent=3) for code, n in tool.business_errors.items())
    lines.append(_kv(w.rejected, _int(tool.rejected_total, lang)))
    if tool.tool_name != UNKNOWN_TOOLS:
        lines.extend(_kv(code, _int(n, lang), indent=3) for code, n in tool.rejected.items())
        lines.append(_kv(w.timeouts, _int(tool.timeouts, lang)))
        lines.append(_kv(w.technical, _int(tool.technical_errors, lang)))
        lines.append(_kv(w.duration, _duration_pair(tool.p50_ms, tool.p95_ms, w, lang)))
    return lines


def _turn_block(report: StatsReport, w: _Words, lang: str) -> list[str]:
    t = report.turns
    m = report.models
    lines = [_kv(w.turns_title, _int(t.count, lang), indent=0)]
    if t.count:
        lines.append(_kv(w.chats_users, f"{_int(t.chats, lang)} / {_int(t.users, lang)}"))
        share = _share(t.answered, t.count, lang)
        lines.append(_kv(w.answered, f"{_int(t.answered, lang)}  {share}".rstrip()))
        for reason, n in t.answered_by_stop_reason.items():
            lines.append(_kv(w.stop_reasons.get(reason, reason), _int(n, lang), indent=3))
        lines.append(_kv(w.failed, _int(t.failed, lang)))
        lines.extend(_kv(code, _int(n, lang), indent=3) for code, n in t.failed_by_error.items())
        steps = report.model_steps_mean or 0.0
        lines.append(
            _kv(w.steps, w.steps_value.format(mean=_dec(steps, lang), max=t.model_steps_max or 0))
        )
        lines.append(_kv(w.tools_per_turn, _dec(report.tool_calls_per_turn or 0.0, lang)))
        lines.append(_kv(w.latency, _duration_pair(t.p50_ms, t.p95_ms, w, lang)))
        lines.append(_kv(w.prompt_tokens, _int(t.prompt_tokens, lang)))
        lines.append(_kv(w.completion_tokens, _int(t.completion_tokens, lang)))
        lines.append(
            _kv(w.usage_unknown, w.usage_unknown_value.format(n=_int(t.usage_unknown, lang)))
        )
    lines.append(_kv(w.fallback, _int(m.fallback_answers, lang)))
    lines.append(
        _kv(
            w.summaries,
            w.summaries_value.format(
                ok=_int(m.summaries_ok, lang), failed=_int(m.summaries_failed, lang)
            ),
        )
    )
    lines.append(_kv(w.resets, _int(report.resets, lang)))
    return lines


def _pack(blocks: list[list[str]], limit: int) -> list[str]:
    """Join blocks with blank lines into messages under `limit`, never splitting a line."""
    chunks: list[str] = []
    current = ""
    for block in blocks:
        text = "\n".join(block)
        candidate = f"{current}\n\n{text}" if current else text
        if len(candidate) <= limit:
            current = candidate
            continue
        if current:
            chunks.append(current)
            current = ""
        for line in block:
            candidate = f"{current}\n{line}" if current else line
            if len(candidate) > limit and current:
                chunks.append(current)
                candidate = line
            current = candidate[:limit]
    if current:
        chunks.append(current)
    return chunks


__all__ = [
    "DEFAULT_PERIOD",
    "PERIOD_SECONDS",
    "ChartData",
    "Period",
    "StatsReport",
    "StatsService",
    "StatsUsageError",
    "choose_bucket",
]
