"""The core: the model, storage retries, the tool registry, the loop, the chat service."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from bot.config import Settings
from services.chat import DEFAULT_SHOP_NAME, ChatOptions, ChatService, build_chat_service
from services.limits import TurnSlots
from services.llm.client import OpenAIChatModel
from services.llm.types import ChatModel
from services.loop import BoundedToolLoop
from services.prompts import build_prompt_registry
from storage.database import Database, StorageRetry
from storage.records import RecordObserver
from storage.shop import ShopRepository
from tools.base import Tool
from tools.executor import ToolExecutor
from tools.factory import build_registry
from tools.registry import ToolRegistry


def build_model(settings: Settings) -> OpenAIChatModel:
    return OpenAIChatModel(
        api_key=settings.openai_api_key.get_secret_value(),
        model=settings.openai_model,
        base_url=settings.openai_base_url,
        fallback_models=settings.openai_fallback_models,
        timeout_s=settings.openai_timeout_s,
        max_retries=settings.openai_max_retries,
        answer_max_tokens=settings.answer_max_tokens or None,
    )


def build_storage_retry(settings: Settings) -> StorageRetry:
    return StorageRetry(
        first_delay_s=settings.storage_retry_first_delay_s,
        give_up_after_s=settings.storage_retry_give_up_s,
    )


def build_tools(settings: Settings, extra: Sequence[Tool[Any, Any]] = ()) -> ToolRegistry:
    """The shop's tools and the features' (`extra`), in the allow-list."""
    return build_registry(order_lookups_per_hour=settings.order_lookups_per_hour, extra=extra)


@dataclass(frozen=True, slots=True)
class Core:
    chat_service: ChatService
    turn_slots: TurnSlots  # MAX_CONCURRENT_TURNS: the turns running or waiting now
    storage_retry: StorageRetry


def build_core(
    settings: Settings,
    db: Database,
    *,
    model: ChatModel,
    registry: ToolRegistry,
    storage_retry: StorageRetry,
    record_observer: RecordObserver | None,
) -> Core:
    """The loop over `registry` and the chat service that runs it, turn by turn."""
    loop = BoundedToolLoop(
        model,
        registry,
        ToolExecutor(registry, storage_retry=storage_retry),
        max_steps=settings.tool_max_steps,
        turn_timeout_s=settings.turn_timeout_s,
        parallel_tool_calls=settings.parallel_tool_calls,
    )
    turn_slots = TurnSlots(settings.max_concurrent_turns)
    chat_service = build_chat_service(
        db=db,
        loop=loop,
        model=model,
        prompts=build_prompt_registry(),
        shop=ShopRepository(db),
        turn_slots=turn_slots,
        options=ChatOptions(
            shop_name=settings.shop_name or DEFAULT_SHOP_NAME,
            history_token_budget=settings.history_token_budget,
            summary_max_tokens=settings.summary_max_tokens,
            draft_interval_s=settings.draft_interval_s,
        ),
        storage_retry=storage_retry,
        record_observer=record_observer,
    )
    return Core(chat_service=chat_service, turn_slots=turn_slots, storage_retry=storage_retry)
