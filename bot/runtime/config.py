"""Settings from the environment and `.env`, validated once at start-up.

This is the only module that reads configuration; everything else receives plain
values through constructors. A bad setting becomes one readable line (see
`SettingsError`) instead of a traceback, and secrets are `SecretStr` so they never
show up in a repr, a log line or an error message.
"""

from __future__ import annotations

import os
import re
import secrets
import socket
from dataclasses import dataclass
from enum import StrEnum
from pathlib import Path
from typing import Annotated, Any, Literal, TypeVar
from urllib.parse import urlparse
from zoneinfo import ZoneInfo, ZoneInfoNotFoundError

from pydantic import (
    Field,
    SecretStr,
    ValidationError,
    ValidationInfo,
    field_validator,
    model_validator,
)
from pydantic_core import ErrorDetails
from pydantic_settings import BaseSettings, NoDecode, SettingsConfigDict

from bot.runtime.languages import Language
from tools.shop.orders import OrderNumberRule, rule_from_setting

_WEBHOOK_SECRET_RE = re.compile(r"^[A-Za-z0-9_-]{1,256}$")
_WEBHOOK_PATH_RE = re.compile(r"/[A-Za-z0-9._~/-]{0,255}")
# A bot token as @BotFather gives it: the bot's numeric id, a colon, then the secret
# (35 characters of A-Z a-z 0-9 _ - today). aiogram itself only asks for digits, a colon
# and something after it; the length is not checked here (local Bot API servers and test
# fakes use shorter ones) — a real token of the wrong length is answered 401/404 by
# Telegram, which stops the start with a line naming BOT_TOKEN (bot/telegram/app.py).
_BOT_TOKEN_RE = re.compile(r"^[0-9]{1,20}:[A-Za-z0-9_-]{1,100}$")
# The values .env.example ships with, and the marker in them: still there means the
# owner copied the file without filling it in.
PLACEHOLDERS = {
    "bot_token": "123456789:replace-with-your-bot-token",
    "openai_api_key": "sk-replace-with-your-key",
}
_PLACEHOLDER_MARKER = "replace-with-your"
_PLACEHOLDER_HINT = {
    "bot_token": "put the token @BotFather gave you there",
    "openai_api_key": "put your API key there (any non-empty value for a local server)",
}
_REQUIRED = ("bot_token", "openai_api_key")


LogFormat = Literal["text", "json"]

_POSTGRES_SCHEMES = ("postgresql://", "postgres://")


@dataclass(frozen=True, slots=True)
class DatabaseChoice:
    """Which database to open, and how to name it where a person reads it.

    `target` goes to `storage.database.open_database` and may carry a password (a
    DATABASE_URL); `shown` never does: scheme, host, port and database name only.
    """

    setting: str  # "DATABASE_URL" | "DATABASE_PATH": which setting a start-up error names
    target: str | Path
    shown: str
    pool_size: int


def _check_database_url(value: SecretStr | None) -> SecretStr | None:
    """Blank is unset; anything else must be a PostgreSQL URL."""
    if value is None or not value.get_secret_value().strip():
        return None
    url = value.get_secret_value().strip()
    if not url.startswith(_POSTGRES_SCHEMES):
        raise ValueError(
            "expected a PostgreSQL URL: postgresql://user:password@host:5432/database "
            "(unset it to use DATABASE_PATH, SQLite)"
        )
    return SecretStr(url)


def redacted_database_url(url: str) -> str:
    """The URL as it may be printed: scheme, host, port and database, no user or password."""
    try:
        parts = urlparse(url)
        host = parts.hostname or ""
        host = f"[{host}]" if ":" in host else host
        port = f":{parts.port}" if parts.port is not None else ""
    except ValueError:
        return f"{url.split(':', 1)[0]}://…"
    return f"{parts.scheme}://{host}{port}{parts.path}"


def database_choice(url: SecretStr | None, path: Path, pool_size: int) -> DatabaseChoice:
    """DATABASE_URL when set (PostgreSQL), else DATABASE_PATH (SQLite)."""
    if url is not None:
        secret = url.get_secret_value()
        return DatabaseChoice("DATABASE_URL", secret, redacted_database_url(secret), pool_size)
    return DatabaseChoice("DATABASE_PATH", path, str(path), pool_size)


