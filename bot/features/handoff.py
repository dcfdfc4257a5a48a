"""Handoff to a person as one feature: on only with OPERATOR_CHAT_ID.

It adds the `request_human` tool, the operators' router (first: no other router sees
their group), /operator and the "talk to a person" button among the commands, the
customers' messages during a handoff (before the AI's routers), /operator in the menu,
the start-up check of the operators' group, the open-handoffs gauge and the /stats block.
The desk (bot/handoff.py) is also what the responder asks when a topic was deleted and
what a turn's reply asks after the model called `request_human`; the wiring passes it
there.
"""

from __future__ import annotations

import time

from bot.config import Settings
from bot.context import HandlerDeps
from bot.features import Feature, FeatureRouters
from bot.handoff import HandoffDesk, HandoffSetupError
from bot.metrics import Metrics
from bot.routers.handoff import (
    MENU,
    build_customer_handoff_router,
    build_handoff_button_router,
    build_handoff_commands_router,
    build_operator_router,
)
from bot.sender import Sender
from bot.startup import CannotStart
from bot.stats_view.handoff import handoff_block
from bot.stats_view.table import TableSection
from bot.texts import Language, TextTable
from services.handoff import HandoffService
from services.stats import StatsReport, handoff_stats
from storage.conversations import ConversationRepository
from storage.database import Database, StorageRetry
from storage.handoffs import HandoffRepository
from tools.request_human import request_human_tool


def build_handoff_desk(
    settings: Settings,
    db: Database,
    *,
    storage_retry: StorageRetry,
    sender: Sender,
    texts: TextTable,
) -> HandoffDesk | None:
    """The desk, or None without OPERATOR_CHAT_ID (then there is no handoff at all)."""
    if settings.operator_chat_id is None:
        return None
    service = HandoffService(
        HandoffRepository(db),
        ConversationRepository(db),
        hours=settings.handoff_hours,
        storage_retry=storage_retry,
        clock=time.time,
    )
    return HandoffDesk(
        operator_chat_id=settings.operator_chat_id, service=service, sender=sender, texts=texts
    )


def handoff_feature(desk: HandoffDesk) -> Feature:
    async def check_operator_chat(bot_id: int) -> None:
        try:
            await desk.check_operator_chat(bot_id)
        except HandoffSetupError as exc:
            raise CannotStart(str(exc)) from None

    def routers(deps: HandlerDeps) -> FeatureRouters:
        return FeatureRouters(
            first=(build_operator_router(desk),),
            commands=(
                build_handoff_commands_router(desk),
                build_handoff_button_router(deps, desk),
            ),
            # during a handoff every customer message (voice notes too) goes to operators
            messages=(build_customer_handoff_router(deps, desk),),
        )

    def gauges(metrics: Metrics) -> None:
        metrics.register_gauge(
            "support_bot_handoffs_open",
            "Conversations handed to a person and not closed yet.",
            desk.service.open_count,
        )

    async def stats_section(report: StatsReport) -> TableSection:
        counts = await desk.service.counts(report.period.since, report.period.until)
        handoffs = handoff_stats(counts)

        def lines(language: Language) -> list[str]:
            return handoff_block(handoffs, language)

        return lines

    return Feature(
        name="handoff",
        tools=(request_human_tool(desk.service),),
        routers=routers,
        menu=MENU,
        start_check=check_operator_chat,
        gauges=gauges,
        stats_sections=(stats_section,),
    )
