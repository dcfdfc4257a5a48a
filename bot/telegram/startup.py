"""Start-up checks: each a setting that cannot be used ends the start with one line.

`check_token` (getMe: BOT_TOKEN), `check_model` (GET /models: OPENAI_API_KEY,
OPENAI_MODEL, OPENAI_FALLBACK_MODELS) and `listen` (WEB_HOST/WEB_PORT) raise
`CannotStart` (bot/runtime/exit_codes.py), which bot/telegram/app.py prints and turns
into exit status 2; a feature's own check (e.g. OPERATOR_CHAT_ID,
bot/telegram/features/handoff.py) raises it too, and so does `check_shop` (SHOP_BACKEND
other than local: SHOP_API_TOKEN rejected, SHOP_API_URL not the API). Telegram, the
model endpoint or the shop API unreachable is a retrying WARNING, not fatal.
"""

from __future__ import annotations

import asyncio
import logging
import re
from urllib.parse import urlparse

from aiogram import Bot
from aiogram.exceptions import (
    ClientDecodeError,
    TelegramNetworkError,
    TelegramNotFound,
    TelegramRetryAfter,
    TelegramServerError,
    TelegramUnauthorizedError,
)
from aiogram.methods import GetMe
from aiohttp import web

from bot.runtime.config import Settings
from bot.runtime.exit_codes import CannotStart
from services.llm.client import OpenAIChatModel
from services.llm.errors import LLMAuthenticationError, LLMError
from services.llm.types import ModelCheck
from tools.shop.backend import ShopSetupError, ShopUnavailable
from tools.shop.directory import ShopDirectory

log = logging.getLogger("bot")


class TokenRejected(CannotStart):
    """Telegram answered getMe with 401 or 404: BOT_TOKEN is wrong, revoked or deleted."""


# Waits between start-up checks of an unreachable Telegram or model endpoint: quick at
# first (a network blip), then every 30 s for as long as it takes; SIGTERM ends it.
STARTUP_RETRY_DELAYS_S = (1.0, 2.0, 4.0, 8.0, 15.0, 30.0)


def _retry_delay(attempt: int) -> float:
    return STARTUP_RETRY_DELAYS_S[min(attempt, len(STARTUP_RETRY_DELAYS_S) - 1)]


def _host_of(url: str | None, default: str) -> str:
    return urlparse(url).netloc if url else default


async def check_token(bot: Bot, settings: Settings) -> int:
    """getMe until it succeeds: 401/404 end the start (exit 2, one line naming BOT_TOKEN);
    an unreachable or failing Telegram is asked again, with a WARNING line each time.
    Returns the bot's user id."""
    host = _host_of(settings.telegram_api_url, "api.telegram.org")
    attempt = 0
    while True:
        try:
            me = await bot(GetMe())
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


async def check_shop(shop: ShopDirectory | None) -> None:
    """The shop API answers, accepts the credentials and is the API it should be: one
    cheap read (the backend's `check`). Rejected credentials or another kind of server
    end the start (exit 2, one line); an unreachable or failing API is asked again with a
    WARNING line, like Telegram. Nothing to check for the local backend."""
    if shop is None or shop.backend_name == "local":
        return
    host = getattr(shop.backend, "host", shop.backend_name)
    attempt = 0
    while True:
        try:
            await shop.check()
        except ShopSetupError as exc:
            raise CannotStart(str(exc)) from None
        except ShopUnavailable as exc:
            delay = _retry_delay(attempt)
            log.warning(
                "the shop API at %s (SHOP_API_URL) is unreachable or failing (%s); "
                "retrying in %.0f s",
                host,
                exc.detail or exc.kind,
                delay,
            )
            attempt += 1
            await asyncio.sleep(delay)
            continue
        log.info("shop data: %s backend at %s", shop.backend_name, host)
        return


def _telegram_problem(exc: Exception, host: str) -> str:
    if isinstance(exc, TelegramNetworkError):
        return f"Telegram is unreachable at {host}"
    if isinstance(exc, TelegramServerError):
        return f"Telegram at {host} answered with a server error"
    return f"{host} does not answer like the Bot API (check TELEGRAM_API_URL)"


async def check_model(model: OpenAIChatModel, settings: Settings) -> None:
    """The model endpoint answers, accepts the key and offers the configured models.

    One `GET /models` (free). A rejected key or a model the endpoint does not offer ends
    the start (exit 2, one line naming the setting); an endpoint that cannot be reached
    is asked again with a WARNING line, like Telegram; an endpoint that does not list its
    models cannot be checked: one WARNING and the start goes on.
    """
    if not settings.openai_startup_check:
        return
    host = _host_of(settings.openai_base_url, "api.openai.com")
    attempt = 0
    while True:
        try:
            result = await model.check()
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


async def listen(runner: web.AppRunner, settings: Settings) -> None:
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
