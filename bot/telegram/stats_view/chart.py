"""The `/stats` chart: questions answered / not answered per hour or day, then tool calls.

Drawn with Pillow rather than matplotlib: a few rectangles, lines and labels do not need
a plotting stack, and Pillow imports in milliseconds with a few MB of memory where
matplotlib (plus numpy) costs a second and tens of MB in a long-running bot. Rendering
is CPU work: callers run `render_chart` in a worker thread (`asyncio.to_thread`).

Everything is in the admin's language, so the text is drawn with DejaVu Sans, shipped
with the project (`fonts/DejaVuSans.ttf`, Bitstream Vera licence with public-domain
DejaVu changes, `fonts/LICENSE-DejaVu.txt`): it covers Latin and Cyrillic, which
Pillow's built-in font does not. Sizes are for a phone: Telegram shows the 1080-pixel
picture about 360 points wide, so text is drawn at 26-40 px (9-13 pt on the screen).
Times are in STATS_TIMEZONE. The first panel is the owner's question — were customers
answered — and at most MAX_TOOL_PANELS tool panels follow (the rest summed into one).
"""

from __future__ import annotations

import io
import math
from datetime import datetime
from functools import cache
from importlib import resources

from PIL import Image, ImageDraw, ImageFont

from bot.telegram.stats_view.wording import (
    StatsWords,
    chart_caption,
    format_int,
    tool_title,
    words_for,
)
from bot.telegram.texts import Language
from services.stats import UNKNOWN_TOOLS, ChartData, StatsReport

WIDTH = 1080
MARGIN_LEFT = 96
MARGIN_RIGHT = 28
HEADER_H = 120
PANEL_H = 330
PLOT_H = 200
MAX_TOOL_PANELS = 3
MAX_DAY_LABELS = 8  # "08.01" labels that fit side by side on a phone-wide chart
DAY_S = 86400.0
OTHER_TOOLS = "(other tools)"  # key of the panel that sums the tools past the limit
TITLE_SIZE, TEXT_SIZE, SMALL_SIZE = 40, 30, 26
FONT_FILE = "DejaVuSans.ttf"
BACKGROUND = (255, 255, 255)
INK = (33, 33, 33)
MUTED = (97, 97, 97)
GRID = (224, 224, 224)
GREEN, YELLOW, RED = (67, 160, 71), (251, 192, 45), (229, 57, 53)

Series = list[tuple[str, tuple[int, ...], tuple[int, int, int]]]  # (label, counts, colour)
Font = ImageFont.FreeTypeFont


@cache
def font(size: int) -> Font:
    """DejaVu Sans at `size` px from the package's own fonts folder."""
    data = (resources.files("bot.telegram.stats_view") / "fonts" / FONT_FILE).read_bytes()
    return ImageFont.truetype(io.BytesIO(data), size=size)


def render_chart(report: StatsReport, language: Language = "en") -> bytes:
    """A PNG of the report in `language` (blocking; run it in a thread)."""
    w = words_for(language)
    chart = report.chart
    panels = _panels(chart, w, language) if chart else []
    height = HEADER_H + max(1, len(panels)) * PANEL_H + 16
    image = Image.new("RGB", (WIDTH, height), BACKGROUND)
    draw = ImageDraw.Draw(image)
    draw.text((MARGIN_LEFT, 18), chart_caption(report, language), font=font(TITLE_SIZE), fill=INK)
    draw.text((MARGIN_LEFT, 72), _range_text(report), font=font(SMALL_SIZE), fill=MUTED)
    if chart is None or not panels:
        y = HEADER_H + PANEL_H // 2 - 16
        draw.text((MARGIN_LEFT, y), w.chart_no_data, font=font(TEXT_SIZE), fill=MUTED)
    else:
        for index, (title, series) in enumerate(panels):
            _panel(draw, chart, title, series, top=HEADER_H + index * PANEL_H)
    out = io.BytesIO()
    image.save(out, format="PNG", optimize=True)
    return out.getvalue()


def _panels(chart: ChartData, w: StatsWords, lang: Language) -> list[tuple[str, Series]]:
    """The questions panel, then a panel per busiest tool (done / said no / failed)."""
    panels: list[tuple[str, Series]] = []
    if chart.answered or chart.not_answered:
        n = chart.bucket_count
        panels.append(
            (
                w.chart_questions,
                [
                    (w.answered, _fit(chart.answered, n), GREEN),
                    (w.not_answered, _fit(chart.not_answered, n), RED),
                ],
            )
        )
    tools = list(chart.tools)
    shown = tools if len(tools) <= MAX_TOOL_PANELS else tools[: MAX_TOOL_PANELS - 1]
    groups = [(t, [t]) for t in shown]
    if len(shown) < len(tools):
        groups.append((OTHER_TOOLS, tools[len(shown) :]))
    for key, members in groups:
        series = _tool_series(chart, members, w)
        calls = sum(sum(counts) for _, counts, _ in series)
        name = {OTHER_TOOLS: w.chart_other_tools, UNKNOWN_TOOLS: w.chart_invented_tools}.get(
            key, tool_title(key, lang)
        )
        panels.append((w.chart_tools.format(tool=name, calls=format_int(calls, lang)), series))
    return panels


