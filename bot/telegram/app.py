"""The run: opens the database, has bot/telegram/wiring build everything, starts, runs, shuts down.

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
import signal
import sys
from collections.abc import AsyncIterator, Coroutine
from typing import Any

from aiogram.methods import SetWebhook
from aiohttp import web

from bot.runtime.config import BotMode, DatabaseChoice, Settings
from bot.runtime.demo_data import settle_demo_data
from bot.runtime.exit_codes import CannotStart, ExitCode
from bot.runtime.health import build_health_app
from bot.runtime.logs import CHATTY_LOGGERS, ClientErrorFilter, build_formatter
from bot.runtime.metrics import add_metrics_route
from bot.telegram.menu import menu_calls, set_commands
from bot.telegram.polling import Poller
from bot.telegram.sender import RETRYABLE_FAILURES
from bot.telegram.startup import check_model, check_shop, check_token, listen
from bot.telegram.texts import BUILT_IN, TextTable
from bot.telegram.webhook import build_runner, build_web_app
from bot.telegram.wiring import Application, build_application
from storage.database import Database, DatabaseOpenError, corruption, open_database
from storage.migrations import MigrationError

log = logging.getLogger("bot")

# Telegram keeps an unconfirmed update for at most 24 hours, so a finished inbox row
# older than this can never be redelivered; keeping it longer only keeps personal data.
INBOX_RETENTION_S = 7 * 86_400.0
# A stored answer that failed to send is retried on a later start only within a day:
# after that it is more confusing than helpful to the customer.
UNDELIVERED_RETRY_WINDOW_S = 86_400.0


def configure_logging(level: str, log_format: str = "text") -> None:
    """One stderr handler whose formatter keeps customer content out (bot/runtime/logs.py):
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


@contextlib.asynccontextmanager
async def receiving(app: Application) -> AsyncIterator[None]:
    """Take updates (polling or webhook) inside the block; stop taking them on exit."""
    settings = app.settings
    allowed = app.dispatcher.resolve_used_update_types()
    if settings.bot_mode is BotMode.POLLING:
        poller = Poller(app.bot, app.intake, allowed_updates=allowed, leadership=app.leadership)
        async with _health_server(app), _features_background(app):
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
    _add_feature_routes(app, web_app)
    runner = build_runner(web_app, read_timeout_s=settings.webhook_read_timeout_s)
    await runner.setup()
    try:
        await listen(runner, settings)
        await app.sender.call(
            SetWebhook(
                url=settings.webhook_full_url,
                secret_token=secret,
                allowed_updates=allowed,
                max_connections=settings.webhook_max_connections,
                drop_pending_updates=False,
            )
        )
        async with _features_background(app):
            yield
    finally:
        await runner.cleanup()


def _add_feature_routes(app: Application, web_app: web.Application) -> None:
    for feature in app.features:
        if feature.web_routes is not None:
            feature.web_routes(web_app)


@contextlib.asynccontextmanager
async def _features_background(app: Application) -> AsyncIterator[None]:
    """The features' background work, while updates are taken; cancelled at the stop."""
    tasks = [
        asyncio.create_task(feature.background(), name=f"feature-{feature.name}")
        for feature in app.features
        if feature.background is not None
    ]
    try:
        yield
    finally:
        for task in tasks:
            task.cancel()
        for task in tasks:
            with contextlib.suppress(asyncio.CancelledError):
                await task


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
    _add_feature_routes(app, web_app)
    runner = build_runner(web_app, read_timeout_s=settings.webhook_read_timeout_s)
    await runner.setup()
    try:
        await listen(runner, settings)
        log.info(
            "health check on %s:%s/healthz%s",
            settings.web_host,
            settings.web_port,
            ", metrics on /metrics" if app.metrics is not None else "",
        )
        yield
    finally:
        await runner.cleanup()