def _default_instance_id() -> str:
    """host:pid:random — unique among instances, readable in the claims table."""
    return f"{socket.gethostname()}:{os.getpid()}:{secrets.token_hex(3)}"


class BotMode(StrEnum):
    POLLING = "polling"
    WEBHOOK = "webhook"


class SettingsError(Exception):
    """A human-readable, single-line description of what is wrong with the settings."""


def split_csv(value: Any) -> Any:
    if isinstance(value, str):
        return [item.strip() for item in value.split(",") if item.strip()]
    return value


_LOOPBACK_HOSTS = ("localhost", "127.0.0.1", "::1")
_OUR_STATUSES = ("processing", "in_transit", "ready_for_pickup", "delivered", "cancelled")


def woocommerce_statuses(value: str) -> dict[str, str]:
    """WOOCOMMERCE_STATUS_MAP ("shipped:in_transit,...") as {plugin status: our status};
    ValueError naming the entry that is not `status:one_of_ours`."""
    mapped: dict[str, str] = {}
    for entry in (e.strip() for e in value.split(",")):
        if not entry:
            continue
        theirs, _, ours = (part.strip() for part in entry.partition(":"))
        if not theirs or ours not in _OUR_STATUSES:
            raise ValueError(
                f"WOOCOMMERCE_STATUS_MAP entry {entry!r}: expected their-status:ours, ours one "
                f"of {', '.join(_OUR_STATUSES)}"
            )
        mapped[theirs] = ours
    return mapped


def _check_http_url(value: str | None, *, https_only: bool = False) -> str | None:
    if value is None or value == "":
        return None
    parsed = urlparse(value)
    allowed = ("https",) if https_only else ("http", "https")
    if parsed.scheme not in allowed or not parsed.netloc:
        kind = "an https:// URL" if https_only else "an http(s):// URL"
        raise ValueError(f"expected {kind} with a host name")
    return value.rstrip("/")


class ShopSettings(BaseSettings):
    """The shop's identity and words: all `python -m bot texts` needs (no token or key)."""

    model_config = SettingsConfigDict(
        env_file=".env",
        env_file_encoding="utf-8",
        case_sensitive=False,
        extra="ignore",
    )

    # The shop's public name: in the system instruction and the welcome. Unset: the
    # instruction says "Online shop" and the welcome says "the shop".
    shop_name: str | None = Field(default=None, max_length=100)
    # Optional TOML file of text overrides per language (README "Make it your shop")
    texts_file: Path | None = None
    # Fixed texts for customers whose Telegram language is neither Russian nor English
    default_language: Language = "ru"
    # What the shop's order numbers look like (a regular expression matched against the
    # whole number), one example and the words the model reads; unset: the backend's own
    # rule (local: the demo's four digits). Used by import-data and get_order_status.
    order_number_pattern: str | None = Field(default=None, max_length=200)
    order_number_example: str | None = Field(default=None, max_length=40)
    order_number_description: str | None = Field(default=None, max_length=200)
    order_number_prefix: str = Field(default="", max_length=5)

    @field_validator(
        "order_number_pattern", "order_number_example", "order_number_description", mode="before"
    )
    @classmethod
    def _blank_is_unset(cls, value: Any) -> Any:
        return None if isinstance(value, str) and not value.strip() else value

    @model_validator(mode="after")
    def _check_order_number_rule(self) -> ShopSettings:
        self.order_number_rule()
        return self

    def order_number_rule(self) -> OrderNumberRule | None:
        """The rule ORDER_NUMBER_PATTERN describes, or None (the backend's own)."""
        if self.order_number_pattern is None:
            if self.order_number_example is not None:
                raise ValueError("ORDER_NUMBER_EXAMPLE needs ORDER_NUMBER_PATTERN")
            return None
        if self.order_number_example is None:
            raise ValueError(
                "ORDER_NUMBER_PATTERN needs ORDER_NUMBER_EXAMPLE (one real order number)"
            )
        return rule_from_setting(
            self.order_number_pattern,
            self.order_number_example,
            self.order_number_description,
            self.order_number_prefix,
        )

    @field_validator("shop_name", mode="before")
    @classmethod
    def _check_shop_name(cls, value: Any) -> Any:
        if isinstance(value, str):
            value = value.strip()
            if not value:
                return None
            if not value.isprintable():
                raise ValueError("expected one line of printable text")
        return value

    @field_validator("texts_file", mode="before")
    @classmethod
    def _empty_path_is_none(cls, value: Any) -> Any:
        return None if isinstance(value, str) and not value.strip() else value


