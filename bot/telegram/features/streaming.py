"""Streamed answers as one feature: on with STREAM_ANSWERS (the default).

In private chats a typed question's answer is shown while it is written, in a Telegram
draft with a stop button (bot/telegram/drafts.py; the model side is services/answer_stream.py).
The feature contributes the drafts the chat path asks (`HandlerDeps.drafts`), the stop
press reaching its running turn as soon as it is stored (the intake's signal), and the
router that finishes the stop press's own update. With STREAM_ANSWERS=false there is
none of it: answers are sent whole after the typing indicator (`bot.telegram.context.NoDrafts`).
"""

from __future__ import annotations

from aiogram import Router
from aiogram.types import MessageGenerationStopped

from bot.runtime.config import NoSettings, Settings
from bot.telegram.context import HandlerDeps, UpdateContext
from bot.telegram.drafts import Drafts
from bot.telegram.features import Feature, FeatureRouters
from bot.telegram.features.catalog import Needs, TelegramFeatureSpec, TelegramNeeds, on
from bot.telegram.sender import Sender
from services.limits import TurnSlots


def build_drafts(settings: Settings, sender: Sender, turn_slots: TurnSlots) -> Drafts | None:
    """None with STREAM_ANSWERS off; else a new turn streams while at most
    STREAM_MAX_CHATS chats' turns run or wait (that one included)."""
    if not settings.stream_answers:
        return None
    return Drafts(
        sender,
        max_busy_chats=settings.stream_max_chats,
        busy_chats=lambda: turn_slots.running + turn_slots.waiting + 1,
    )


def build_stop_router() -> Router:
    router = Router(name="stop_pressed")

    @router.stopped_message_generation()
    async def on_stop_pressed(_event: MessageGenerationStopped, ctx: UpdateContext) -> None:
        # the running turn was stopped when the update arrived (`Drafts.signal`, called by
        # the intake); by now its answer is sent, and this update needs nothing more
        await ctx.outbox.ignore("stop_pressed")

    return router


def streaming_feature(drafts: Drafts) -> Feature:
    def routers(_deps: HandlerDeps) -> FeatureRouters:
        return FeatureRouters(messages=(build_stop_router(),))

    return Feature(name="streaming", routers=routers, drafts=drafts, on_stored=drafts.signal)


def streaming_on_telegram(
    needs: Needs, telegram: TelegramNeeds, _own: None, _conf: NoSettings
) -> Feature | None:
    drafts = build_drafts(needs.settings, telegram.sender, telegram.turn_slots)
    return streaming_feature(drafts) if drafts is not None else None


# Telegram only: nothing of it in a turn's tools or words
STREAMING: TelegramFeatureSpec[None, NoSettings] = TelegramFeatureSpec(
    name="streaming",
    chat=lambda needs, _conf: on(needs.settings.stream_answers),
    telegram=streaming_on_telegram,
)