def _fit(values: tuple[int, ...], n: int) -> tuple[int, ...]:
    return values + (0,) * (n - len(values)) if len(values) < n else values[:n]


def _tool_series(chart: ChartData, tools: list[str], w: StatsWords) -> Series:
    def summed(statuses: tuple[str, ...]) -> tuple[int, ...]:
        return tuple(
            sum(chart.series(t, s)[i] for t in tools for s in statuses)
            for i in range(chart.bucket_count)
        )

    return [
        (w.done, summed(("success",)), GREEN),
        (w.said_no, summed(("business_error",)), YELLOW),
        (w.failed, summed(("rejected", "timeout", "technical_error")), RED),
    ]


def _panel(
    draw: ImageDraw.ImageDraw, chart: ChartData, title: str, series: Series, *, top: int
) -> None:
    """A title, a legend and stacked bars, one per bucket, with a few time labels."""
    text, small = font(TEXT_SIZE), font(SMALL_SIZE)
    draw.text((MARGIN_LEFT, top + 6), title, font=text, fill=INK)
    x = MARGIN_LEFT
    for label, _, colour in series:
        draw.rectangle((x, top + 52, x + 22, top + 74), fill=colour)
        draw.text((x + 30, top + 48), label, font=small, fill=INK)
        x += 30 + int(draw.textlength(label, font=small)) + 30

    n = chart.bucket_count
    totals = [sum(counts[i] for _, counts, _ in series) for i in range(n)]
    scale = max(max(totals, default=0), 1)
    plot_top = top + 88
    plot_bottom = plot_top + PLOT_H
    left, right = MARGIN_LEFT, WIDTH - MARGIN_RIGHT
    for fraction in (0.0, 0.5, 1.0) if scale >= 4 else (0.0, 1.0):
        y = plot_bottom - round(fraction * PLOT_H)
        draw.line((left, y, right, y), fill=GRID, width=2)
        label = format_int(round(fraction * scale), "en")
        width = draw.textlength(label, font=small)
        draw.text((left - 10 - width, y - 15), label, font=small, fill=MUTED)

    slot = (right - left) / n
    bar = max(2.0, slot * 0.8)
    for i in range(n):
        x0 = left + i * slot + (slot - bar) / 2
        base = float(plot_bottom)
        for _, counts, colour in series:
            if not counts[i]:
                continue
            h = counts[i] / scale * PLOT_H
            y0, y1 = round(base - h), round(base) - 1
            x1 = max(round(x0), round(x0 + bar) - 1)
            # a non-zero count is always at least one pixel high
            draw.rectangle((round(x0), min(y0, y1), x1, y1), fill=colour)
            base -= h

    days = _shows_days(chart)
    for i in _labelled_buckets(chart):
        label = _bucket_label(chart, i)
        width = draw.textlength(label, font=small)
        # a day's label stands where the day begins; an hour's under its bar
        anchor = left + i * slot + (0 if days and chart.bucket_s < DAY_S else slot / 2)
        label_x = min(max(anchor - width / 2, 4.0), WIDTH - 4 - width)  # never cut at an edge
        draw.text((label_x, plot_bottom + 8), label, font=small, fill=MUTED)


def _bucket_time(chart: ChartData, index: int) -> datetime:
    return datetime.fromtimestamp(chart.bucket_start + index * chart.bucket_s, chart.timezone)


def _shows_days(chart: ChartData) -> bool:
    """Whether the x labels are dates: a period longer than two days (the 24-hour chart
    shows hours; the date is in the range line above)."""
    return chart.bucket_count * chart.bucket_s > 2 * DAY_S


def _labelled_buckets(chart: ChartData) -> list[int]:
    """The buckets that get a label: at most MAX_DAY_LABELS midnights when hour-wide bars
    show days (the 7-day chart), else about four evenly spaced ones."""
    n = chart.bucket_count
    if _shows_days(chart) and chart.bucket_s < DAY_S:
        midnights = [i for i in range(n) if _bucket_time(chart, i).hour == 0]
        if midnights:
            return midnights[:: max(1, math.ceil(len(midnights) / MAX_DAY_LABELS))]
    return list(range(0, n, max(1, round(n / 4))))


def _bucket_label(chart: ChartData, index: int) -> str:
    start = _bucket_time(chart, index)
    if not _shows_days(chart):
        return start.strftime("%H:%M")
    if chart.bucket_count * chart.bucket_s > 360 * DAY_S:
        return start.strftime("%d.%m.%y")
    return start.strftime("%d.%m")


def _range_text(report: StatsReport) -> str:
    until = datetime.fromtimestamp(report.until, report.timezone)
    zone = until.tzname() or "UTC"
    if report.since is None:
        return f"… – {until:%Y-%m-%d %H:%M} {zone}"
    since = datetime.fromtimestamp(report.since, report.timezone)
    return f"{since:%Y-%m-%d %H:%M} – {until:%Y-%m-%d %H:%M} {zone}"
