"""The `/stats` report as a phone-sized monospace table, split into Telegram messages.

The owner's view first: questions answered and not (with the reasons), satisfaction,
any extra sections the bot shows (e.g. handoffs, when configured), the model's cost,
then the tools for the curious. About 34 characters wide so it fits a phone screen in a
monospace block, in the admin's language, times in STATS_TIMEZONE, split under
Telegram's 4096-character limit without cutting a block in half. The text is plain; the
admin router wraps each message in `<pre>`.

Extra sections: `render_table(..., sections=[...])` takes callables that return a block
of lines for a language (an empty list shows nothing), so a feature adds its numbers
without this module knowing it.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from datetime import datetime

from bot.telegram.stats_view.resolution import resolution_block
from bot.telegram.stats_view.streaming import stopped_block
from bot.telegram.stats_view.voice import voice_rows
from bot.telegram.stats_view.wording import (
    StatsWords,
    format_decimal,
    format_int,
    format_money,
    plural,
    tool_title,
    words_for,
)
from bot.telegram.texts import Language
from services.stats import Cost, StatsReport
from storage.stats import FeedbackFigures, ToolFigures
from tools.base import ErrorCode

TABLE_WIDTH = 34  # characters that fit a phone screen in a monospace block
MESSAGE_LIMIT = 4000  # Telegram allows 4096; a margin for the caller's wrapping

TableSection = Callable[[Language], list[str]]


def render_table(
    report: StatsReport, language: Language, *, sections: Sequence[TableSection] = ()
) -> list[str]:
    """The report as plain monospace text, split into messages under the limit."""
    w = words_for(language)
    header = [f"/stats · {w.periods[report.period.key]}", _range_line(report)]
    if report.is_empty:
        return ["\n".join([*header, "", w.no_data])]
    blocks: list[list[str]] = [
        header,
        questions_block(report, w, language) + stopped_block(report, language),
        satisfaction_block(report.feedback, report.questions.answered, w, language),
    ]
    blocks.extend(block for block in (section(language) for section in sections) if block)
    if voice := [kv(*row) for row in voice_rows(report.voice, language)]:
        blocks.append(voice)
    if report.cost is not None:
        resolved = report.outcomes.resolved if _outcomes_recorded(report) else None
        blocks.append(cost_block(report.cost, w, language, resolved=resolved))
    if report.tool_calls_total:
        total = format_int(report.tool_calls_total, language)
        blocks.append([w.tools, kv(w.tool_calls_total, total)])
        blocks.extend(
            _tool_block(tool, tool_title(tool.tool_name, language), w, language)
            for tool in report.tools
        )
        if report.unknown_tools:
            title = w.invented_tools.format(n=report.unknown_tool_names)
            calls = format_int(report.unknown_tools.calls, language)
            blocks.append([kv(_clip(title), calls, indent=0)])
    return _pack(blocks, MESSAGE_LIMIT)


def share(part: int, whole: int, language: Language) -> str:
    """`93%`, or one decimal near the ends: never 100% or 0% for a share that is not."""
    if whole == 0:
        return ""
    pct = 100.0 * part / whole
    if part == whole or pct == 0:
        return f"{round(pct)}%"
    if 1 <= pct <= 99:
        return f"{round(pct)}%"
    return f"{format_decimal(min(max(pct, 0.1), 99.9), language, 1)}%"


def kv(label: str, value: str, indent: int = 1) -> str:
    """`label ... value` right-aligned to the table width; the value wins if space is short."""
    left = " " * indent + label
    gap = TABLE_WIDTH - len(left) - len(value)
    if gap >= 1:
        return left + " " * gap + value
    return f"{left} {value}"


def questions_block(report: StatsReport, w: StatsWords, lang: Language) -> list[str]:
    q = report.questions
    lines = [kv(w.questions, format_int(q.asked, lang), indent=0)]
    if not q.asked:
        return lines
    lines.append(
        kv(w.answered, f"{format_int(q.answered, lang)}  {share(q.answered, q.asked, lang)}")
    )
    lines.extend(resolution_block(report, lang))
    lines.append(kv(w.not_answered, format_int(q.not_answered_total, lang)))
    for reason, n in q.not_answered.items():
        lines.append(kv(w.reasons[reason], format_int(n, lang), indent=3))
    lines.append(kv(w.customers, format_int(q.customers, lang)))
    t = report.turns
    if t.p50_ms is not None and t.p95_ms is not None:
        lines.append(kv(w.reply_typical, _duration(t.p50_ms, w, lang)))
        lines.append(kv(w.reply_slow, _duration(t.p95_ms, w, lang)))
    return lines


def satisfaction_block(
    feedback: FeedbackFigures, answered: int, w: StatsWords, lang: Language
) -> list[str]:
    if not feedback.rated:
        return [kv(w.satisfaction, "", indent=0).rstrip(), f" {w.no_ratings}"]
    return [
        kv(w.satisfaction, share(feedback.up, feedback.rated, lang), indent=0),
        kv(w.helpful, format_int(feedback.up, lang)),
        kv(w.not_helpful, format_int(feedback.down, lang)),
        kv(
            w.rated,
            w.rated_value.format(
                rated=format_int(feedback.rated, lang), answered=format_int(answered, lang)
            ),
        ),
    ]


def _outcomes_recorded(report: StatsReport) -> bool:
    """Whether the period's questions have outcomes (turns before they were recorded do not)."""
    return any(n for key, n in report.outcomes.by_outcome.items() if key)