class Settings(ShopSettings):
    """Every setting of the bot; names match the environment variables."""

    model_config = SettingsConfigDict(
        env_file=".env",
        env_file_encoding="utf-8",
        case_sensitive=False,
        extra="ignore",
    )

    # Telegram
    bot_token: SecretStr
    telegram_api_url: str | None = None
    bot_mode: BotMode = BotMode.POLLING
    webhook_url: str | None = None
    webhook_path: str = "/telegram/webhook"
    webhook_secret: SecretStr | None = None
    web_host: str = "127.0.0.1"
    web_port: int = Field(default=8080, ge=1, le=65535)
    # Webhook server: an idle connection, or a request whose headers or body have not
    # arrived completely within this many seconds, is closed.
    webhook_read_timeout_s: float = Field(default=10.0, gt=0, le=600)
    # setWebhook's max_connections: how many updates Telegram delivers at once (1-100;
    # Telegram's own default is 40). The inbox stores concurrent POSTs in shared commits,
    # and under load the webhook took updates in slower than polling with 40.
    webhook_max_connections: int = Field(default=100, ge=1, le=100)
    admin_ids: Annotated[frozenset[int], NoDecode] = frozenset()
    # Bot API requests per second over all chats. Telegram allows about 30; raise it only
    # against a local Bot API server or a fake (the benchmark does, see docs/benchmarks.md).
    telegram_global_sends_per_s: float = Field(default=25.0, gt=0, le=100_000)
    # Seconds between two messages to one chat (Telegram allows about one per second).
    telegram_chat_interval_s: float = Field(default=1.0, ge=0, le=60)
    # Streamed answers in private chats (sendMessageDraft): "Thinking…" at once, then the
    # answer as it is written, with a stop button. Off: typing indicator, whole answer.
    stream_answers: bool = True
    # Seconds between two draft updates in one chat (drafts are dropped under load).
    draft_interval_s: float = Field(default=1.0, ge=0.05, le=60)
    # Answers stream only while at most this many chats are being answered at once;
    # beyond it: typing indicator and the whole answer (drafts are shed under load).
    stream_max_chats: int = Field(default=100, ge=1, le=100_000)

    # LLM
    openai_api_key: SecretStr
    openai_base_url: str | None = None
    openai_model: str = Field(default="gpt-4o-mini", min_length=1)
    openai_fallback_models: Annotated[tuple[str, ...], NoDecode] = ()
    openai_timeout_s: float = Field(default=30.0, gt=0, le=600)
    openai_max_retries: int = Field(default=1, ge=0, le=5)
    # Cap of one answer step (max_completion_tokens); 1000 tokens are about 3,000-4,000
    # characters, one Telegram message; 0 sends no cap (a provider that rejects it)
    answer_max_tokens: int = Field(default=1000, ge=0, le=100_000)
    parallel_tool_calls: bool = True
    # Sampling temperature sent on every model call (answers and summaries): low, so
    # support answers stay factual and repeatable; blank sends none (a model that
    # refuses the parameter, e.g. OpenAI's reasoning models).
    llm_temperature: float | None = Field(default=0.2, ge=0, le=2)
    # A tool call the model wrote as text (small local models do) is read and run like a
    # structured one when it names an offered tool with valid arguments; false: the model
    # is told to use the interface. The customer never sees such text either way.
    read_text_tool_calls: bool = True
    # The offered tools named at the end of the instruction, one line each from its own
    # description (~25 tokens per tool in every call): for small local models, which
    # call far fewer tools when the instruction names none (docs/simulations.md).
    tool_guide: bool = False
    # The answer follows the customer's language: one in another language is asked once
    # more (one extra model call at most), and its draft is never shown.
    reply_language_check: bool = True
    # On start, check once that the endpoint answers, accepts the key and offers
    # OPENAI_MODEL and OPENAI_FALLBACK_MODELS (GET /models: no tokens, no cost).
    openai_startup_check: bool = True
    # Voice notes (TRANSCRIPTION_MODEL, VOICE_MAX_SECONDS): the voice feature's own group,
    # bot/telegram/features/voice.py `VoiceSettings`

    # Conversation and tools
    database_path: Path = Path("data/bot.sqlite3")
    # PostgreSQL (several instances); set, it wins over DATABASE_PATH
    database_url: SecretStr | None = None
    database_pool_size: int = Field(default=10, ge=1, le=100)
    # SQLite: seconds the page check at start may take (0: none); a bigger file is
    # let through unchecked after that
    database_integrity_check_s: float = Field(default=10.0, ge=0, le=3600)
    tool_max_steps: int = Field(default=3, ge=1, le=5)
    turn_timeout_s: float = Field(default=60.0, gt=0, le=600)
    history_token_budget: int = Field(default=2000, ge=200, le=100_000)
    # once the history outgrows the budget, the summary folds the oldest messages until
    # what is left fits this percentage of it (one fold makes room for several questions)
    history_fold_to_percent: int = Field(default=50, ge=10, le=90)
    summary_max_tokens: int = Field(default=300, ge=50, le=4000)
    max_input_chars: int = Field(default=2000, ge=1, le=4096)
    order_lookups_per_hour: int = Field(default=10, ge=1, le=10_000)

    # Limits and operations
    user_messages_per_minute: int = Field(default=10, ge=1, le=1000)
    user_messages_per_day: int = Field(default=300, ge=1, le=100_000)
    max_concurrent_turns: int = Field(default=200, ge=1, le=10_000)
    shutdown_grace_s: float = Field(default=30.0, ge=0, le=600)
    # A write that fails with a storage fault (locked beyond the busy timeout, disk full)
    # is retried after this many seconds, doubling up to 30 s ...
    storage_retry_first_delay_s: float = Field(default=0.5, gt=0, le=60)
    # ... until this many seconds have passed; then the update stays pending for the
    # next start (one ERROR line). 10 minutes covers a backup, a vacuum or an operator
    # freeing disk space, and a customer still gets the answer the same conversation.
    storage_retry_give_up_s: float = Field(default=600.0, ge=0, le=86_400)
    # /healthz in polling mode on WEB_HOST:WEB_PORT (webhook mode always serves it)
    health_enabled: bool = False
    # /healthz reports "delivery" when a stored answer waits longer than this to be sent
    # (Telegram unreachable, long flood control), or deliveries keep failing that long
    health_delivery_threshold_s: float = Field(default=300.0, gt=0, le=86_400)
    # GET /metrics (Prometheus) on WEB_HOST:WEB_PORT: always with the webhook server, in
    # polling mode on the server HEALTH_ENABLED opens
    metrics_enabled: bool = True
    # Run on uvloop (a faster event loop) where it is installed; false: asyncio's own
    uvloop_enabled: bool = True
    seed_demo_data: bool = True
    log_level: str = "INFO"
    # "text" (one readable line) or "json" (one object per line, ids as fields)
    log_format: LogFormat = "text"

    # Handoff to a person (README "Handoff to a person"): the operators' forum supergroup.
    # Unset: no handoff — no /operator, no request_human tool, nothing mentions it.
    # (its hours are the handoff feature's: bot/telegram/features/handoff.py)
    operator_chat_id: int | None = None
    # Feedback and /stats
    # 👍/👎 buttons under each AI answer (presses on buttons already sent still count)
    feedback_enabled: bool = True
    # the time zone of /stats period boundaries and labels (an IANA name, e.g. Europe/Moscow)
    stats_timezone: str = "UTC"
    # the model's prices per 1,000,000 tokens, for the cost estimate in /stats; cached
    # input defaults to the input price when not set. No input/output price: no estimate.
    model_price_input_per_1m: float | None = Field(default=None, ge=0, le=1_000_000)
    model_price_output_per_1m: float | None = Field(default=None, ge=0, le=1_000_000)
    model_price_cached_input_per_1m: float | None = Field(default=None, ge=0, le=1_000_000)
    model_price_currency: str = Field(default="USD", min_length=1, max_length=8)

    # Actions the customer confirms: their settings (ACTIONS_ENABLED, ACTION_*) are the
    # actions feature's own (bot/telegram/features/actions.py `ActionsSettings`)

    # Order updates (README "Order updates"): their settings (ORDER_UPDATES_*, the shops'
    # push secrets) are the feature's own (bot/telegram/features/order_updates.py)

    # Several instances on one PostgreSQL database (DATABASE_URL): this instance's name in
    # the chat claims and heartbeats (unique per running process; default host:pid:random)
    instance_id: str = Field(default_factory=_default_instance_id, min_length=1, max_length=200)
    # how long a chat stays claimed by an instance that stopped renewing (died, frozen):
    # another instance finishes its chats this long after a SIGKILL
    claim_lease_s: float = Field(default=15.0, ge=1.0, le=600)

    # Where order data comes from (README "Connect your shop"): local (import-data, the
    # demo), http (the shop's own API, docs/shop-api.openapi.yaml), or a platform's own
    # API: medusa, shopify, woocommerce
    shop_backend: Literal["local", "http", "medusa", "shopify", "woocommerce"] = "local"
    # SHOP_BACKEND=http: the API's base URL (https; http only on localhost) and its
    # bearer token
    shop_api_url: str | None = None
    shop_api_token: SecretStr | None = None
    # seconds a found order / a missing one is reused before the shop is asked again
    shop_cache_ttl_s: float = Field(default=30.0, ge=0, le=3600)
    shop_miss_ttl_s: float = Field(default=10.0, ge=0, le=3600)
    # the live shop's product catalogue, read at most this often (products feature)
    shop_products_ttl_s: float = Field(default=60.0, ge=0, le=3600)
    # a product's page where the platform knows none (Medusa): "{handle}" is replaced
    shop_product_url: str | None = None
    # seconds one request to the shop may take (the order tool's own bound is 5 s)
    shop_timeout_s: float = Field(default=3.0, gt=0, le=4)
    # The platform backends (README "Connect your shop"; SHOP_API_URL and SHOP_API_TOKEN
    # above are the Medusa URL and secret key, the WooCommerce site and consumer key):
    # SHOP_BACKEND=woocommerce: the REST API key's consumer secret (cs_...)
    shop_api_secret: SecretStr | None = None
    # SHOP_BACKEND=shopify: the store (xxx.myshopify.com) and the Admin API version; the
    # credentials: a Dev Dashboard app's client ID and secret (short-lived tokens from the
    # client credentials grant), or SHOP_API_TOKEN (a custom app made in the admin before 2026)
    shopify_shop: str | None = None
    shopify_client_id: str | None = Field(default=None, min_length=1, max_length=200)
    shopify_client_secret: SecretStr | None = None
    shopify_api_version: str = Field(default="2026-07", pattern=r"^(\d{4}-(01|04|07|10)|unstable)$")
    # SHOP_BACKEND=woocommerce: order numbers are the orders' ids (false with a
    # sequential-numbers plugin), and plugins' statuses read as ours
    # ("shipped:in_transit,ready-pickup:ready_for_pickup")
    woocommerce_number_is_id: bool = True
    woocommerce_status_map: str = Field(default="", max_length=2000)

    @field_validator("admin_ids", mode="before")
    @classmethod
    def _parse_admin_ids(cls, value: Any) -> Any:
        items = split_csv(value)
        if isinstance(items, list):
            try:
                return frozenset(int(item) for item in items)
            except ValueError:
                raise ValueError(
                    "expected comma-separated Telegram user ids, e.g. 123,456"
                ) from None
        return items

    @field_validator("stats_timezone")
    @classmethod
    def _check_timezone(cls, value: str) -> str:
        try:
            ZoneInfo(value)
        except (ZoneInfoNotFoundError, ValueError):
            raise ValueError("expected an IANA time zone name, e.g. UTC or Europe/Moscow") from None
        return value

    @field_validator("openai_fallback_models", mode="before")
    @classmethod
    def _parse_fallback_models(cls, value: Any) -> Any:
        items = split_csv(value)
        return tuple(items) if isinstance(items, list) else items

    @field_validator("telegram_api_url", "openai_base_url")
    @classmethod
    def _check_optional_url(cls, value: str | None) -> str | None:
        return _check_http_url(value)

    @field_validator("llm_temperature", mode="before")
    @classmethod
    def _blank_model_is_off(cls, value: Any) -> Any:
        return None if isinstance(value, str) and not value.strip() else value

    @field_validator("database_url")
    @classmethod
    def _check_database_url(cls, value: SecretStr | None) -> SecretStr | None:
        return _check_database_url(value)

    @property
    def database(self) -> DatabaseChoice:
        return database_choice(self.database_url, self.database_path, self.database_pool_size)

    @field_validator("webhook_url")
    @classmethod
    def _check_webhook_url(cls, value: str | None) -> str | None:
        return _check_http_url(value, https_only=True)

    @field_validator("webhook_path")
    @classmethod
    def _check_webhook_path(cls, value: str) -> str:
        # a literal path: the web server would read {…} as a variable, Caddy * as a
        # wildcard, and ? or # are not part of a path at all
        if not _WEBHOOK_PATH_RE.fullmatch(value):
            raise ValueError(
                "expected a literal path: '/' then letters, digits and - . _ ~ / "
                "(no ?, #, * or {…}), e.g. /telegram/webhook"
            )
        return value

    @field_validator("webhook_secret")
    @classmethod
    def _check_webhook_secret(cls, value: SecretStr | None) -> SecretStr | None:
        if value is None or value.get_secret_value() == "":
            return None
        if not _WEBHOOK_SECRET_RE.fullmatch(value.get_secret_value()):
            raise ValueError("expected 1-256 characters of A-Z, a-z, 0-9, _ and -")
        return value

    @field_validator("bot_token", "openai_api_key")
    @classmethod
    def _check_not_blank(cls, value: SecretStr, info: ValidationInfo) -> SecretStr:
        secret = value.get_secret_value()
        if not secret.strip():
            raise ValueError("must not be empty")
        name = str(info.field_name)
        if secret.strip() == PLACEHOLDERS[name] or _PLACEHOLDER_MARKER in secret:
            raise ValueError(f"still the placeholder from .env.example; {_PLACEHOLDER_HINT[name]}")
        if name == "bot_token" and not _BOT_TOKEN_RE.fullmatch(secret):
            raise ValueError(
                "not a bot token: expected the bot's id, a colon and the secret as "
                "@BotFather gives it (digits:letters, digits, _ or -, no spaces)"
            )
        return value

    @field_validator("operator_chat_id", mode="before")
    @classmethod
    def _check_operator_chat(cls, value: Any) -> Any:
        if isinstance(value, str) and not value.strip():
            return None
        try:
            number = int(value) if value is not None else None
        except (TypeError, ValueError):
            number = 0
        if number is not None and number >= 0:
            raise ValueError(
                "expected the id of the operators' group, a negative number such as -1001234567890"
            )
        return value

    @field_validator("log_format", mode="before")
    @classmethod
    def _lower_log_format(cls, value: Any) -> Any:
        return value.strip().lower() if isinstance(value, str) else value

    @field_validator("log_level")
    @classmethod
    def _check_log_level(cls, value: str) -> str:
        level = value.upper()
        if level not in {"DEBUG", "INFO", "WARNING", "ERROR", "CRITICAL"}:
            raise ValueError("expected one of DEBUG, INFO, WARNING, ERROR, CRITICAL")
        return level

    @field_validator("shop_api_url")
    @classmethod
    def _check_shop_api_url(cls, value: str | None) -> str | None:
        url = _check_http_url(value)
        if url is not None:
            parsed = urlparse(url)
            if parsed.query or parsed.fragment:
                raise ValueError("expected the API's base URL, without ?query or #fragment")
            if parsed.scheme == "http" and parsed.hostname not in _LOOPBACK_HOSTS:
                raise ValueError(
                    "expected an https:// URL (plain http only to localhost: the token "
                    "would travel unencrypted)"
                )
        return url

    @field_validator("shop_product_url")
    @classmethod
    def _check_shop_product_url(cls, value: str | None) -> str | None:
        url = _check_http_url(value)
        if url is not None and "{handle}" not in url:
            raise ValueError(
                "expected a page address with {handle}, e.g. https://shop.example/products/{handle}"
            )
        return url

    @field_validator("shopify_shop")
    @classmethod
    def _check_shopify_shop(cls, value: str | None) -> str | None:
        if value is None or not value.strip():
            return None
        shop = value.strip().lower().removeprefix("https://").rstrip("/")
        if not re.fullmatch(r"[a-z0-9][a-z0-9-]*\.myshopify\.com", shop):
            raise ValueError("expected the store's domain, e.g. my-shop.myshopify.com")
        return shop

    @field_validator("woocommerce_status_map")
    @classmethod
    def _check_woocommerce_status_map(cls, value: str) -> str:
        woocommerce_statuses(value)
        return value

    @model_validator(mode="after")
    def _check_shop_platform(self) -> Settings:
        """The settings each SHOP_BACKEND needs, named in one line when one is missing."""
        needs = {
            "medusa": ("shop_api_url", "shop_api_token"),
            "shopify": ("shopify_shop",),
            "woocommerce": ("shop_api_url", "shop_api_token", "shop_api_secret"),
        }.get(self.shop_backend, ())
        for name in needs:
            if getattr(self, name) is None:
                raise ValueError(f"{name.upper()}: required when SHOP_BACKEND={self.shop_backend}")
        if self.shop_backend == "shopify":
            self._check_shopify_credentials()
        return self

    def _check_shopify_credentials(self) -> None:
        """Either the app's client ID and secret, or a fixed token; not both, not half."""
        client = (self.shopify_client_id is not None, self.shopify_client_secret is not None)
        if client == (True, False):
            raise ValueError("SHOPIFY_CLIENT_SECRET: required with SHOPIFY_CLIENT_ID")
        if client == (False, True):
            raise ValueError("SHOPIFY_CLIENT_ID: required with SHOPIFY_CLIENT_SECRET")
        if all(client) and self.shop_api_token is not None:
            raise ValueError(
                "SHOP_API_TOKEN: set either it or SHOPIFY_CLIENT_ID and SHOPIFY_CLIENT_SECRET, "
                "not both"
            )
        if not any(client) and self.shop_api_token is None:
            raise ValueError(
                "SHOPIFY_CLIENT_ID and SHOPIFY_CLIENT_SECRET: required when SHOP_BACKEND=shopify "
                "(the Dev Dashboard app's client credentials; or SHOP_API_TOKEN of a custom app "
                "made in the admin before 2026)"
            )

    @model_validator(mode="after")
    def _check_shop_backend(self) -> Settings:
        if self.shop_backend == "http":
            if self.shop_api_url is None:
                raise ValueError("SHOP_API_URL: required when SHOP_BACKEND=http")
            token = self.shop_api_token
            if token is None or not token.get_secret_value().strip():
                raise ValueError("SHOP_API_TOKEN: required when SHOP_BACKEND=http")
        return self

    @model_validator(mode="after")
    def _check_webhook_mode(self) -> Settings:
        if self.bot_mode is BotMode.WEBHOOK:
            if self.webhook_url is None:
                raise ValueError("WEBHOOK_URL: required when BOT_MODE=webhook (an https:// URL)")
            if self.webhook_secret is None:
                raise ValueError(
                    "WEBHOOK_SECRET: required when BOT_MODE=webhook "
                    "(1-256 characters of A-Z, a-z, 0-9, _ and -)"
                )
        return self

    @property
    def webhook_full_url(self) -> str:
        """The URL Telegram posts to: WEBHOOK_URL followed by WEBHOOK_PATH."""
        return f"{self.webhook_url or ''}{self.webhook_path}"