# The collector's thresholds once the bot runs (CPython's default: 700, 10, 10). Under
# the bench's 1,000-chat load the default ran ~4,400 young, ~400 middle and ~36 full
# collections per 6,000 turns — a fifth to a quarter of the bot's CPU — and they found
# next to nothing: a turn's objects are freed by reference counting, not by the
# collector. A large young generation lets short-lived objects die before they are ever
# scanned; full collections come after 100 middle ones. At 10,000 a young collection
# still came every ~0.2 s under load while a turn's objects live for seconds, so most
# were walked young and many again in the middle generation (~12 middle collections per
# 6,000 turns, ~105 ms each); at 50,000 the bot used 6-11 % less CPU per turn side by
# side with the same bot at 10,000, for young pauses of ~70-90 ms instead of ~11 ms
# (docs/benchmarks.md).
GC_THRESHOLDS = (50_000, 20, 100)


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
# chats did not change (docs/benchmarks.md).
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
    db = await _open(settings)
    app: Application | None = None
    token = settings.bot_token.get_secret_value()
    try:
        stop = _stop_event()
        app = await build_application(settings, db, texts)
        await _prepare(app, database)
        await _serve(app, texts, stop)
        finished = await app.intake.drain(settings.shutdown_grace_s)
        log.info("turns %s", "finished" if finished else "left for the next start")
    except CannotStart as exc:
        print(f"error: {exc}", file=sys.stderr)
        raise SystemExit(ExitCode.CANNOT_START) from None
    except Exception as exc:
        exit_if_corrupt(database, exc)
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


async def _open(settings: Settings) -> Database:
    """The database, migrated; one that cannot be used ends the start (one line, exit 2)
    before anything else is built."""
    database = settings.database
    try:
        return await open_database(
            database.target,
            pool_size=database.pool_size,
            integrity_check_s=settings.database_integrity_check_s,
        )
    except (DatabaseOpenError, MigrationError) as exc:
        print(f"error: {database.setting} {database.shown}: {exc}", file=sys.stderr)
        raise SystemExit(ExitCode.CANNOT_START) from None


async def _prepare(app: Application, database: DatabaseChoice) -> None:
    """Say what starts (no secrets), forget finished updates older than a week, and run
    the features' start-up work — before Telegram is asked anything."""
    settings = app.settings
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
    for feature in app.features:
        if feature.on_start is not None:
            await feature.on_start()


async def _serve(app: Application, texts: TextTable, stop: asyncio.Event) -> None:
    """The checks and resumption (`_start`), then updates until `stop`; a stop during
    start-up skips receiving. The commands menu is set on the side, never waited for."""
    if not await _first_of(_start(app), stop):
        log.info("stopping during start-up")
        return
    calls = menu_calls(app.menu, texts, app.settings.admin_ids)
    menu = asyncio.create_task(set_commands(app.sender, calls), name="commands-menu")
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


def exit_if_corrupt(database: DatabaseChoice, exc: BaseException) -> None:
    """Damaged data met before or after `ready` (a page the check at start did not reach)
    ends the process like a start-up check: one line naming the setting, exit 2."""
    damage = corruption(exc)
    if damage is not None:
        log.debug("corrupt database", exc_info=exc)
        print(
            f"error: {database.setting} {database.shown}: is corrupt ({damage}); restore a backup",
            file=sys.stderr,
        )
        raise SystemExit(ExitCode.CANNOT_START) from None


async def _start(app: Application) -> None:
    """Check the token and the model endpoint (failing fast on what a retry cannot fix),
    then resume what the previous run left unfinished.

    Answers that could not be delivered because Telegram was unreachable are tried again
    (within the day Telegram itself would have kept the update), never re-asking the model.
    """
    bot_id = await check_token(app.bot, app.settings)
    for feature in app.features:
        if feature.start_check is not None:
            await feature.start_check(bot_id)
    await check_model(app.model, app.settings)
    await check_shop(app.shop)
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


async def _nothing() -> None:
    pass


async def _close(app: Application) -> None:
    shop = app.shop.aclose if app.shop is not None else _nothing
    for name, closing in (
        ("chat service", app.chat_service.aclose),
        ("model client", app.model.aclose),
        ("shop client", shop),
        ("telegram session", app.bot.session.close),
        ("database", app.db.close),
    ):
        try:
            await closing()
        except Exception:
            log.exception("closing the %s failed", name)
