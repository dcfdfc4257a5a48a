"""The /stats chart: a real PNG a phone can show, in the admin's language, Cyrillic included.

The Cyrillic check compares glyphs, not file sizes: a font without Cyrillic draws every
letter as the same "missing glyph" box (tofu) — Pillow's built-in font does exactly that,
which is why the chart ships DejaVu Sans.
"""

from __future__ import annotations

import io
import re
import struct
from zoneinfo import ZoneInfo

from PIL import Image, ImageChops, ImageDraw, ImageFont

from bot.telegram.stats_view.chart import (
    MARGIN_LEFT,
    PANEL_H,
    TITLE_SIZE,
    WIDTH,
    _bucket_label,
    _bucket_time,
    _labelled_buckets,
    _panel,
    font,
    render_chart,
)
from bot.telegram.stats_view.wording import chart_caption
from services.stats import (
    ChartData,
    Period,
    StatsReport,
    StatsService,
    aligned_start,
    choose_bucket,
)
from storage.database import Database
from storage.stats import StatsRepository
from tests.unit.storage.test_stats import SINCE, UNTIL, _seed

NOW = 1_800_000_000.0

PNG_SIGNATURE = b"\x89PNG\r\n\x1a\n"
NOT_IN_ANY_FONT = "\U0010fffd"  # a private-use code point: every font draws its tofu box


def _png_size(data: bytes) -> tuple[int, int]:
    assert data[:8] == PNG_SIGNATURE
    length, chunk = struct.unpack(">I4s", data[8:16])
    assert chunk == b"IHDR" and length == 13
    width, height = struct.unpack(">II", data[16:24])
    return width, height


def _glyph(f: ImageFont.FreeTypeFont, text: str) -> tuple[tuple[int, int], bytes]:
    mask = f.getmask(text)
    return mask.size, bytes(mask)


async def _report(db: Database) -> StatsReport:
    await _seed(db)
    service = StatsService(StatsRepository(db), clock=lambda: UNTIL)
    return await service.report(Period("24h", SINCE, UNTIL))


async def test_chart_is_a_phone_sized_png_with_questions_first_then_tools(db: Database):
    png = render_chart(await _report(db), "en")
    width, height = _png_size(png)
    assert width == WIDTH >= 1000  # shown ~360 pt wide on a phone: text drawn large
    # the questions panel, two tools and the made-up names
    assert height >= 4 * PANEL_H
    assert png.endswith(b"IEND\xaeB`\x82")


def test_chart_of_an_empty_period_still_renders():
    report = StatsReport(period=Period("all", None, UNTIL), since=None, until=UNTIL)
    width, height = _png_size(render_chart(report, "ru"))
    assert (width, height) >= (WIDTH, 200)


def test_the_shipped_font_has_real_cyrillic_glyphs_where_pillows_own_has_tofu():
    shipped = font(TITLE_SIZE)
    builtin = ImageFont.load_default(size=TITLE_SIZE)
    tofu = _glyph(shipped, NOT_IN_ANY_FONT)
    letters = "ВопрсыцЖШЁё"
    for letter in letters:
        assert _glyph(shipped, letter) != tofu, letter
    assert len({_glyph(shipped, letter) for letter in letters}) == len(letters)
    # the test can fail: Pillow's built-in font draws all of them as one box
    assert _glyph(builtin, "Ж") == _glyph(builtin, "Ш") == _glyph(builtin, NOT_IN_ANY_FONT)


async def test_a_russian_title_is_drawn_with_real_glyphs_not_tofu(db: Database):
    report = await _report(db)
    title = chart_caption(report, "ru")
    assert title.startswith("Вопросы за 24 часа")
    with Image.open(io.BytesIO(render_chart(report, "ru"))) as chart:
        band = chart.convert("RGB").crop((0, 0, WIDTH, 70))

    def drawn(text: str) -> Image.Image:
        image = Image.new("RGB", (WIDTH, 70), (255, 255, 255))
        ImageDraw.Draw(image).text(
            (MARGIN_LEFT, 18), text, font=font(TITLE_SIZE), fill=(33, 33, 33)
        )
        return image

    as_tofu = "".join(NOT_IN_ANY_FONT if ch.isalpha() and ord(ch) > 127 else ch for ch in title)
    assert ImageChops.difference(band, drawn(title)).getbbox() is None  # exactly the title
    assert ImageChops.difference(band, drawn(as_tofu)).getbbox() is not None  # and not boxes


async def test_chart_words_follow_the_language(db: Database):
    report = await _report(db)
    assert chart_caption(report, "en") == "Questions, last 24 hours: 6, answered 3"
    assert chart_caption(report, "ru") == "Вопросы за 24 часа: 6, с ответом 3"
    assert render_chart(report, "en") != render_chart(report, "ru")


def _chart(bucket_s: float, count: int, tz: str = "Europe/Moscow") -> ChartData:
    start = aligned_start(NOW - count * bucket_s, bucket_s, NOW, ZoneInfo(tz))
    return ChartData(
        bucket_start=start,
        bucket_s=bucket_s,
        bucket_count=count,
        tools=(),
        counts={},
        answered=(),
        not_answered=(),
        timezone=ZoneInfo(tz),
    )


def test_the_7_day_chart_labels_days_at_midnight_and_the_24_hour_one_hours() -> None:
    week = _chart(choose_bucket(7 * 86400), 29)  # 6-hour bars
    labels = [_bucket_label(week, i) for i in _labelled_buckets(week)]
    assert 5 <= len(labels) <= 8 and all(re.fullmatch(r"\d\d\.\d\d", s) for s in labels), labels
    assert all(_bucket_time(week, i).hour == 0 for i in _labelled_buckets(week))

    day = _chart(choose_bucket(86400), 25)  # hour bars
    labels = [_bucket_label(day, i) for i in _labelled_buckets(day)]
    assert all(re.fullmatch(r"\d\d:00", s) for s in labels), labels


def test_no_x_label_is_cut_off_at_the_right_edge() -> None:
    """The last bar's label would stick out past the picture: it is moved inside. Drawn on a
    wider canvas, nothing may land beyond the chart's own width."""
    chart = _chart(3600.0, 25)
    image = Image.new("RGB", (WIDTH + 200, 400), "white")
    _panel(ImageDraw.Draw(image), chart, "t", [("a", (1,) * 25, (0, 0, 0))], top=0)
    beyond = image.crop((WIDTH, 0, WIDTH + 200, 400)).convert("L")
    assert beyond.getextrema()[0] == 255  # nothing drawn past the right edge
