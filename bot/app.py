"""Composition root: builds every object from `Settings`, wires them, runs, shuts down.

Start-up order matters for the inbox guarantees: the database opens first (a database
that cannot be used, e.g. corrupt, read-only, locked or a folder, a PostgreSQL server that
cannot be reached, or a newer schema, ends the process with one line naming DATABASE_PATH
or DATABASE_URL (never its password) and status 2, as does a WEB_HOST/WEB_PORT
the webhook server cannot listen on), then Telegram is asked who the bot is (`getMe`) and
the model endpoint for its models (`GET /models`) — a rejected token, key or model ends the
start with one line naming the setting and status 2, an unreachable one is asked again
until it answers — then the inbox resumes what a previous run left unfinished, and only
then does the bot take new updates (polling or webhook). Shutdown reverses it: stop
taking updates, let in-flight turns finish within SHUTDOWN_GRACE_S, then close the chat
service, the Telegram session and the database. Whatever did not finish stays in the
inbox for the next start.
"""

from __future__ import annotations

import asyncio
import contextlib
import gc
import logging
import re
import signal
import sys
import time
from collections.abc import AsyncIterator, Coroutine
from dataclasses import dataclass
from typing import Any
from urllib.parse import urlparse
from zoneinfo import ZoneInfo

from aiogram import Bot, Dispatcher
from aiogram.client.session.aiohttp import AiohttpSession
from aiogram.client.telegram import TelegramAPIServer
from aiogram.exceptions import (
    ClientDecodeError,
    TelegramNetworkError,
    TelegramNotFound,
    TelegramRetryAfter,
    TelegramServerError,
    TelegramUnauthorizedError,
)
from aiogram.methods import GetMe, SetMyCommands, SetWebhook
from aiogram.types import BotCommand, BotCommandScopeChat, BotCommandScopeDefault
from aiohttp import web

from bot.claimed import Coordination, send_budget_share
from bot.config import BotMode, Settings
from bot.demo_data import settle_demo_data
from bot.drafts import Drafts
from bot.exit_codes import ExitCode
from bot.filters import LanguageMiddleware
from bot.handoff import HandoffDesk, HandoffSetupError
from bot.health import Health, build_health_app
from bot.intake import Intake
from bot.leadership import polling_leadership
from bot.logs import CHATTY_LOGGERS, ClientErrorFilter, build_formatter
from bot.metrics import Metrics, add_metrics_route
from bot.polling import Poller
from bot.processing import UpdateProcessor
from bot.responder import Responder
from bot.response_types import keep_response_types
from bot.routers import get_routers
from bot.sender import RETRYABLE_FAILURES, Sender
from bot.texts import BUILT_IN, TextTable
from bot.webhook import build_runner, build_web_app
from services.chat import DEFAULT_SHOP_NAME, ChatService, build_chat_service
from services.feedback import FeedbackService
from services.handoff import HandoffService
from services.limits import UserMessageLimiter
from services.llm.client import OpenAIChatModel
from services.llm.errors import LLMAuthenticationError, LLMError
from services.llm.types import ModelCheck
from services.loop import BoundedToolLoop
from services.phones import PhoneVerification
from services.prompts import build_prompt_registry
from services.stats import Prices, StatsService
from services.voice import VoiceTranscription
from storage.conversations import ConversationRepository
from storage.coordination import ClaimRepository
from storage.database import Database, DatabaseOpenError, StorageRetry, open_database
from storage.feedback import FeedbackRepository
from storage.handoffs import HandoffRepository
from storage.inbox import FINAL_STATUSES, InboxRepository
from storage.migrations import MigrationError
from storage.shop import ShopRepository
from storage.stats import StatsRepository
from storage.voice import VoiceNoteRepository
from tools.executor import ToolExecutor
from tools.factory import build_registry

log = logging.getLogger("bot")

