"""The Telegram side: the bot, the sender, the responder, drafts, handlers and intake."""

from __future__ import annotations

import logging
import time
from collections.abc import Sequence
from dataclasses import dataclass
from zoneinfo import ZoneInfo

from aiogram import Bot, Dispatcher
from aiogram.client.session.aiohttp import AiohttpSession
from aiogram.client.telegram import TelegramAPIServer

from bot.claimed import Coordination, send_budget_share
from bot.config import Settings
from bot.context import HandlerDeps
from bot.drafts import Drafts
from bot.features import Feature
from bot.features.instances import Instances, build_instances
from bot.filters import LanguageMiddleware
from bot.handoff import HandoffDesk
from bot.intake import Intake
from bot.menu import help_with_commands
from bot.processing import UpdateProcessor
from bot.responder import Responder
from bot.response_types import keep_response_types
from bot.routers import get_menu, get_routers
from bot.sender import RETRYABLE_FAILURES, Sender
from bot.texts import BUILT_IN, TextTable
from bot.wiring.core import Core
from services.chat import ChatService
from services.feedback import FeedbackService
from services.limits import TurnSlots, UserMessageLimiter
from services.phones import PhoneVerification
from services.stats import Prices, StatsService
from storage.database import Database, StorageRetry
from storage.feedback import FeedbackRepository
from storage.inbox import InboxRepository
from storage.shop import ShopRepository
from storage.stats import StatsRepository
from storage.voice import VoiceNoteRepository

log = logging.getLogger("bot")


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
    handoff: HandoffDesk | None,
    voice_notes: VoiceNoteRepository,
) -> Pipeline:
    instances, sender = transport.instances, transport.sender
    coordination = instances.coordination if instances is not None else None
    retry = core.storage_retry
    inbox = InboxRepository(
        db, claim_owner=coordination.claims.owner if coordination is not None else None
    )
    responder = build_responder(inbox, sender, storage_retry=retry, handoff=handoff)
    drafts = build_drafts(settings, sender, core.turn_slots)
    deps = build_handler_deps(
        settings,
        db,
        chat_service=core.chat_service,
        responder=responder,
        sender=sender,
        drafts=drafts,
        voice_notes=voice_notes,
        storage_retry=retry,
        handoff=handoff,
    )
    dispatcher = build_dispatcher(
        deps, admin_ids=settings.admin_ids, texts=texts, features=features
    )
    intake = build_intake(
        settings,
        inbox,
        processor=UpdateProcessor(transport.bot, dispatcher, responder),
        responder=responder,
        drafts=drafts,
        sender=sender,
        storage_retry=retry,
        coordination=coordination,
    )
    return Pipeline(inbox, responder, dispatcher, intake)


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
    handoff: HandoffDesk | None,
) -> Responder:
    return Responder(
        inbox,
        sender,
        storage_retry=storage_retry,
        transient_failures=RETRYABLE_FAILURES,
        topic_lost=handoff.topic_lost if handoff is not None else None,
    )


def build_drafts(settings: Settings, sender: Sender, turn_slots: TurnSlots) -> Drafts:
    """STREAM_ANSWERS; a new turn streams while at most STREAM_MAX_CHATS chats' turns run
    or wait (that one included)."""
    return Drafts(
        sender,
        enabled=settings.stream_answers,
        max_busy_chats=settings.stream_max_chats,
        busy_chats=lambda: turn_slots.running + turn_slots.waiting + 1,
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
    drafts: Drafts,
    voice_notes: VoiceNoteRepository,
    storage_retry: StorageRetry,
    handoff: HandoffDesk | None,
) -> HandlerDeps:
    return HandlerDeps(
        chat_service=chat_service,
        limiter=UserMessageLimiter(
            per_minute=settings.user_messages_per_minute,
            per_day=settings.user_messages_per_day,
        ),
        # commands, contacts and button presses: a budget of their own (bot/limits.py)
        command_limiter=UserMessageLimiter(
            per_minute=settings.user_messages_per_minute,
            per_day=settings.user_messages_per_day,
        ),
        responder=responder,
        sender=sender,
        stats=build_stats_service(settings, db, voice_notes),
        feedback=FeedbackService(FeedbackRepository(db), storage_retry=storage_retry),
        phones=PhoneVerification(ShopRepository(db), storage_retry=storage_retry),
        drafts=drafts,
        max_input_chars=settings.max_input_chars,
        feedback_buttons=settings.feedback_enabled,
        handoff=handoff,
        order_updates=settings.order_updates_enabled,
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


def build_intake(
    settings: Settings,
    inbox: InboxRepository,
    *,
    processor: UpdateProcessor,
    responder: Responder,
    drafts: Drafts,
    sender: Sender,
    storage_retry: StorageRetry,
    coordination: Coordination | None,
) -> Intake:
    """Stored before acknowledged; a stop press reaches its draft the moment it is stored;
    with claimed chats, this instance runs the chats it holds at its share of the budget."""
    scheduling = None
    if coordination is not None:
        share = send_budget_share(sender.set_global_rate, settings.telegram_global_sends_per_s)
        scheduling = coordination.scheduling(inbox, on_live=share)
    return Intake(
        inbox,
        process=processor,
        deliver=responder.deliver,
        storage_retry=storage_retry,
        signal=drafts.signal,
        scheduling=scheduling,
    )
