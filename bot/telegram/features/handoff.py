"""Handoff to a person as one feature: on only with OPERATOR_CHAT_ID.

It adds the `request_human` tool, the operators' router (first: no other router sees
their group), /operator and the "talk to a person" button among the commands, the
customers' messages during a handoff (before the AI's routers), /operator in the menu,
the start-up check of the operators' group, the open-handoffs gauge and the /stats block.
Its part in the core's work: after a turn in which the model called `request_human`,
the notice under the answer and the brief in the operators' topic (`after_turn`); the
"talk to a person" button after a failed turn or a 👎 (`person_button`); a new topic for
a part whose topic was deleted (`topic_lost`, asked by the responder). Its settings are
`HandoffSettings` (OPERATOR_HOURS, OPERATOR_UTC_OFFSET), its words `HANDOFF_WORDS` and
`OPERATOR_WORDS` (bot/telegram/handoff_view.py).
"""

from __future__ import annotations

import time
from typing import Any

from aiogram.types import Message
from pydantic import Field, field_validator

from bot.runtime.config import FeatureSettings
from bot.runtime.exit_codes import CannotStart
from bot.runtime.metrics import Metrics
from bot.telegram.context import AfterTurn, HandlerDeps, TurnAddition, UpdateContext
from bot.telegram.features import Feature, FeatureRouters
from bot.telegram.features.catalog import (
    ChatPart,
    Needs,
    TelegramFeatureSpec,
    TelegramNeeds,
    word_table,
)
from bot.telegram.handoff import HandoffDesk, HandoffSetupError
from bot.telegram.handoff_view import HANDOFF_WORDS, OPERATOR_WORDS
from bot.telegram.routers.handoff import (
    MENU,
    build_customer_handoff_router,
    build_handoff_button_router,
    build_handoff_commands_router,
    build_operator_router,
)
from bot.telegram.stats_view.handoff import handoff_block
from bot.telegram.stats_view.table import TableSection
from bot.telegram.texts import Language
from services.handoff import HandoffService, OperatorHours
from services.loop_types import TurnReply
from services.stats import StatsReport, handoff_stats
from storage.conversations import ConversationRepository
from storage.handoffs import HandoffRepository
from tools.request_human import request_human_tool


class HandoffSettings(FeatureSettings):
    """The handoff's own settings (the names owners have always set); OPERATOR_CHAT_ID,
    which turns it on, stays in `Settings`: actions and gaps send to the same group."""

    # When operators answer, HH:MM-HH:MM at OPERATOR_UTC_OFFSET (unset: any time); outside
    # them the customer is told when a person will be back
    operator_hours: str | None = None
    operator_utc_offset: int = Field(default=0, ge=-12, le=14)

    @field_validator("operator_hours", mode="before")
    @classmethod
    def _check_operator_hours(cls, value: Any) -> Any:
        if isinstance(value, str):
            if not value.strip():
                return None
            OperatorHours.parse(value)  # ValueError names the expected shape
            return value.strip()
        return value

    @property
    def hours(self) -> OperatorHours | None:
        """OPERATOR_HOURS at OPERATOR_UTC_OFFSET, or None (operators answer any time)."""
        if self.operator_hours is None:
            return None
        return OperatorHours.parse(self.operator_hours, self.operator_utc_offset)


def handoff_in_turns(needs: Needs, conf: HandoffSettings) -> ChatPart[HandoffService] | None:
    """The service and `request_human`, or None without OPERATOR_CHAT_ID (no handoff)."""
    settings = needs.settings
    if settings.operator_chat_id is None:
        return None
    service = HandoffService(
        HandoffRepository(needs.db),
        ConversationRepository(needs.db),
        hours=conf.hours,
        storage_retry=needs.storage_retry,
        clock=time.time,
    )
    return ChatPart(service, tools=(request_human_tool(service),))


def handoff_on_telegram(
    needs: Needs, telegram: TelegramNeeds, service: HandoffService, _conf: HandoffSettings
) -> Feature:
    operator_chat_id = needs.settings.operator_chat_id
    assert operator_chat_id is not None  # the part in turns is built only with it
    desk = HandoffDesk(
        operator_chat_id=operator_chat_id,
        service=service,
        sender=telegram.sender,
        texts=telegram.texts,
    )
    return handoff_feature(desk)


def announce_handoff(desk: HandoffDesk) -> AfterTurn:
    """The handoff the model opened in a turn (its offer, stored with the turn, so a
    replay has it too): the notice under the answer, the brief to the operators, then
    the handoff marked briefed."""

    async def after_turn(
        message: Message, reply: TurnReply, ctx: UpdateContext
    ) -> TurnAddition | None:
        begun = await desk.after_turn(message, reply.offers, ctx.language, ctx.texts)
        if begun is None:
            return None

        async def briefed() -> None:
            await desk.service.mark_briefed(begun.handoff_id)

        return TurnAddition(notice=begun.notice, also=begun.parts, sent=briefed)

    return after_turn


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
        routers=routers,
        menu=MENU,
        start_check=check_operator_chat,
        gauges=gauges,
        stats_sections=(stats_section,),
        after_turn=announce_handoff(desk),
        person_button=True,
        topic_lost=desk.topic_lost,
    )


# customers' words in their language, operators' in the shop's (bot/telegram/handoff_view.py)
HANDOFF: TelegramFeatureSpec[HandoffService, HandoffSettings] = TelegramFeatureSpec(
    name="handoff",
    chat=handoff_in_turns,
    telegram=handoff_on_telegram,
    settings=HandoffSettings,
    words=word_table(HANDOFF_WORDS, OPERATOR_WORDS),
)