# Telegram keeps an unconfirmed update for at most 24 hours, so a finished inbox row
# older than this can never be redelivered; keeping it longer only keeps personal data.
INBOX_RETENTION_S = 7 * 86_400.0
# A stored answer that failed to send is retried on a later start only within a day:
# after that it is more confusing than helpful to the customer.
UNDELIVERED_RETRY_WINDOW_S = 86_400.0

# (command, Russian description, English description)
CUSTOMER_COMMANDS = (
    ("start", "Что умеет бот", "What the bot can do"),
    ("help", "Справка", "Help"),
    ("new", "Начать разговор заново", "Start the conversation over"),
    ("phone", "Подтвердить номер телефона", "Verify my phone number"),
    ("forget_phone", "Удалить мой номер телефона", "Remove my phone number"),
)
ADMIN_COMMANDS = (("stats", "Статистика поддержки", "Support statistics"),)
# in the menu only when OPERATOR_CHAT_ID is set
HANDOFF_COMMANDS = (("operator", "Позвать сотрудника магазина", "Talk to a person"),)


@dataclass(slots=True)
class Application:
    """Everything `run` starts and later closes."""

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
    voice: VoiceTranscription
    handoff: HandoffDesk | None = None
    metrics: Metrics | None = None


def configure_logging(level: str, log_format: str = "text") -> None:
    """One stderr handler whose formatter keeps customer content out (bot/logs.py):
    readable lines, or with LOG_FORMAT=json one JSON object per line.

    At LOG_LEVEL=DEBUG the libraries that log queries or request bodies (aiosqlite, the
    openai SDK, httpx) stay at INFO, so DEBUG carries no message text either.
    """
    handler = logging.StreamHandler(sys.stderr)
    handler.setFormatter(build_formatter(log_format))
    logging.basicConfig(level=level, handlers=[handler])
    # aiogram logs one INFO line per update; keep it, but not the HTTP chatter
    logging.getLogger("aiohttp.access").setLevel(logging.WARNING)
    logging.getLogger("aiohttp.server").addFilter(ClientErrorFilter())
    for name in CHATTY_LOGGERS:
        logging.getLogger(name).setLevel(max(logging.INFO, logging.getLogger().level))
    logging.getLogger("httpx").setLevel(logging.WARNING)
    logging.getLogger("httpx2").setLevel(logging.WARNING)  # the openai SDK's HTTP client


def build_bot(settings: Settings) -> Bot:
    if settings.telegram_api_url:
        session = AiohttpSession(api=TelegramAPIServer.from_base(settings.telegram_api_url))
    else:
        session = AiohttpSession()
    keep_response_types(session)
    return Bot(settings.bot_token.get_secret_value(), session=session)


def build_dispatcher(
    *,
    admin_ids: frozenset[int],
    texts: TextTable = BUILT_IN,
    operator_chat_id: int | None = None,
    feedback_buttons: bool = True,
    **services: Any,
) -> Dispatcher:
    """The dispatcher with its routers; `services` become workflow data for handlers
    (chat_service, limiter, responder, sender, stats, feedback, max_input_chars, and
    `handoff` when OPERATOR_CHAT_ID is set); `texts` are the shop's effective fixed texts,
    handed out per update by the language middleware. `feedback_buttons`
    (FEEDBACK_ENABLED) puts 👍/👎 under AI answers; with handoff configured a 👎 offers
    "talk to a person"."""
    dispatcher = Dispatcher(**services)
    dispatcher.update.outer_middleware(LanguageMiddleware(texts))
    dispatcher.include_routers(
        *get_routers(
            admin_ids=admin_ids,
            operator_chat_id=operator_chat_id,
            feedback_buttons=feedback_buttons,
        )
    )
    return dispatcher


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


