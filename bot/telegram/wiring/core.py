"""The core: the model, storage retries, the tool registry, the loop, the chat service."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from bot.runtime.config import Settings
from bot.telegram.wiring.shop_platforms import PLATFORMS, build_platform_backend
from services.chat import (
    DEFAULT_SHOP_NAME,
    PLAIN_SYSTEM_PROMPT,
    ChatOptions,
    ChatService,
    build_chat_service,
)
from services.limits import TurnSlots
from services.llm.client import OpenAIChatModel
from services.llm.types import ChatModel
from services.loop import BoundedToolLoop
from services.prompts import build_prompt_registry
from services.prompts.composed import SystemPrompt
from storage.database import Database, StorageRetry
from storage.records import RecordObserver
from storage.shop import ShopRepository
from tools.base import Tool
from tools.executor import ToolExecutor
from tools.factory import build_registry
from tools.registry import ToolRegistry
from tools.shop.backends.http import HttpBackend
from tools.shop.backends.local import LocalBackend
from tools.shop.directory import ShopDirectory, local_directory
from tools.shop.orders import SHOP_WRITTEN


def build_model(settings: Settings) -> OpenAIChatModel:
    return OpenAIChatModel(
        api_key=settings.openai_api_key.get_secret_value(),
        model=settings.openai_model,
        base_url=settings.openai_base_url,
        fallback_models=settings.openai_fallback_models,
        timeout_s=settings.openai_timeout_s,
        max_retries=settings.openai_max_retries,
        answer_max_tokens=settings.answer_max_tokens or None,
        temperature=settings.llm_temperature,
    )


def build_storage_retry(settings: Settings) -> StorageRetry:
    return StorageRetry(
        first_delay_s=settings.storage_retry_first_delay_s,
        give_up_after_s=settings.storage_retry_give_up_s,
    )


def build_shop_directory(settings: Settings, db: Database) -> ShopDirectory:
    """Where the order tools read orders: the SHOP_BACKEND, with the shop's order-number
    rule (ORDER_NUMBER_PATTERN over the backend's own)."""
    rule = settings.order_number_rule()
    if settings.shop_backend in PLATFORMS:
        return ShopDirectory(
            build_platform_backend(settings),
            number_rule=rule,
            cache_ttl_s=settings.shop_cache_ttl_s,
            miss_ttl_s=settings.shop_miss_ttl_s,
            products_ttl_s=settings.shop_products_ttl_s,
        )
    if settings.shop_backend == "http":
        assert settings.shop_api_url is not None and settings.shop_api_token is not None
        backend = HttpBackend(
            settings.shop_api_url,
            settings.shop_api_token,
            number_rule=rule or SHOP_WRITTEN,
            timeout_s=settings.shop_timeout_s,
        )
        return ShopDirectory(
            backend,
            number_rule=rule,
            cache_ttl_s=settings.shop_cache_ttl_s,
            miss_ttl_s=settings.shop_miss_ttl_s,
            products_ttl_s=settings.shop_products_ttl_s,
        )
    return local_directory(LocalBackend(ShopRepository(db)), rule)


def build_tools(
    settings: Settings,
    extra: Sequence[Tool[Any, Any]] = (),
    *,
    shop: ShopDirectory | None = None,
) -> ToolRegistry:
    """The shop's tools and the features' (`extra`), in the allow-list; the order tool
    accepts and describes `shop`'s order numbers."""
    if shop is None:
        return build_registry(order_lookups_per_hour=settings.order_lookups_per_hour, extra=extra)
    return build_registry(
        order_lookups_per_hour=settings.order_lookups_per_hour,
        extra=extra,
        order_number_rule=shop.number_rule,
        live_orders=not shop.reads_bot_storage,
    )


def build_turn_slots(settings: Settings) -> TurnSlots:
    """MAX_CONCURRENT_TURNS: the turns running or waiting now (streaming reads them too)."""
    return TurnSlots(settings.max_concurrent_turns)


@dataclass(frozen=True, slots=True)
class Core:
    chat_service: ChatService
    storage_retry: StorageRetry


def build_core(
    settings: Settings,
    db: Database,
    *,
    model: ChatModel,
    registry: ToolRegistry,
    turn_slots: TurnSlots,
    storage_retry: StorageRetry,
    record_observer: RecordObserver | None,
    shop: ShopDirectory | None = None,
    system_prompt: SystemPrompt = PLAIN_SYSTEM_PROMPT,
) -> Core:
    """The loop over `registry` and the chat service that runs it, turn by turn;
    `system_prompt`: composed from the fragments of the features that are on
    (bot/runtime/feature_catalog.py:system_prompt)."""
    loop = BoundedToolLoop(
        model,
        registry,
        ToolExecutor(registry, storage_retry=storage_retry),
        max_steps=settings.tool_max_steps,
        turn_timeout_s=settings.turn_timeout_s,
        parallel_tool_calls=settings.parallel_tool_calls,
        read_text_calls=settings.read_text_tool_calls,
    )
    chat_service = build_chat_service(
        db=db,
        loop=loop,
        model=model,
        prompts=build_prompt_registry(),
        shop=ShopRepository(db),
        shop_directory=shop,
        turn_slots=turn_slots,
        options=ChatOptions(
            shop_name=settings.shop_name or DEFAULT_SHOP_NAME,
            history_token_budget=settings.history_token_budget,
            summary_max_tokens=settings.summary_max_tokens,
            history_fold_to_percent=settings.history_fold_to_percent,
            draft_interval_s=settings.draft_interval_s,
            system_prompt=system_prompt,
            reply_language_check=settings.reply_language_check,
            tool_guide=settings.tool_guide,
        ),
        storage_retry=storage_retry,
        record_observer=record_observer,
    )
    return Core(chat_service=chat_service, storage_retry=storage_retry)