def _describe(error: ErrorDetails) -> str:
    location = [str(part) for part in error["loc"] if part != "__root__"]
    message = str(error["msg"])
    message = message.removeprefix("Value error, ")
    if not location:
        # model-level errors already start with the setting's name
        return message
    name = location[0].upper()
    if error["type"] == "missing":
        return f"{name}: required but not set"
    return f"{name}: {message}"


def load_settings(**overrides: Any) -> Settings:
    """Build the settings or raise `SettingsError` with one line naming the setting.

    The input values are never part of the message, so a mistyped secret is not echoed.
    """
    try:
        return Settings(**overrides)
    except ValidationError as exc:
        errors = exc.errors(include_input=False)
        problems = "; ".join(_describe(error) for error in errors)
        if _both_required_missing(errors):
            problems += " (start from the example: cp .env.example .env, then fill them in)"
        raise SettingsError(f"invalid settings: {problems}") from None


class FeatureSettings(BaseSettings):
    """A feature's settings group (bot/runtime/feature_catalog.py `FeatureSpec.settings`): read
    from the environment and `.env` like `Settings`, validated when the bot is wired."""

    model_config = SettingsConfigDict(
        env_file=".env", env_file_encoding="utf-8", case_sensitive=False, extra="ignore"
    )


class NoSettings(FeatureSettings):
    """The group of a feature whose settings are still in `Settings` (or that has none)."""