async def build_application(
    settings: Settings, db: Database, texts: TextTable = BUILT_IN
) -> Application:
    """Wire every object; nothing here talks to Telegram or the model yet."""
    shop = ShopRepository(db)

    model = OpenAIChatModel(
        api_key=settings.openai_api_key.get_secret_value(),
        model=settings.openai_model,
        base_url=settings.openai_base_url,
        fallback_models=settings.openai_fallback_models,
        timeout_s=settings.openai_timeout_s,
        max_retries=settings.openai_max_retries,
    )
    storage_retry = StorageRetry(
        first_delay_s=settings.storage_retry_first_delay_s,
        give_up_after_s=settings.storage_retry_give_up_s,
    )
    # handoff to operators: only with OPERATOR_CHAT_ID (else no tool, no command, no router)
    handoffs = (
        HandoffService(
            HandoffRepository(db),
            ConversationRepository(db),
            hours=settings.handoff_hours,
            storage_retry=storage_retry,
            clock=time.time,
        )
        if settings.operator_chat_id is not None
        else None
    )
    registry = build_registry(
        order_lookups_per_hour=settings.order_lookups_per_hour, handoffs=handoffs
    )
    metrics = (
        Metrics(
            tool_names=registry.names,
            model_names=(settings.openai_model, *settings.openai_fallback_models),
        )
        if settings.metrics_enabled
        else None
    )
    loop = BoundedToolLoop(
        model,
        registry,
        ToolExecutor(registry),
        max_steps=settings.tool_max_steps,
        turn_timeout_s=settings.turn_timeout_s,
        parallel_tool_calls=settings.parallel_tool_calls,
    )
    prompts = build_prompt_registry()
    chat_service = build_chat_service(
        db=db,
        loop=loop,
        model=model,
        prompts=prompts,
        shop=shop,
        shop_name=settings.shop_name or DEFAULT_SHOP_NAME,
        history_token_budget=settings.history_token_budget,
        summary_max_tokens=settings.summary_max_tokens,
        max_concurrent_turns=settings.max_concurrent_turns,
        storage_retry=storage_retry,
        draft_interval_s=settings.draft_interval_s,
        record_observer=metrics,
    )

    bot = build_bot(settings)
    coordination = build_coordination(settings, db)
    sender = Sender(
        bot,
        per_chat_interval_s=settings.telegram_chat_interval_s,
        global_per_second=settings.telegram_global_sends_per_s,
        send_guard=coordination.fence.check if coordination is not None else None,
    )
    desk = (
        HandoffDesk(
            operator_chat_id=settings.operator_chat_id,
            service=handoffs,
            sender=sender,
            texts=texts,
        )
        if handoffs is not None and settings.operator_chat_id is not None
        else None
    )
    drafts = Drafts(
        sender, enabled=settings.stream_answers, max_busy_chats=settings.stream_max_chats
    )
    inbox = InboxRepository(
        db, claim_owner=coordination.claims.owner if coordination is not None else None
    )
    voice_notes = VoiceNoteRepository(db)
    voice = VoiceTranscription(
        model,
        voice_notes,
        model=settings.transcription_model,
        max_seconds=settings.voice_max_seconds,
        storage_retry=storage_retry,
    )
    responder = Responder(
        inbox,
        sender,
        storage_retry=storage_retry,
        transient_failures=RETRYABLE_FAILURES,
        topic_lost=desk.topic_lost if desk is not None else None,
    )
    handoff_data: dict[str, Any] = {"handoff": desk} if desk is not None else {}

    dispatcher = build_dispatcher(
        admin_ids=settings.admin_ids,
        texts=texts,
        operator_chat_id=settings.operator_chat_id,
        feedback_buttons=settings.feedback_enabled,
        chat_service=chat_service,
        limiter=UserMessageLimiter(
            per_minute=settings.user_messages_per_minute,
            per_day=settings.user_messages_per_day,
        ),
        responder=responder,
        sender=sender,
        stats=build_stats_service(settings, db, voice_notes),
        feedback=FeedbackService(FeedbackRepository(db), storage_retry=storage_retry),
        phones=PhoneVerification(shop, storage_retry=storage_retry),
        max_input_chars=settings.max_input_chars,
        voice=voice,
        **handoff_data,
        drafts=drafts,
    )

    intake = Intake(
        inbox,
        process=UpdateProcessor(bot, dispatcher, responder),
        deliver=responder.deliver,
        storage_retry=storage_retry,
        signal=drafts.signal,
        scheduling=(
            coordination.scheduling(
                inbox,
                on_live=send_budget_share(
                    sender.set_global_rate, settings.telegram_global_sends_per_s
                ),
            )
            if coordination is not None
            else None
        ),
    )
    drafts.busy_chats = lambda: intake.busy_chats  # load: chats being answered right now
    health = Health(
        db=db,
        inbox=inbox,
        intake=intake,
        delivery=responder,
        delivery_threshold_s=settings.health_delivery_threshold_s,
    )
    if metrics is not None:
        watch_state(metrics, inbox=inbox, sender=sender, intake=intake, handoffs=handoffs)
    return Application(
        settings=settings,
        db=db,
        bot=bot,
        dispatcher=dispatcher,
        sender=sender,
        chat_service=chat_service,
        model=model,
        inbox=inbox,
        intake=intake,
        health=health,
        tool_names=registry.names,
        voice=voice,
        handoff=desk,
        metrics=metrics,
    )


