"""Actions with confirmation as one feature: on only when ACTIONS_ENABLED names
an action (cancel_order, request_return).

It adds one proposing tool per action on (tools/actions/propose.py), the router of the
card's ✅/✖ presses among the commands (limited per user like every button press), and
the /stats block. The card itself is the turn's `ConfirmAction` offer, shown by
bot/turn_view.py. Orders are read through the ShopDirectory the order tools use
(SHOP_BACKEND) and changed through the backend's `OrderActions`: the local backend's
(tools/shop/backends/local_actions.py), or the one a live backend implements itself. A
backend without actions leaves the feature off, with a warning.
"""

from __future__ import annotations

import logging
import time
from dataclasses import dataclass
from typing import Any, cast

from bot.config import NoSettings, Settings
from bot.context import HandlerDeps
from bot.features import Feature, FeatureRouters
from bot.features.catalog import ChatPart, FeatureSpec, Needs, TelegramNeeds
from bot.routers.actions import build_action_router
from bot.stats_view.actions import actions_block
from bot.stats_view.table import TableSection
from bot.texts import Language
from services.actions import ActionService
from services.prompts.support_chat import ORDER_ACTIONS_V1
from services.stats import StatsReport
from storage.actions import ActionRepository, LocalActionStore
from storage.database import Database, StorageRetry
from storage.shop import ShopRepository
from tools.actions.builtin import BUILT_IN_ACTIONS
from tools.actions.definition import ActionDefinition, ActionShop
from tools.actions.propose import proposing_tool
from tools.base import Tool
from tools.shop.backend import OrderActions
from tools.shop.backends.local_actions import DirectoryActions, LocalOrderActions
from tools.shop.directory import ShopDirectory

log = logging.getLogger("bot")


def enabled_actions(settings: Settings) -> tuple[ActionDefinition[Any], ...]:
    return tuple(d for d in BUILT_IN_ACTIONS if d.name in settings.actions_enabled)


def backend_actions(directory: ShopDirectory, db: Database) -> OrderActions | None:
    """The configured backend's actions: the local one's, or the backend's own."""
    if directory.backend_name == "local":
        return LocalOrderActions(LocalActionStore(db))
    backend: Any = directory.backend
    if hasattr(backend, "cancel_order") and hasattr(backend, "request_return"):
        return cast(OrderActions, backend)
    return None


@dataclass(frozen=True, slots=True)
class ActionParts:
    """The service a ✅/✖ press goes through and the proposing tools, over one backend."""

    service: ActionService
    tools: tuple[Tool[Any, Any], ...]


def action_parts(
    settings: Settings,
    db: Database,
    directory: ShopDirectory,
    *,
    storage_retry: StorageRetry,
    definitions: tuple[ActionDefinition[Any], ...] | None = None,
) -> ActionParts | None:
    """The service and tools of the actions on, or None when none is on (or the backend
    cannot carry them out). The bot's feature and `support-bot simulate` share it."""
    chosen = enabled_actions(settings) if definitions is None else definitions
    if not chosen:
        return None
    actions = backend_actions(directory, db)
    if actions is None:
        log.warning(
            "ACTIONS_ENABLED is set, but SHOP_BACKEND=%s cannot carry out actions; actions are off",
            directory.backend_name,
        )
        return None
    policies = ShopRepository(db)
    actual: ActionShop = DirectoryActions(directory, actions)
    repo = ActionRepository(db, clock=time.time)
    service = ActionService(
        repo, actual, policies, chosen, storage_retry=storage_retry, clock=time.time
    )
    tools = tuple(
        proposing_tool(
            definition,
            actual,
            repo,
            expiry_s=settings.action_confirm_ttl_s,
            lookups_per_hour=settings.order_lookups_per_hour,
        )
        for definition in chosen
    )
    return ActionParts(service, tools)


def actions_in_turns(needs: Needs, _conf: NoSettings) -> ChatPart[ActionService] | None:
    """The proposing tools and the rule that lets the model propose (in place of the
    read-only one), or None when no action is on."""
    parts = action_parts(needs.settings, needs.db, needs.shop, storage_retry=needs.storage_retry)
    if parts is None:
        return None
    return ChatPart(parts.service, tools=parts.tools, prompt=(ORDER_ACTIONS_V1,))


def actions_on_telegram(
    needs: Needs, _telegram: TelegramNeeds, service: ActionService, _conf: NoSettings
) -> Feature:
    """The ✅/✖ router among the commands and the /stats block."""
    operator_chat_id = needs.settings.operator_chat_id

    def routers(deps: HandlerDeps) -> FeatureRouters:
        return FeatureRouters(
            commands=(build_action_router(deps, service, operator_chat_id=operator_chat_id),)
        )

    async def stats_section(report: StatsReport) -> TableSection:
        counts = await service.counts(report.since, report.until)

        def lines(language: Language) -> list[str]:
            return actions_block(counts, language)

        return lines

    return Feature(name="actions", routers=routers, stats_sections=(stats_section,))


ACTIONS: FeatureSpec[ActionService, NoSettings] = FeatureSpec(
    name="actions", chat=actions_in_turns, telegram=actions_on_telegram
)
