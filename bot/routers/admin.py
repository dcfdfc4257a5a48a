"""Admin commands: `/stats [24h|7d|30d|all]` for the users listed in ADMIN_IDS.

The router's filter lets only admins in. For anyone else it does not handle the update
at all, so a non-admin's /stats falls through to the unknown-command reply and reveals
nothing. The figures come from `StatsService` (workflow data `stats`); this module only
turns them into Telegram messages: the table as monospace text, then the chart as a
photo. The chart is drawn in a worker thread, and a drawing failure costs the photo,
never the text.
"""

from __future__ import annotations

import asyncio
import html
import logging
from collections.abc import Callable

from aiogram import F, Router
from aiogram.enums import ParseMode
from aiogram.filters import Command, CommandObject
from aiogram.types import BufferedInputFile, Message, User

from bot.texts import DEFAULT_LANGUAGE, LANGUAGES
from services.stats import StatsReport, StatsService, StatsUsageError
from services.stats_chart import render_chart

logger = logging.getLogger(__name__)

ChartRenderer = Callable[[StatsReport], bytes]


def build_admin_router(
    admin_ids: frozenset[int], *, chart_renderer: ChartRenderer = render_chart
) -> Router:
    """`chart_renderer` is replaceable so tests can make the drawing fail."""
    router = Router(name="admin")
    # No admins configured -> the filter never matches and /stats is an unknown command.
    router.message.filter(F.from_user.id.in_(admin_ids))

    @router.message(Command("stats"))
    async def stats_command(message: Message, command: CommandObject, stats: StatsService) -> None:
        lang = _language(message.from_user)
        try:
            period = stats.parse_period(command.args)
        except StatsUsageError:
            await message.answer(stats.usage_hint(lang), parse_mode=None)
            return
        report = await stats.report(period)
        chart: bytes | None = None
        if report.tool_calls_total:  # nothing to draw otherwise; the table says 0
            try:
                chart = await asyncio.to_thread(chart_renderer, report)
            except Exception:  # the table is still worth sending
                logger.exception("stats chart rendering failed; sending the table only")
        caption = stats.chart_caption(report, lang)
        await _send_report(message, stats.render_table(report, lang), chart, caption)

    return router


def _language(user: User | None) -> str:
    """The stats text language: the same rule as the bot's own phrases."""
    primary = ((user.language_code if user else None) or "").split("-")[0].lower()
    return primary if primary in LANGUAGES else DEFAULT_LANGUAGE


async def _send_report(
    message: Message, chunks: list[str], chart: bytes | None, caption: str
) -> None:
    """Every send of /stats, in one place (the one to route through a shared sender)."""
    for chunk in chunks:
        await message.answer(f"<pre>{html.escape(chunk)}</pre>", parse_mode=ParseMode.HTML)
    if chart is not None:
        await message.answer_photo(
            BufferedInputFile(chart, filename="stats.png"), caption=caption, parse_mode=None
        )