def build_coordination(settings: Settings, db: Database) -> Coordination | None:
    """Several instances may share a PostgreSQL database: chats are claimed there (bot/
    claimed.py). SQLite has one process, which keeps its chats in memory."""
    if db.dialect.name != "postgres":
        return None
    log.info(
        "instance %s: chats are claimed in the database, leases of %.0f s",
        settings.instance_id,
        settings.claim_lease_s,
    )
    claims = ClaimRepository(db, owner=settings.instance_id, lease_s=settings.claim_lease_s)
    return Coordination(claims)


def watch_state(
    metrics: Metrics,
    *,
    inbox: InboxRepository,
    sender: Sender,
    intake: Intake,
    handoffs: HandoffService | None = None,
) -> None:
    """The numbers /metrics reads at scrape time (nothing on the hot path)."""
    metrics.register_gauge(
        "support_bot_inbox_updates",
        "Updates waiting in the inbox: pending (not answered yet) or answered (reply "
        "stored, not delivered yet).",
        inbox.count_unfinished,
        label="status",
    )
    metrics.register_counter(
        "support_bot_inbox_finished",
        "Updates finished by this process, by status: delivered, failed, unknown (the "
        "reply may not have arrived), ignored (nothing to answer).",
        lambda: {status: inbox.finished[status] for status in FINAL_STATUSES},
        label="status",
    )
    metrics.register_gauge(
        "support_bot_send_queue_depth",
        "Outgoing Bot API requests waiting for their pacing turn (per chat or global rate).",
        lambda: sender.queued_requests,
    )
    metrics.register_gauge(
        "support_bot_busy_chats", "Chats with an update being handled.", lambda: intake.busy_chats
    )
    metrics.register_gauge(
        "support_bot_stalled_chats",
        "Chats whose updates wait for a restart (storage failed beyond the retry bound).",
        lambda: intake.stalled_chats,
    )
    metrics.register_counter(
        "support_bot_flood_control_waits",
        "Times Telegram's flood control (429 retry_after) was waited out.",
        lambda: sender.flood_waits,
    )
    metrics.register_counter(
        "support_bot_flood_control_wait_seconds",
        "Seconds spent waiting out Telegram's flood control.",
        lambda: sender.flood_wait_s,
    )
    if handoffs is not None:  # OPERATOR_CHAT_ID set
        metrics.register_gauge(
            "support_bot_handoffs_open",
            "Conversations handed to a person and not closed yet.",
            handoffs.open_count,
        )


class CannotStart(Exception):
    """A setting cannot be used as given (e.g. WEB_PORT is taken); the message names it."""


class TokenRejected(CannotStart):
    """Telegram answered getMe with 401 or 404: BOT_TOKEN is wrong, revoked or deleted."""


