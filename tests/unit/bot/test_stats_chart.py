"""The /stats chart: a real PNG a phone can show, in the admin's language, Cyrillic included.

The Cyrillic check compares glyphs, not file sizes: a font without Cyrillic draws every
letter as the same "missing glyph" box (tofu) — Pillow's built-in font does exactly that,
which is why the chart ships DejaVu Sans.
"""

from __future__ import annotations

import io
import struct

from PIL import Image, ImageChops, ImageDraw, ImageFont

from bot.stats_view.chart import (
    MARGIN_LEFT,
    PANEL_H,
    TITLE_SIZE,
    WIDTH,
    font,
    render_chart,
)
from bot.stats_view.wording import chart_caption
from services.stats import Period, StatsReport, StatsService
from storage.database import Database
from storage.stats import StatsRepository
from tests.unit.storage.test_stats import SINCE, UNTIL, _seed

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
