"""The Telegram side: the bot, the sender, the responder, handlers and intake."""

from __future__ import annotations

import logging
import time
from collections.abc import Sequence
from dataclasses import dataclass
from typing import TypeVar
from zoneinfo import ZoneInfo

from aiogram import Bot, Dispatcher
from aiogram.client.session.aiohttp import AiohttpSession
from aiogram.client.telegram import TelegramAPIServer

from bot.runtime.config import Settings
from bot.runtime.intake import Intake, local_scheduling
from bot.runtime.responder import Responder, no_other_topic
from bot.telegram.channel import TelegramChannel
from bot.telegram.context import NO_DRAFTS, HandlerDeps
from bot.telegram.features import Feature
from bot.telegram.features.instances import Instances, build_instances
from bot.telegram.filters import LanguageMiddleware
from bot.telegram.menu import help_with_commands
from bot.telegram.processing import UpdateProcessor
from bot.telegram.response_types import keep_response_types
from bot.telegram.routers import get_menu, get_routers
from bot.telegram.sender import RETRYABLE_FAILURES, Sender
from bot.telegram.texts import BUILT_IN, TextTable
from bot.telegram.wiring.core import Core
from services.chat import ChatService
from services.feedback import FeedbackService
from services.limits import UserMessageLimiter
from services.phones import PhoneVerification
from services.stats import Prices, StatsService
from storage.coordination import UNFENCED
from storage.database import Database, StorageRetry
from storage.feedback import FeedbackRepository
from storage.inbox import InboxRepository
from storage.shop import ShopRepository
from storage.stats import StatsRepository
from storage.voice import VoiceNoteRepository
from tools.shop.examples import ShopExamplesReader

log = logging.getLogger("bot")

_Part = TypeVar("_Part")


def build_bot(settings: Settings) -> Bot:
    if settings.telegram_api_url:
        session = AiohttpSession(api=TelegramAPIServer.from_base(settings.telegram_api_url))
    else:
        session = AiohttpSession()
    keep_response_types(session)
    return Bot(settings.bot_token.get_secret_value(), session=session)


@dataclass(frozen=True, slots=True)
class Transport:
    """The Bot API side, needed before anything that sends (a feature's desk, too)."""

    bot: Bot
    sender: Sender
    instances: Instances | None  # PostgreSQL: chats claimed by one instance at a time


def build_transport(settings: Settings, db: Database) -> Transport:
    bot = build_bot(settings)
    sender = build_sender(settings, bot)
    instances = build_instances(settings, db, sender)
    return Transport(bot, sender, instances)


@dataclass(frozen=True, slots=True)
class Pipeline:
    """An update's way: intake → dispatcher (handlers) → responder (store, then send)."""

    inbox: InboxRepository
    responder: Responder
    dispatcher: Dispatcher
    intake: Intake


def build_pipeline(
    settings: Settings,
    db: Database,
    transport: Transport,
    *,
    core: Core,
    texts: TextTable,
    features: Sequence[Feature],
    voice_notes: VoiceNoteRepository,
) -> Pipeline:
    """The pipeline with the features' parts in the core's work (`Feature`: the fence
    and scheduler of several instances, the lost-topic fallback, the intake's signals,
    drafts and after-turn parts for the handlers)."""
    sender, retry = transport.sender, core.storage_retry
    chats = one_at_most("chats", [f.chats for f in features])
    inbox = InboxRepository(db, fence=chats.inbox_fence if chats else UNFENCED)
    responder = build_responder(inbox, sender, storage_retry=retry, features=features)
    deps = build_handler_deps(
        settings,
        db,
        chat_service=core.chat_service,
        responder=responder,
        sender=sender,
        voice_notes=voice_notes,
        storage_retry=retry,
        features=features,
    )
    dispatcher = build_dispatcher(
        deps, admin_ids=settings.admin_ids, texts=texts, features=features
    )
    intake = Intake(
        inbox,
        process=UpdateProcessor(transport.bot, dispatcher, responder),
        deliver=responder.deliver,
        storage_retry=retry,
        # a stop press reaches its draft the moment it is stored; with claimed chats,
        # this instance runs the chats it holds at its share of the budget
        signals=[f.on_stored for f in features if f.on_stored is not None],
        scheduling=chats.scheduling if chats else local_scheduling,
    )
    return Pipeline(inbox, responder, dispatcher, intake)