# Waits between start-up checks of an unreachable Telegram or model endpoint: quick at
# first (a network blip), then every 30 s for as long as it takes; SIGTERM ends it.
STARTUP_RETRY_DELAYS_S = (1.0, 2.0, 4.0, 8.0, 15.0, 30.0)


def _retry_delay(attempt: int) -> float:
    return STARTUP_RETRY_DELAYS_S[min(attempt, len(STARTUP_RETRY_DELAYS_S) - 1)]


def _host_of(url: str | None, default: str) -> str:
    return urlparse(url).netloc if url else default


async def check_token(app: Application) -> int:
    """getMe until it succeeds: 401/404 end the start (exit 2, one line naming BOT_TOKEN);
    an unreachable or failing Telegram is asked again, with a WARNING line each time.
    Returns the bot's user id."""
    host = _host_of(app.settings.telegram_api_url, "api.telegram.org")
    attempt = 0
    while True:
        try:
            me = await app.bot(GetMe())
        except TelegramUnauthorizedError:
            raise TokenRejected(
                "BOT_TOKEN was rejected by Telegram (401 Unauthorized): the token is wrong "
                "or was revoked; copy it again from @BotFather"
            ) from None
        except TelegramNotFound:
            raise TokenRejected(
                "BOT_TOKEN is not known to Telegram (404 Not Found): the bot was deleted or "
                "the token is incomplete; copy it again from @BotFather"
            ) from None
        except (TelegramNetworkError, TelegramServerError, ClientDecodeError) as exc:
            delay = _retry_delay(attempt)
            log.warning("%s; retrying in %.0f s", _telegram_problem(exc, host), delay)
        except TelegramRetryAfter as exc:
            delay = float(exc.retry_after)
            log.warning("Telegram asks to wait (flood control); retrying in %.0f s", delay)
        else:
            log.info("bot @%s (id %s)", me.username, me.id)
            return me.id
        attempt += 1
        await asyncio.sleep(delay)


def _telegram_problem(exc: Exception, host: str) -> str:
    if isinstance(exc, TelegramNetworkError):
        return f"Telegram is unreachable at {host}"
    if isinstance(exc, TelegramServerError):
        return f"Telegram at {host} answered with a server error"
    return f"{host} does not answer like the Bot API (check TELEGRAM_API_URL)"


async def check_model(app: Application) -> None:
    """The model endpoint answers, accepts the key and offers the configured models.

    One `GET /models` (free). A rejected key or a model the endpoint does not offer ends
    the start (exit 2, one line naming the setting); an endpoint that cannot be reached
    is asked again with a WARNING line, like Telegram; an endpoint that does not list its
    models cannot be checked: one WARNING and the start goes on.
    """
    settings = app.settings
    if not settings.openai_startup_check:
        return
    host = _host_of(settings.openai_base_url, "api.openai.com")
    attempt = 0
    while True:
        try:
            result = await app.model.check()
        except LLMAuthenticationError as exc:
            raise CannotStart(
                f"OPENAI_API_KEY was rejected by the model endpoint {host} ({_http_status(exc)})"
            ) from None
        except LLMError:
            delay = _retry_delay(attempt)
            log.warning(
                "the model endpoint %s (OPENAI_BASE_URL) is unreachable or failing; "
                "retrying in %.0f s",
                host,
                delay,
            )
            attempt += 1
            await asyncio.sleep(delay)
            continue
        _judge_model_check(result, settings, host)
        return


def _judge_model_check(result: ModelCheck, settings: Settings, host: str) -> None:
    if not result.listed:
        log.warning(
            "cannot check OPENAI_MODEL: the model endpoint %s does not list its models "
            "(%s); continuing",
            host,
            result.detail,
        )
        return
    if not result.missing:
        models = (settings.openai_model, *settings.openai_fallback_models)
        log.info("model endpoint %s offers %s", host, ", ".join(models))
        return
    problems = []
    if settings.openai_model in result.missing:
        problems.append(f'OPENAI_MODEL "{settings.openai_model}"')
    fallbacks = [name for name in result.missing if name != settings.openai_model]
    if fallbacks:
        names = ", ".join(f'"{name}"' for name in fallbacks)
        problems.append(f"OPENAI_FALLBACK_MODELS {names}")
    raise CannotStart(
        f"{' and '.join(problems)}: not offered by the model endpoint {host} (GET /models)"
    )


