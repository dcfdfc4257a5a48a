"""The composition root: the only place that builds objects, split by area.

`build_application` reads as the order things must exist in: storage retries, the
model, the Telegram transport and the turn slots first; then the optional features
(bot/telegram/features/: each None or a `Feature`), whose tools join the registry; then the core
(`core.py`: loop and chat service, reporting to the metrics), the Telegram side
(`telegram.py`: responder, handlers, intake, each given the features' parts) and
operations (`operations.py`: health, metrics). Nothing is completed after it is built.
Nothing here talks to Telegram or the model; start-up checks are bot/telegram/startup.py, the run
loop bot/telegram/app.py.
"""

from __future__ import annotations

import logging
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from aiogram import Bot, Dispatcher

from bot.runtime.config import Settings
from bot.runtime.feature_catalog import Built, Needs, build_chat_parts, system_prompt, tools_of
from bot.runtime.health import Health
from bot.runtime.intake import Intake
from bot.runtime.leadership import Leadership
from bot.runtime.metrics import Metrics
from bot.telegram.features import Feature
from bot.telegram.features.actions import actions_off_feature
from bot.telegram.features.catalog import (
    TelegramFeatureSpec,
    TelegramNeeds,
    TelegramSide,
    telegram_features,
)
from bot.telegram.features.registry import FEATURES
from bot.telegram.menu import Menu
from bot.telegram.routers import get_menu
from bot.telegram.sender import Sender
from bot.telegram.texts import BUILT_IN, TextTable
from bot.telegram.wiring import core, operations, telegram
from services.chat import ChatService
from services.llm.client import OpenAIChatModel
from storage.database import Database
from storage.inbox import InboxRepository
from storage.voice import VoiceNoteRepository
from tools.shop.directory import ShopDirectory

log = logging.getLogger("bot")


@dataclass(frozen=True, slots=True)
class Application:
    """Everything `bot.telegram.app.run` starts and later closes."""

    settings: Settings
    db: Database
    bot: Bot
    dispatcher: Dispatcher
    sender: Sender
    chat_service: ChatService
    model: OpenAIChatModel
    inbox: InboxRepository
    intake: Intake
    health: Health
    tool_names: tuple[str, ...]
    features: tuple[Feature, ...]
    menu: Menu
    leadership: Leadership | None = None  # polling with several instances: one poller
    metrics: Metrics | None = None
    shop: ShopDirectory | None = None  # where orders are read (SHOP_BACKEND); closed at exit


async def build_application(
    settings: Settings,
    db: Database,
    texts: TextTable = BUILT_IN,
    *,
    specs: Sequence[TelegramFeatureSpec[Any, Any]] = FEATURES,
) -> Application:
    """Wire every object, in the order things must exist; nothing here talks to Telegram
    or the model yet. `specs`: the features (bot/telegram/features/registry.py)."""
    retry = core.build_storage_retry(settings)
    model = core.build_model(settings)
    transport = telegram.build_transport(settings, db)
    turn_slots = core.build_turn_slots(settings)

    shop = core.build_shop_directory(settings, db)
    needs = Needs(settings, db, shop, retry)
    built = build_chat_parts(specs, needs)  # the same list simulate builds from
    voice_notes = VoiceNoteRepository(db)
    instances = transport.instances
    on_telegram = TelegramNeeds(transport.sender, texts, model, turn_slots, voice_notes, instances)
    features = _telegram_sides(built, needs, on_telegram)

    registry = core.build_tools(settings, tools_of(built), shop=shop)
    metrics = operations.build_metrics(settings, registry.names)
    chat = core.build_core(
        settings,
        db,
        model=model,
        registry=registry,
        turn_slots=turn_slots,
        storage_retry=retry,
        record_observer=metrics,
        shop=shop,
        system_prompt=system_prompt(built),
    )
    pipeline = telegram.build_pipeline(
        settings, db, transport, core=chat, texts=texts, features=features, voice_notes=voice_notes
    )
    health = _watch(settings, db, pipeline, transport, features, metrics, shop)
    return Application(
        settings=settings,
        db=db,
        bot=transport.bot,
        dispatcher=pipeline.dispatcher,
        sender=transport.sender,
        chat_service=chat.chat_service,
        model=model,
        inbox=pipeline.inbox,
        intake=pipeline.intake,
        health=health,
        tool_names=registry.names,
        features=features,
        menu=get_menu(features),
        leadership=instances.leadership if instances else None,
        metrics=metrics,
        shop=shop,
    )


def _telegram_sides(
    built: Sequence[Built[TelegramSide[Any, Any]]], needs: Needs, on_telegram: TelegramNeeds
) -> tuple[Feature, ...]:
    """The Telegram sides of the features that are on; with actions off, their off side
    all the same, so a press on a card sent while they were on gets an answer and
    actions left unfinished end."""
    features = telegram_features(built, needs, on_telegram)
    if any(feature.name == "actions" for feature in features):
        return features
    return (*features, actions_off_feature(needs, on_telegram))


def _watch(
    settings: Settings,
    db: Database,
    pipeline: telegram.Pipeline,
    transport: telegram.Transport,
    features: Sequence[Feature],
    metrics: Metrics | None,
    shop: ShopDirectory,
) -> Health:
    """Health and the numbers /metrics reads at scrape time, built last: they read the
    pipeline, the sender, the features and the shop, which must exist first."""
    health = operations.build_health(settings, db, pipeline, shop)
    if metrics is not None:
        operations.watch_state(metrics, pipeline, transport.sender, features)
        operations.watch_shop(metrics, shop)
    return health