def cost_block(
    cost: Cost, w: StatsWords, lang: Language, *, resolved: int | None = None
) -> list[str]:
    """The model's cost and tokens; with prices and recorded outcomes, the cost per
    resolved question (the whole cost, summaries and unresolved questions included,
    over the questions resolved: what one resolution really costs) with how it is counted."""
    if cost.amount is None:
        value = w.no_prices
    else:
        value = w.cost_value.format(amount=format_money(cost.amount, lang), currency=cost.currency)
    lines = [kv(w.cost, value, indent=0)]
    if cost.amount is not None and resolved is not None:
        each = (
            w.cost_value.format(
                amount=format_money(cost.amount / resolved, lang), currency=cost.currency
            )
            if resolved
            else "—"
        )
        lines.append(kv(w.per_resolved, each))
        lines.append(
            " " * 3 + w.per_resolved_definition.format(resolved=format_int(resolved, lang))
        )
    lines.append(kv(w.input_tokens, format_int(cost.tokens.prompt, lang)))
    if cost.tokens.cached:
        lines.append(kv(w.cached_tokens, format_int(cost.tokens.cached, lang), indent=3))
    lines.append(kv(w.output_tokens, format_int(cost.tokens.completion, lang)))
    if cost.uncounted_turns:
        lines.append(kv(w.uncounted, plural(cost.uncounted_turns, w.questions_count, lang)))
    return lines


def _duration(value_ms: float, w: StatsWords, lang: Language) -> str:
    if value_ms < 1000:
        return f"{round(value_ms)} {w.ms}"
    return f"{format_decimal(value_ms / 1000, lang, 1)} {w.s}"


def _duration_pair(p50: float | None, p95: float | None, w: StatsWords, lang: Language) -> str:
    """`34 / 133 ms`, `2.0 / 4.6 s`, or `850 ms / 1.2 s` when the units differ."""
    if p50 is None or p95 is None:
        return "—"
    a, b = _duration(p50, w, lang).split(" "), _duration(p95, w, lang).split(" ")
    if a[1] == b[1]:
        return f"{a[0]} / {b[0]} {a[1]}"
    return f"{' '.join(a)} / {' '.join(b)}"


def _clip(text: str) -> str:
    return text if len(text) <= TABLE_WIDTH else text[: TABLE_WIDTH - 1] + "…"


def _range_line(report: StatsReport) -> str:
    tz = report.timezone
    until = datetime.fromtimestamp(report.until, tz)
    zone = until.tzname() or "UTC"
    if report.since is None:
        return f"… – {until:%d.%m %H:%M} {zone}"
    since = datetime.fromtimestamp(report.since, tz)
    fmt = "%d.%m %H:%M" if since.year == until.year else "%d.%m.%y %H:%M"
    return f"{since.strftime(fmt)} – {until.strftime(fmt)} {zone}"


def _tool_block(tool: ToolFigures, title: str, w: StatsWords, lang: Language) -> list[str]:
    failed = tool.rejected_total + tool.timeouts + tool.technical_errors
    # the shop's own system not answering (a live SHOP_BACKEND) is not the shop saying no
    unavailable = tool.business_errors.get(ErrorCode.UNAVAILABLE, 0)
    lines = [
        _clip(title),
        kv(w.calls, format_int(tool.calls, lang)),
        kv(w.done, f"{format_int(tool.success, lang)}  {share(tool.success, tool.calls, lang)}"),
        kv(w.said_no, format_int(tool.business_error_total - unavailable, lang)),
    ]
    if unavailable:
        lines.append(kv(w.shop_unavailable, format_int(unavailable, lang)))
    lines.append(kv(w.failed, format_int(failed, lang)))
    lines.append(kv(w.tool_time, _duration_pair(tool.p50_ms, tool.p95_ms, w, lang)))
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