def _http_status(exc: Exception) -> str:
    """ "HTTP 401" out of the client's error text (which never holds the key)."""
    found = re.search(r"HTTP \d{3}", str(exc))
    return found.group(0) if found else type(exc).__name__


async def set_commands(app: Application) -> None:
    """The commands menu; optional, so a failure is a warning, never a stop."""

    def commands(items: tuple[tuple[str, str, str], ...], english: bool) -> list[BotCommand]:
        return [BotCommand(command=c, description=en if english else ru) for c, ru, en in items]

    customer = CUSTOMER_COMMANDS + (HANDOFF_COMMANDS if app.handoff is not None else ())
    calls: list[SetMyCommands] = []
    for english, language in ((False, None), (True, "en")):
        calls.append(
            SetMyCommands(
                commands=commands(customer, english),
                scope=BotCommandScopeDefault(),
                language_code=language,
            )
        )
        for admin_id in sorted(app.settings.admin_ids):
            calls.append(
                SetMyCommands(
                    commands=commands(customer + ADMIN_COMMANDS, english),
                    scope=BotCommandScopeChat(chat_id=admin_id),
                    language_code=language,
                )
            )
    for call in calls:
        try:
            await app.sender.call(call)
        except Exception as exc:
            log.warning("could not set the commands menu (%s); continuing", type(exc).__name__)
            return


@contextlib.asynccontextmanager
async def receiving(app: Application) -> AsyncIterator[None]:
    """Take updates (polling or webhook) inside the block; stop taking them on exit."""
    settings = app.settings
    allowed = app.dispatcher.resolve_used_update_types()
    if settings.bot_mode is BotMode.POLLING:
        leadership = polling_leadership(settings.database_url, settings.bot_token)
        poller = Poller(app.bot, app.intake, allowed_updates=allowed, leadership=leadership)
        if leadership is not None and app.metrics is not None:
            app.metrics.register_gauge(
                "support_bot_polling_leader",
                "1 while this instance holds the polling leader lock (PostgreSQL), else 0.",
                lambda: int(leadership.is_leader),
            )
        async with _health_server(app):
            task = asyncio.create_task(poller.run(), name="polling")
            try:
                yield
            finally:
                task.cancel()
                with contextlib.suppress(asyncio.CancelledError):
                    await task
        return

    secret = settings.webhook_secret.get_secret_value() if settings.webhook_secret else ""
    web_app = build_web_app(
        intake=app.intake,
        health=app.health,
        path=settings.webhook_path,
        secret=secret,
        read_timeout_s=settings.webhook_read_timeout_s,
    )
    if app.metrics is not None:
        add_metrics_route(web_app, app.metrics)
    runner = build_runner(web_app, read_timeout_s=settings.webhook_read_timeout_s)
    await runner.setup()
    try:
        await _listen(runner, settings)
        await app.sender.call(
            SetWebhook(
                url=settings.webhook_full_url,
                secret_token=secret,
                allowed_updates=allowed,
                max_connections=settings.webhook_max_connections,
                drop_pending_updates=False,
            )
        )
        yield
    finally:
        await runner.cleanup()


@contextlib.asynccontextmanager
async def _health_server(app: Application) -> AsyncIterator[None]:
    """Polling mode: /healthz (and /metrics unless METRICS_ENABLED=false) on
    WEB_HOST:WEB_PORT when HEALTH_ENABLED (else no port is opened)."""
    settings = app.settings
    if not settings.health_enabled:
        yield
        return
    web_app = build_health_app(app.health)
    if app.metrics is not None:
        add_metrics_route(web_app, app.metrics)
    runner = build_runner(web_app, read_timeout_s=settings.webhook_read_timeout_s)
    await runner.setup()
    try:
        await _listen(runner, settings)
        log.info(
            "health check on %s:%s/healthz%s",
            settings.web_host,
            settings.web_port,
            ", metrics on /metrics" if app.metrics is not None else "",
        )
        yield
    finally:
        await runner.cleanup()