_Group = TypeVar("_Group", bound=FeatureSettings)


def load_feature_settings(group: type[_Group], **overrides: Any) -> _Group:
    """A feature's settings group, or `SettingsError` with one line naming the setting;
    `overrides` that are not the group's are left out."""
    if not group.model_fields:
        return group()
    mine = {k: v for k, v in overrides.items() if k in group.model_fields}
    try:
        return group(**mine)
    except ValidationError as exc:
        problems = "; ".join(_describe(e) for e in exc.errors(include_input=False))
        raise SettingsError(f"invalid settings: {problems}") from None


def _both_required_missing(errors: list[ErrorDetails]) -> bool:
    """BOT_TOKEN and OPENAI_API_KEY both unset or empty: most likely there is no .env."""
    unset = {
        str(error["loc"][0])
        for error in errors
        if error["loc"]
        and (error["type"] == "missing" or str(error["msg"]).endswith("must not be empty"))
    }
    return all(name in unset for name in _REQUIRED)


class StorageSettings(BaseSettings):
    """Only what offline commands such as `import-data` need: no token or API key."""

    model_config = SettingsConfigDict(
        env_file=".env",
        env_file_encoding="utf-8",
        case_sensitive=False,
        extra="ignore",
    )

    database_path: Path = Path("data/bot.sqlite3")
    database_url: SecretStr | None = None
    database_pool_size: int = Field(default=10, ge=1, le=100)

    @field_validator("database_url")
    @classmethod
    def _check_database_url(cls, value: SecretStr | None) -> SecretStr | None:
        return _check_database_url(value)


def load_database_choice(**overrides: Any) -> DatabaseChoice:
    """DATABASE_URL or DATABASE_PATH from the environment or `.env` (offline commands);
    `SettingsError` names a bad value."""
    found = _storage_settings(**overrides)
    return database_choice(found.database_url, found.database_path, found.database_pool_size)


def _storage_settings(**overrides: Any) -> StorageSettings:
    try:
        return StorageSettings(**overrides)
    except ValidationError as exc:
        problems = "; ".join(_describe(error) for error in exc.errors(include_input=False))
        raise SettingsError(f"invalid settings: {problems}") from None


def load_shop_settings(**overrides: Any) -> ShopSettings:
    """SHOP_NAME, TEXTS_FILE and DEFAULT_LANGUAGE; `SettingsError` names a bad value."""
    try:
        return ShopSettings(**overrides)
    except ValidationError as exc:
        problems = "; ".join(_describe(error) for error in exc.errors(include_input=False))
        raise SettingsError(f"invalid settings: {problems}") from None