def one_at_most(part: str, given: Sequence[_Part | None]) -> _Part | None:
    """The one feature's `part` that only one feature may give (the drafts the chat path
    streams into, who runs a chat's updates), or None; two are a wiring mistake."""
    parts = [p for p in given if p is not None]
    if len(parts) > 1:
        raise ValueError(f"two features give {part}")
    return parts[0] if parts else None


def build_sender(settings: Settings, bot: Bot) -> Sender:
    """Every Bot API call, paced per chat and overall."""
    return Sender(
        bot,
        per_chat_interval_s=settings.telegram_chat_interval_s,
        global_per_second=settings.telegram_global_sends_per_s,
    )


def build_responder(
    inbox: InboxRepository,
    sender: Sender,
    *,
    storage_retry: StorageRetry,
    features: Sequence[Feature],
) -> Responder:
    """Stores, then sends; a part whose forum topic was deleted goes where the first
    feature that gives one says (handoff: the customer's new topic)."""
    topic_lost = next((f.topic_lost for f in features if f.topic_lost is not None), None)
    return Responder(
        inbox,
        TelegramChannel(sender),
        storage_retry=storage_retry,
        transient_failures=RETRYABLE_FAILURES,
        topic_lost=topic_lost or no_other_topic,
    )


def build_stats_service(
    settings: Settings, db: Database, voice: VoiceNoteRepository
) -> StatsService:
    """/stats in STATS_TIMEZONE, with a cost estimate when the model's prices are set."""
    prices = None
    if (
        settings.model_price_input_per_1m is not None
        and settings.model_price_output_per_1m is not None
    ):
        prices = Prices(
            input_per_1m=settings.model_price_input_per_1m,
            output_per_1m=settings.model_price_output_per_1m,
            cached_input_per_1m=settings.model_price_cached_input_per_1m,
            currency=settings.model_price_currency,
        )
    return StatsService(
        StatsRepository(db),
        clock=time.time,
        voice=voice,
        timezone=ZoneInfo(settings.stats_timezone),
        prices=prices,
        currency=settings.model_price_currency,
    )


def build_handler_deps(
    settings: Settings,
    db: Database,
    *,
    chat_service: ChatService,
    responder: Responder,
    sender: Sender,
    voice_notes: VoiceNoteRepository,
    storage_retry: StorageRetry,
    features: Sequence[Feature],
) -> HandlerDeps:
    drafts = one_at_most("drafts", [f.drafts for f in features])
    return HandlerDeps(
        chat_service=chat_service,
        limiter=UserMessageLimiter(
            per_minute=settings.user_messages_per_minute,
            per_day=settings.user_messages_per_day,
        ),
        # commands, contacts and button presses: a budget of their own (bot/telegram/limits.py)
        command_limiter=UserMessageLimiter(
            per_minute=settings.user_messages_per_minute,
            per_day=settings.user_messages_per_day,
        ),
        responder=responder,
        sender=sender,
        stats=build_stats_service(settings, db, voice_notes),
        feedback=FeedbackService(FeedbackRepository(db), storage_retry=storage_retry),
        phones=PhoneVerification(ShopRepository(db), storage_retry=storage_retry),
        shop_examples=ShopExamplesReader(ShopRepository(db)),
        max_input_chars=settings.max_input_chars,
        feedback_buttons=settings.feedback_enabled,
        drafts=drafts or NO_DRAFTS,
        after_turn=tuple(f.after_turn for f in features if f.after_turn is not None),
        person_button=any(f.person_button for f in features),
        offer_rows=tuple(f.offer_rows for f in features if f.offer_rows is not None),
    )


def build_dispatcher(
    deps: HandlerDeps,
    *,
    admin_ids: frozenset[int],
    texts: TextTable = BUILT_IN,
    features: Sequence[Feature] = (),
) -> Dispatcher:
    """The dispatcher with the core routers and the features'; `texts` are the shop's
    effective fixed texts, handed out per update (`ctx`) by the language middleware."""
    dispatcher = Dispatcher()
    # /help lists the customers' menu: the core's commands and the features' that are on
    texts = help_with_commands(texts, get_menu(features).customers)
    dispatcher.update.outer_middleware(LanguageMiddleware(texts))
    dispatcher.include_routers(*get_routers(deps, admin_ids=admin_ids, features=features))
    return dispatcher