async def _listen(runner: web.AppRunner, settings: Settings) -> None:
    """Start serving on WEB_HOST:WEB_PORT; a failure is one line (`CannotStart`)."""
    try:
        await web.TCPSite(runner, settings.web_host, settings.web_port).start()
    except OSError as exc:
        raise CannotStart(
            f"WEB_HOST/WEB_PORT {settings.web_host}:{settings.web_port}: cannot listen "
            f"there: {_bind_problem(exc)}"
        ) from None


def _bind_problem(exc: OSError) -> str:
    """ "address already in use" out of asyncio's "error while attempting to bind on ..." """
    text = exc.strerror or str(exc)
    return text.rsplit(": ", 1)[-1]


# The collector's thresholds once the bot runs (CPython's default: 700, 10, 10). Under
# the bench's 1,000-chat load the default ran ~4,400 young, ~400 middle and ~36 full
# collections per 6,000 turns — a fifth to a quarter of the bot's CPU — and they found
# next to nothing: a turn's objects are freed by reference counting, not by the
# collector. A young generation of 10,000 lets short-lived objects die before they are
# ever scanned; full collections come after 100 middle ones (docs/benchmarks.md).
GC_THRESHOLDS = (10_000, 20, 100)


def freeze_startup_objects() -> None:
    """Keep the cyclic garbage collector away from everything built at start-up.

    Importing aiogram, openai and pydantic leaves about 250,000 long-lived objects, and a
    full collection walks all of them: a 150-250 ms pause of the whole bot whenever one
    runs. The bench saw these pauses as the p99 of the bot's self-time (docs/benchmarks.md:
    p99 177-215 ms before, 38-41 ms after). Frozen objects (modules, classes, the wiring)
    live as long as the process anyway. No collection first: it would add ~170 ms to the
    start for little garbage.

    Then the thresholds are raised (`GC_THRESHOLDS`): the collector stays on, so cycles
    made later are still freed, just in fewer, larger young collections.
    """
    gc.freeze()
    gc.set_threshold(*GC_THRESHOLDS)


# How long a thread may hold the GIL while another waits for it (CPython's default: 5 ms).
# Every database call is a hand-off between the event loop and SQLite's worker thread:
# a query that finishes while the loop runs Python waits for the loop to let go of the
# GIL, up to the whole interval, and a turn makes a dozen such calls. At 50 chats the
# bench's self-time p99 fell from 138-169 ms to 76-97 ms with 1 ms; throughput at 1,000
# chats did not change (docs/benchmarks.md, issue 19).
SWITCH_INTERVAL_S = 0.001


def shorten_switch_interval() -> None:
    """Let SQLite's worker thread hand a result back within 1 ms (see SWITCH_INTERVAL_S)."""
    sys.setswitchinterval(SWITCH_INTERVAL_S)


def _stop_event() -> asyncio.Event:
    stop = asyncio.Event()
    loop = asyncio.get_running_loop()
    for sig in (signal.SIGTERM, signal.SIGINT):
        loop.add_signal_handler(sig, stop.set)
    return stop


