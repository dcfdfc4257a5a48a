"""The `/stats` report as a phone-sized monospace table, split into Telegram messages.

About 34 characters wide so it fits a phone screen in a monospace block, in the admin's
language, split under Telegram's 4096-character limit without cutting a tool's block in
half. The text is plain; the admin router wraps each message in `<pre>`.
"""

from __future__ import annotations

from datetime import UTC, datetime

from bot.stats_view.streaming import stopped_block
from bot.stats_view.wording import StatsWords, format_decimal, format_int, words_for
from bot.texts import Language
from services.stats import UNKNOWN_TOOLS, StatsReport
from storage.stats import ToolFigures

TABLE_WIDTH = 34  # characters that fit a phone screen in a monospace block
MESSAGE_LIMIT = 4000  # Telegram allows 4096; a margin for the caller's wrapping


def render_table(report: StatsReport, language: Language) -> list[str]:
    """The report as plain monospace text, split into messages under the limit."""
    w = words_for(language)
    header = [f"/stats · {w.periods[report.period.key]}", _range_line(report)]
    if report.is_empty:
        return ["\n".join([*header, "", w.no_data])]
    blocks: list[list[str]] = [header]
    if report.tool_calls_total:
        blocks.append([_kv(w.tool_calls, format_int(report.tool_calls_total, language), indent=0)])
        for tool in report.tools:
            blocks.append(_tool_block(tool, tool.tool_name, w, language))
        if report.unknown_tools:
            title = w.unknown_tools.format(n=report.unknown_tool_names)
            blocks.append(_tool_block(report.unknown_tools, title, w, language))
    else:
        blocks.append([_kv(w.tool_calls, "0", indent=0)])
    blocks.append(_turn_block(report, w, language) + stopped_block(report, language))
    return _pack(blocks, MESSAGE_LIMIT)


def _share(part: int, whole: int, language: Language) -> str:
    if whole == 0:
        return ""
    pct = 100.0 * part / whole
    if part == whole or pct == 0:
        return f"{round(pct)}%"
    # never show 100% or 0% for a share that is not complete or empty
    return f"{format_decimal(min(max(pct, 0.1), 99.9), language, 1)}%"


def _duration_pair(p50: float | None, p95: float | None, w: StatsWords, lang: Language) -> str:
    """`34 / 133 ms`, `2.0 / 4.6 s`, or `850 ms / 1.2 s` when the units differ."""
    if p50 is None or p95 is None:
        return "—"

    def one(value: float) -> tuple[str, str]:
        if value < 1000:
            return str(round(value)), w.ms
        return format_decimal(value / 1000, lang, 1), w.s

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


def _tool_block(tool: ToolFigures, title: str, w: StatsWords, lang: Language) -> list[str]:
    def count(n: int) -> str:
        return format_int(n, lang)

    lines = [_clip(title), _kv(w.calls, count(tool.calls))]
    if tool.tool_name != UNKNOWN_TOOLS:
        share = _share(tool.success, tool.calls, lang)
        lines.append(_kv(w.success, f"{count(tool.success)}  {share}".rstrip()))
        lines.append(_kv(w.business, count(tool.business_error_total)))
        lines.extend(_kv(code, count(n), indent=3) for code, n in tool.business_errors.items())
    lines.append(_kv(w.rejected, count(tool.rejected_total)))
    if tool.tool_name != UNKNOWN_TOOLS:
        lines.extend(_kv(code, count(n), indent=3) for code, n in tool.rejected.items())
        lines.append(_kv(w.timeouts, count(tool.timeouts)))
        lines.append(_kv(w.technical, count(tool.technical_errors)))
        lines.append(_kv(w.duration, _duration_pair(tool.p50_ms, tool.p95_ms, w, lang)))
    return lines


def _turn_block(report: StatsReport, w: StatsWords, lang: Language) -> list[str]:
    t = report.turns
    m = report.models

    def count(n: int) -> str:
        return format_int(n, lang)

    lines = [_kv(w.turns_title, count(t.count), indent=0)]
    if t.count:
        lines.append(_kv(w.chats_users, f"{count(t.chats)} / {count(t.users)}"))
        share = _share(t.answered, t.count, lang)
        lines.append(_kv(w.answered, f"{count(t.answered)}  {share}".rstrip()))
        for reason, n in t.answered_by_stop_reason.items():
            lines.append(_kv(w.stop_reasons.get(reason, reason), count(n), indent=3))
        lines.append(_kv(w.failed, count(t.failed)))
        lines.extend(_kv(code, count(n), indent=3) for code, n in t.failed_by_error.items())
        steps = report.model_steps_mean or 0.0
        mean = format_decimal(steps, lang)
        lines.append(_kv(w.steps, w.steps_value.format(mean=mean, max=t.model_steps_max or 0)))
        lines.append(_kv(w.tools_per_turn, format_decimal(report.tool_calls_per_turn or 0.0, lang)))
        lines.append(_kv(w.latency, _duration_pair(t.p50_ms, t.p95_ms, w, lang)))
        lines.append(_kv(w.prompt_tokens, count(t.prompt_tokens)))
        lines.append(_kv(w.completion_tokens, count(t.completion_tokens)))
        lines.append(_kv(w.usage_unknown, w.usage_unknown_value.format(n=count(t.usage_unknown))))
    lines.append(_kv(w.fallback, count(m.fallback_answers)))
    summaries = w.summaries_value.format(ok=count(m.summaries_ok), failed=count(m.summaries_failed))
    lines.append(_kv(w.summaries, summaries))
    lines.append(_kv(w.resets, count(report.resets)))
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
