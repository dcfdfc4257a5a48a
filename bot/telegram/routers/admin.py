"""Admin commands: `/stats [24h|7d|30d|all]` for the users listed in ADMIN_IDS.

The router's filter lets only admins in. For anyone else it does not handle the update
at all, so a non-admin's /stats falls through to the unknown-command reply and reveals
nothing. The figures come from `StatsService` (`HandlerDeps.stats`), the words and
the picture from `bot.telegram.stats_view`, in the language of the update's `ctx`; this
module only sends them: the table as monospace text through the update's `outbox`
(stored in the inbox before it is sent, like every answer), then the chart as a photo
through the shared `sender` (paced, flood control honoured). The chart is drawn in a
worker thread, in the admin's language, and a drawing failure costs the photo, never the
text. `sections` are extra blocks of the owner's table that features contribute (e.g.
handoffs when configured, bot/telegram/features/handoff.py): each is asked for the report's
period and returns its lines for a language.
"""

from __future__ import annotations

import asyncio
import html
import logging
from collections.abc import Awaitable, Callable, Sequence

from aiogram import Router
from aiogram.filters import Command, CommandObject
from aiogram.types import Message

from bot.telegram.context import HandlerDeps, UpdateContext
from bot.telegram.filters import FromUsers, IsCommand
from bot.telegram.formatting import Rendered
from bot.telegram.menu import MenuEntry
from bot.telegram.outbox import Outbox
from bot.telegram.sender import Sender
from bot.telegram.stats_view.chart import render_chart
from bot.telegram.stats_view.table import TableSection, render_table
from bot.telegram.stats_view.wording import chart_caption, usage_hint
from bot.telegram.texts import Language
from services.stats import StatsReport, StatsUsageError

logger = logging.getLogger(__name__)

ChartRenderer = Callable[[StatsReport, Language], bytes]
# an extra block of the owner's table, computed for the report (its period)
StatsSection = Callable[[StatsReport], Awaitable[TableSection]]

# the admins' menu entries of this router (bot/telegram/menu.py)
MENU = (MenuEntry("stats", lambda t: t.menu_stats),)


def build_admin_router(
    deps: HandlerDeps,
    admin_ids: frozenset[int],
    *,
    chart_renderer: ChartRenderer = render_chart,
    sections: Sequence[StatsSection] = (),
) -> Router:
    """`chart_renderer` is replaceable so tests can make the drawing fail."""
    router = Router(name="admin")
    # No admins configured -> the filter never matches and /stats is an unknown command.
    router.message.filter(IsCommand(), FromUsers(admin_ids))

    @router.message(Command("stats"))
    async def stats_command(message: Message, ctx: UpdateContext, command: CommandObject) -> None:
        stats, language = deps.stats, ctx.language
        try:
            period = stats.parse_period(command.args)
        except StatsUsageError:
            hint = usage_hint(language)
            await ctx.outbox.send_rendered([Rendered(html.escape(hint), hint)])
            return
        report = await stats.report(period)
        chart: bytes | None = None
        if report.turns.count or report.tool_calls_total:  # else nothing to draw
            try:
                chart = await asyncio.to_thread(chart_renderer, report, language)
            except Exception:  # the table is still worth sending
                logger.exception("stats chart rendering failed; sending the table only")
        caption = chart_caption(report, language)
        shown = [await section(report) for section in sections]
        await _send_report(
            ctx.outbox,
            deps.sender,
            message.chat.id,
            render_table(report, language, sections=shown),
            chart,
            caption,
        )

    return router


async def _send_report(
    outbox: Outbox,
    sender: Sender,
    chat_id: int,
    chunks: list[str],
    chart: bytes | None,
    caption: str,
) -> None:
    """Every send of /stats, in one place: the table is the stored answer, the chart extra."""
    await outbox.send_rendered([Rendered(f"<pre>{html.escape(c)}</pre>", c) for c in chunks])
    if chart is not None:
        result = await sender.send_photo(chat_id, chart, caption=caption)
        if result.status != "delivered":
            logger.warning("stats chart to chat %s: %s (%s)", chat_id, result.status, result.reason)