async def run(settings: Settings, texts: TextTable = BUILT_IN) -> None:
    """Run the bot until SIGTERM/SIGINT; see the module docstring for the order of steps.

    `texts`: the shop's fixed texts, loaded and checked by the CLI before anything starts.
    """
    configure_logging(settings.log_level, settings.log_format)
    database = settings.database
    try:
        db = await open_database(database.target, pool_size=database.pool_size)
    except (DatabaseOpenError, MigrationError) as exc:
        print(f"error: {database.setting} {database.shown}: {exc}", file=sys.stderr)
        raise SystemExit(ExitCode.CANNOT_START) from None

    app: Application | None = None
    token = settings.bot_token.get_secret_value()
    try:
        stop = _stop_event()
        app = await build_application(settings, db, texts)
        log.info(
            "starting: mode=%s model=%s database=%s tools=%s loop=%s",
            settings.bot_mode.value,
            settings.openai_model,
            database.shown,
            ",".join(app.tool_names),
            type(asyncio.get_running_loop()).__module__.split(".")[0],
        )
        pruned = await app.inbox.prune(older_than_s=INBOX_RETENTION_S)
        if pruned:
            log.info("inbox: removed %d finished update(s) older than 7 days", pruned)
        await app.voice.forget_answered()
        if await _first_of(_start(app), stop):
            # the commands menu is optional and may retry for a while: never wait for it
            menu = asyncio.create_task(set_commands(app), name="commands-menu")
            freeze_startup_objects()
            shorten_switch_interval()
            try:
                async with receiving(app):
                    log.info("ready")
                    await stop.wait()
                # logged once the web server or the poller is closed, so it is true
                log.info("stopping: no new updates; waiting for running turns")
            finally:
                menu.cancel()
                with contextlib.suppress(asyncio.CancelledError):
                    await menu
        else:
            log.info("stopping during start-up")
        finished = await app.intake.drain(settings.shutdown_grace_s)
        log.info("turns %s", "finished" if finished else "left for the next start")
    except CannotStart as exc:
        print(f"error: {exc}", file=sys.stderr)
        raise SystemExit(ExitCode.CANNOT_START) from None
    except Exception as exc:
        # one readable line; the traceback only at DEBUG (messages are scrubbed of the token)
        log.debug("fatal error", exc_info=True)
        log.error("fatal: %s: %s", type(exc).__name__, str(exc).replace(token, "<token>"))
        raise SystemExit(ExitCode.FAILED) from None
    finally:
        if app is not None:
            await _close(app)
        else:
            await db.close()
        log.info("stopped")


async def _start(app: Application) -> None:
    """Check the token and the model endpoint (failing fast on what a retry cannot fix),
    then resume what the previous run left unfinished.

    Answers that could not be delivered because Telegram was unreachable are tried again
    (within the day Telegram itself would have kept the update), never re-asking the model.
    """
    bot_id = await check_token(app)
    if app.handoff is not None:
        try:
            await app.handoff.check_operator_chat(bot_id)
        except HandoffSetupError as exc:
            raise CannotStart(str(exc)) from None
    await check_model(app)
    await settle_demo_data(app.db, seed=app.settings.seed_demo_data)
    reopened = await app.inbox.reopen_failed(
        reasons=RETRYABLE_FAILURES, newer_than_s=UNDELIVERED_RETRY_WINDOW_S
    )
    if reopened:
        log.info("inbox: %d stored answer(s) that failed to send will be tried again", reopened)
    await app.intake.resume()


async def _first_of(starting: Coroutine[Any, Any, None], stop: asyncio.Event) -> bool:
    """Run the start-up steps unless SIGTERM comes first; True when they completed.

    With Telegram unreachable the start-up calls retry for up to a minute, and a stop
    request must not wait for that.
    """
    start_task = asyncio.create_task(starting, name="start-up")
    stop_task = asyncio.create_task(stop.wait(), name="stop-wait")
    await asyncio.wait({start_task, stop_task}, return_when=asyncio.FIRST_COMPLETED)
    for task in (start_task, stop_task):
        if not task.done():
            task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await task
    if start_task.cancelled():
        return False
    start_task.result()  # a rejected token ends the process here
    return True


async def _close(app: Application) -> None:
    for name, closing in (
        ("chat service", app.chat_service.aclose),
        ("model client", app.model.aclose),
        ("telegram session", app.bot.session.close),
        ("database", app.db.close),
    ):
        try:
            await closing()
        except Exception:
            log.exception("closing the %s failed", name)
