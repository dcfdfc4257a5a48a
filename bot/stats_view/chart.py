"""The `/stats` chart: tool calls over the period, one panel per tool, stacked by status.

Drawn with Pillow rather than matplotlib: a few rectangles, lines and labels do not need
a plotting stack, and Pillow imports in milliseconds with a few MB of memory where
matplotlib (plus numpy) costs a second and tens of MB in a long-running bot. Rendering
is CPU work: callers run `render_chart` in a worker thread (`asyncio.to_thread`).
Labels are English and ASCII (tool and status names), which the bundled font covers;
the title is the English photo caption (`bot.stats_view.wording`), period title included.
"""

from __future__ import annotations

import io
from datetime import UTC, datetime

from PIL import Image, ImageDraw, ImageFont

from bot.stats_view.wording import chart_caption
from services.stats import UNKNOWN_TOOLS, ChartData, StatsReport
from storage.stats import TOOL_STATUSES

WIDTH = 960
MARGIN_LEFT = 64
MARGIN_RIGHT = 24
HEADER_H = 96
PANEL_H = 170
PLOT_H = 112
MAX_PANELS = 6
OTHER_TOOLS = "(other tools)"
UNKNOWN_TOOLS_TITLE = "(unknown tools)"  # the panel of every tool name the model invented
BACKGROUND = (255, 255, 255)
INK = (33, 33, 33)
MUTED = (117, 117, 117)
GRID = (224, 224, 224)
STATUS_COLOURS: dict[str, tuple[int, int, int]] = {
    "success": (67, 160, 71),
    "business_error": (251, 192, 45),
    "rejected": (142, 36, 170),
    "timeout": (239, 108, 0),
    "technical_error": (229, 57, 53),
}


def render_chart(report: StatsReport) -> bytes:
    """A PNG of the report's tool calls per time bucket (blocking; run it in a thread)."""
    chart = report.chart
    panels = _panels(chart) if chart else []
    height = HEADER_H + max(1, len(panels)) * PANEL_H + 12
    image = Image.new("RGB", (WIDTH, height), BACKGROUND)
    draw = ImageDraw.Draw(image)
    title_font = _font(22)
    font = _font(15)
    small = _font(13)

    draw.text((MARGIN_LEFT, 14), chart_caption(report, "en"), font=title_font, fill=INK)
    draw.text((MARGIN_LEFT, 44), _range_text(report), font=small, fill=MUTED)
    _legend(draw, font, y=68)

    if chart is None or not panels:
        draw.text(
            (MARGIN_LEFT, HEADER_H + PANEL_H // 2 - 10),
            "no tool calls in this period",
            font=font,
            fill=MUTED,
        )
    else:
        for index, (tool, series) in enumerate(panels):
            _panel(draw, chart, tool, series, top=HEADER_H + index * PANEL_H, fonts=(font, small))

    out = io.BytesIO()
    image.save(out, format="PNG", optimize=True)
    return out.getvalue()


def _font(size: int) -> ImageFont.FreeTypeFont | ImageFont.ImageFont:
    return ImageFont.load_default(size=size)


def _panels(chart: ChartData) -> list[tuple[str, dict[str, tuple[int, ...]]]]:
    """(tool, status -> counts) per panel; tools past MAX_PANELS are summed into one."""
    tools = list(chart.tools)
    shown = tools if len(tools) <= MAX_PANELS else tools[: MAX_PANELS - 1]
    panels = [(t, {s: chart.series(t, s) for s in TOOL_STATUSES}) for t in shown]
    rest = tools[len(shown) :]
    if rest:
        summed = {
            s: tuple(sum(v) for v in zip(*(chart.series(t, s) for t in rest), strict=True))
            for s in TOOL_STATUSES
        }
        panels.append((OTHER_TOOLS, summed))
    return panels


def _legend(
    draw: ImageDraw.ImageDraw, font: ImageFont.FreeTypeFont | ImageFont.ImageFont, y: int
) -> None:
    x = MARGIN_LEFT
    for status in TOOL_STATUSES:
        draw.rectangle((x, y + 3, x + 12, y + 15), fill=STATUS_COLOURS[status])
        label = status.replace("_", " ")
        draw.text((x + 18, y), label, font=font, fill=INK)
        x += 18 + int(draw.textlength(label, font=font)) + 22


def _panel(
    draw: ImageDraw.ImageDraw,
    chart: ChartData,
    tool: str,
    series: dict[str, tuple[int, ...]],
    *,
    top: int,
    fonts: tuple[ImageFont.FreeTypeFont | ImageFont.ImageFont, ...],
) -> None:
    font, small = fonts
    n = chart.bucket_count
    totals = [sum(series[s][i] for s in TOOL_STATUSES) for i in range(n)]
    peak = max(totals) if totals else 0
    draw.text((MARGIN_LEFT, top + 4), _panel_title(tool, sum(totals)), font=font, fill=INK)

    plot_top = top + 28
    plot_bottom = plot_top + PLOT_H
    left, right = MARGIN_LEFT, WIDTH - MARGIN_RIGHT
    scale = max(peak, 1)
    fractions = (0.0, 0.5, 1.0) if scale >= 4 else (0.0, 1.0)
    for fraction in fractions:
        y = plot_bottom - round(fraction * PLOT_H)
        draw.line((left, y, right, y), fill=GRID, width=1)
        label = f"{round(fraction * scale):,}"
        width = draw.textlength(label, font=small)
        draw.text((left - 8 - width, y - 8), label, font=small, fill=MUTED)

    slot = (right - left) / n
    bar = max(1.0, slot * 0.8)
    for i in range(n):
        x0 = left + i * slot + (slot - bar) / 2
        base = float(plot_bottom)
        for status in TOOL_STATUSES:
            value = series[status][i]
            if not value:
                continue
            h = value / scale * PLOT_H
            y0, y1 = round(base - h), round(base) - 1
            x1 = max(round(x0), round(x0 + bar) - 1)
            # a non-zero count is always at least one pixel high
            draw.rectangle((round(x0), min(y0, y1), x1, y1), fill=STATUS_COLOURS[status])
            base -= h

    step = max(1, round(n / 8))
    for i in range(0, n, step):
        label = _bucket_label(chart, i)
        x = left + i * slot + slot / 2 - draw.textlength(label, font=small) / 2
        draw.text((max(x, 2), plot_bottom + 6), label, font=small, fill=MUTED)


def _panel_title(tool: str, calls: int) -> str:
    """`get_order_status  (1,234 calls)`; the invented names' key gets a readable title."""
    title = UNKNOWN_TOOLS_TITLE if tool == UNKNOWN_TOOLS else tool
    return f"{title}  ({calls:,} {'call' if calls == 1 else 'calls'})"


def _bucket_label(chart: ChartData, index: int) -> str:
    start = datetime.fromtimestamp(chart.bucket_start + index * chart.bucket_s, UTC)
    if chart.bucket_s < 86400:
        return start.strftime("%d.%m %H:%M")
    if chart.bucket_count * chart.bucket_s > 360 * 86400:
        return start.strftime("%d.%m.%y")
    return start.strftime("%d.%m")


def _range_text(report: StatsReport) -> str:
    until = datetime.fromtimestamp(report.until, UTC)
    if report.since is None:
        return f"until {until:%Y-%m-%d %H:%M} UTC"
    since = datetime.fromtimestamp(report.since, UTC)
    return f"{since:%Y-%m-%d %H:%M} - {until:%Y-%m-%d %H:%M} UTC"
