"""The /stats chart is a real PNG an admin's phone can open, for busy and empty periods."""

from __future__ import annotations

import struct

from bot.stats_view.chart import WIDTH, _panel_title, render_chart
from bot.stats_view.wording import chart_caption
from services.stats import UNKNOWN_TOOLS, Period, StatsReport, StatsService
from storage.database import Database
from storage.stats import StatsRepository
from tests.unit.storage.test_stats import SINCE, UNTIL, _seed

PNG_SIGNATURE = b"\x89PNG\r\n\x1a\n"


def _png_size(data: bytes) -> tuple[int, int]:
    assert data[:8] == PNG_SIGNATURE
    length, chunk = struct.unpack(">I4s", data[8:16])
    assert chunk == b"IHDR" and length == 13
    width, height = struct.unpack(">II", data[16:24])
    return width, height


async def test_chart_of_a_seeded_period_is_a_png_with_a_panel_per_tool(db: Database):
    await _seed(db)
    service = StatsService(StatsRepository(db), clock=lambda: UNTIL)
    report = await service.report(Period("24h", SINCE, UNTIL))
    png = render_chart(report)
    width, height = _png_size(png)
    assert width == WIDTH
    assert height > 3 * 150  # three panels: two tools and the invented names
    assert len(png) > 5_000
    assert png.endswith(b"IEND\xaeB`\x82")


def test_chart_of_an_empty_period_still_renders():
    report = StatsReport(period=Period("all", None, UNTIL), since=None, until=UNTIL)
    width, height = _png_size(render_chart(report))
    assert (width, height) >= (WIDTH, 200)


def test_titles_are_the_english_caption_and_readable_panel_names():
    """The chart's title is the photo's English caption: one definition of the period titles."""
    report = StatsReport(period=Period("7d", 0.0, UNTIL), since=0.0, until=UNTIL)
    assert chart_caption(report, "en") == "Tool calls by status, last 7 days: 0"
    assert _panel_title(UNKNOWN_TOOLS, 2) == "(unknown tools)  (2 calls)"
    assert _panel_title("get_order_status", 1) == "get_order_status  (1 call)"
