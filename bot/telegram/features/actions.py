"""Actions with confirmation as one feature: on only when ACTIONS_ENABLED names
an action (cancel_order, request_return, change_address).

It adds one proposing tool per action on (tools/actions/propose.py), the router of the
card's ✅/✖ presses among the commands (limited per user like every button press), and
the /stats block. The card itself is the turn's `ConfirmAction` offer, shown by
bot/telegram/turn_view.py. Orders are read through the ShopDirectory the order tools use
(SHOP_BACKEND) and changed through the backend's `OrderActions`: the one a live backend
implements itself, or, with imported data (local), a request to the shop's people
(tools/shop/backends/local_actions.py) whose card, Done/Refuse presses and refusal
reasons this feature's routers handle (bot/telegram/routers/actions.py). A backend without actions
leaves the feature off, with a warning. Its settings are `ActionsSettings` (ACTIONS_ENABLED,
ACTION_*), its words `ACTION_WORDS` (customers) and `ACTION_STAFF_WORDS` (the shop's people,
in the shop's language): bot/telegram/action_words.py.
"""

from __future__ import annotations

import asyncio
import functools
import logging
import time
from dataclasses import dataclass
from typing import Annotated, Any

from pydantic import Field, field_validator
from pydantic_settings import NoDecode

from bot.runtime.config import FeatureSettings, Settings, load_feature_settings, split_csv
from bot.telegram.action_sweeper import ActionSweeper
from bot.telegram.action_words import ACTION_STAFF_WORDS, ACTION_WORDS
from bot.telegram.context import HandlerDeps
from bot.telegram.features import Feature, FeatureRouters
from bot.telegram.features.catalog import (
    ChatPart,
    Needs,
    TelegramFeatureSpec,
    TelegramNeeds,
    word_table,
)
from bot.telegram.outgoing import OutgoingDelivery
from bot.telegram.routers.actions import (
    Staff,
    build_action_router,
    build_actions_off_router,
    build_refusal_router,
    build_request_router,
)
from bot.telegram.routers.admin import StatsSection
from bot.telegram.stats_view.actions import actions_block
from bot.telegram.stats_view.table import TableSection
from bot.telegram.texts import Language
from services.actions import ActionService, Sweep
from services.prompts.support_chat import ORDER_ACTIONS_V2
from services.stats import StatsReport
from storage.actions import ActionRepository, LocalActionStore
from storage.database import Database, StorageRetry
from storage.outgoing import OutgoingRepository
from storage.shop import ShopRepository
from tools.actions.builtin import BUILT_IN_ACTIONS
from tools.actions.capabilities import ActionCapabilities
from tools.actions.definition import ActionDefinition, ActionShop
from tools.actions.propose import proposing_tool
from tools.base import Tool
from tools.shop.backend import OrderActions
from tools.shop.backends.local_actions import (
    LOCAL_ACTIONS,
    DirectoryActions,
    LocalOrderActions,
    LocalRequestActions,
)
from tools.shop.directory import ShopDirectory

log = logging.getLogger("bot")

CAPABILITIES_RETRY_S = 30.0  # the shop could not say yet
CAPABILITIES_REFRESH_S = 600.0  # the shop said: ask again now and then


class ActionsSettings(FeatureSettings):
    """The actions' own settings (the names owners have always set)."""

    # the actions on, by name (cancel_order, request_return, change_address;
    # comma-separated); empty: no actions at all
    actions_enabled: Annotated[tuple[str, ...], NoDecode] = ()
    # how long a confirmation card can be pressed (seconds)
    action_confirm_ttl_s: float = Field(default=900.0, ge=10, le=7 * 24 * 3600)
    # an outcome the shop left unknown: asked again in the background this many times,
    # the first after ACTION_RETRY_FIRST_S, then twice as long each time; then a person
    action_retry_attempts: int = Field(default=5, ge=1, le=20)
    action_retry_first_s: float = Field(default=30.0, ge=0.5, le=3600)
    # SHOP_BACKEND=local: a request to the shop's people nobody answered in this time
    # (seconds) is reminded of once
    action_request_escalate_s: float = Field(default=4 * 3600.0, ge=1, le=7 * 24 * 3600)

    @field_validator("actions_enabled", mode="before")
    @classmethod
    def _parse_actions(cls, value: Any) -> Any:
        items = split_csv(value)
        if not isinstance(items, list):
            return items
        known = [definition.name for definition in BUILT_IN_ACTIONS]
        unknown = [item for item in items if item not in known]
        if unknown:
            raise ValueError(f"unknown action {unknown[0]!r}; known: {', '.join(known)}")
        return tuple(dict.fromkeys(items))


def enabled_actions(conf: ActionsSettings) -> tuple[ActionDefinition[Any], ...]:
    return tuple(d for d in BUILT_IN_ACTIONS if d.name in conf.actions_enabled)


def backend_actions(directory: ShopDirectory, db: Database) -> OrderActions | None:
    """The configured backend's actions: the backend's own (it declares them:
    `ShopBackend.order_actions`), or, for the local one, requests to the shop's people."""
    own = directory.backend.order_actions()
    if own is not None:
        return own
    if directory.backend_name == "local":
        return LocalRequestActions(ActionRepository(db, clock=time.time))
    return None


@dataclass(frozen=True, slots=True)
class ActionParts:
    """The service a ✅/✖ press goes through and the proposing tools, over one backend."""

    service: ActionService
    tools: tuple[Tool[Any, Any], ...]
    capabilities: ActionCapabilities


def action_parts(
    settings: Settings,
    conf: ActionsSettings,
    db: Database,
    directory: ShopDirectory,
    *,
    storage_retry: StorageRetry,
    definitions: tuple[ActionDefinition[Any], ...] | None = None,
) -> ActionParts | None:
    """The service and tools of the actions on, or None when none is on (or the backend
    cannot carry them out). The bot's feature and `support-bot simulate` share it."""
    chosen = enabled_actions(conf) if definitions is None else definitions
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
    # the bot's own (local) actions are known now; a live shop's are learnt at start
    local = isinstance(actions, LocalRequestActions)
    known = LOCAL_ACTIONS if local else None
    capabilities = ActionCapabilities(actions, known)
    repo = ActionRepository(db, clock=time.time)
    # local: a person's Done on a request changes the bot's own copy of the order
    people = DirectoryActions(directory, LocalOrderActions(LocalActionStore(db))) if local else None
    service = ActionService(
        repo,
        actual,
        policies,
        chosen,
        storage_retry=storage_retry,
        capabilities=capabilities,
        sweep=sweep_of(conf),
        clock=time.time,
        people=people,
    )
    tools = tuple(
        proposing_tool(
            definition,
            actual,
            repo,
            expiry_s=conf.action_confirm_ttl_s,
            lookups_per_hour=settings.order_lookups_per_hour,
            offered=functools.partial(capabilities.supports, definition.name),
        )
        for definition in chosen
    )
    return ActionParts(service, tools, capabilities)


async def learn_capabilities(parts: ActionParts, chosen: tuple[str, ...]) -> None:
    """At start: ask the shop which actions it does; a WARNING when it does none of the
    actions on (or cannot say yet: asked again in the background)."""
    known = await parts.capabilities.learn()
    if known is None:
        log.warning(
            "ACTIONS_ENABLED is set, but the shop could not say yet which actions it "
            "carries out; none is offered until it does (asked again every %d s)",
            int(CAPABILITIES_RETRY_S),
        )
        return
    missing = [name for name in chosen if name not in known]
    if len(missing) == len(chosen):
        log.warning(
            "ACTIONS_ENABLED is set, but the shop carries out none of %s; no action is offered",
            ", ".join(chosen),
        )
    elif missing:
        log.warning("the shop does not carry out %s; not offered", ", ".join(missing))


async def keep_capabilities(parts: ActionParts) -> None:
    """Ask the shop again now and then: soon while it could not say, seldom after."""
    while True:
        unknown = parts.capabilities.known is None
        await asyncio.sleep(CAPABILITIES_RETRY_S if unknown else CAPABILITIES_REFRESH_S)
        await parts.capabilities.learn()


def actions_off_feature(needs: Needs, telegram: TelegramNeeds) -> Feature:
    """With no action on: the answer to a press on an old card ("no longer offered"), and
    the end of actions left unfinished while they were on (a process that died, an
    outcome still unknown): one never carried out ends failed, one the shop may have
    done needs a person — each told once, like the sweeper tells it with actions on."""
    settings = needs.settings
    conf = load_feature_settings(ActionsSettings)  # checked already: the feature is off
    repo = ActionRepository(needs.db, clock=time.time)
    # no definition: the shop is never asked (see ActionService._carry_out)
    unused: ActionShop = DirectoryActions(needs.shop, LocalRequestActions(repo))
    service = ActionService(
        repo,
        unused,
        ShopRepository(needs.db),
        (),
        storage_retry=needs.storage_retry,
        sweep=sweep_of(conf),
        clock=time.time,
    )
    sweeper = ActionSweeper(
        service,
        OutgoingDelivery(
            OutgoingRepository(needs.db, clock=time.time),
            telegram.sender,
            storage_retry=needs.storage_retry,
            first_retry_s=min(conf.action_retry_first_s, 15.0),
        ),
        telegram.texts,
        staff_chats=sorted(settings.admin_ids),
        operator_chat_id=settings.operator_chat_id,
        every_s=min(conf.action_retry_first_s, 15.0),
    )

    def routers(deps: HandlerDeps) -> FeatureRouters:
        return FeatureRouters(commands=(build_actions_off_router(deps),))

    return Feature(name="actions_off", routers=routers, background=sweeper.run)


def sweep_of(conf: ActionsSettings) -> Sweep:
    first = conf.action_retry_first_s
    return Sweep(quiet_for_s=2 * first, first_wait_s=first, attempts=conf.action_retry_attempts)


def actions_in_turns(needs: Needs, conf: ActionsSettings) -> ChatPart[ActionParts] | None:
    """The proposing tools and the rule that lets the model propose (in place of the
    read-only one), or None when no action is on."""
    parts = action_parts(
        needs.settings, conf, needs.db, needs.shop, storage_retry=needs.storage_retry
    )
    if parts is None:
        return None
    return ChatPart(parts, tools=parts.tools, prompt=(ORDER_ACTIONS_V2,))


def actions_on_telegram(
    needs: Needs, telegram: TelegramNeeds, parts: ActionParts, conf: ActionsSettings
) -> Feature:
    """The ✅/✖ router among the commands, the /stats block, the shop's capabilities learnt
    at start and the sweeper that ends unknown outcomes (background)."""
    settings = needs.settings
    operator_chat_id = settings.operator_chat_id
    service = parts.service
    chosen = service.names

    staff = Staff(settings.admin_ids, operator_chat_id, telegram.texts)
    local = needs.shop.backend_name == "local"

    async def on_start() -> None:
        await learn_capabilities(parts, chosen)
        if local and not staff.chats:
            log.warning(
                "ACTIONS_ENABLED with SHOP_BACKEND=local: customers' requests go to the "
                "shop's people, but neither ADMIN_IDS nor OPERATOR_CHAT_ID is set"
            )

    sweeper = _sweeper(needs, telegram, service, staff, conf)

    async def background() -> None:
        await asyncio.gather(keep_capabilities(parts), sweeper.run())

    def routers(deps: HandlerDeps) -> FeatureRouters:
        presses = build_action_router(deps, service, operator_chat_id=operator_chat_id, staff=staff)
        if not local:
            return FeatureRouters(commands=(presses,))
        return FeatureRouters(
            first=(build_refusal_router(service, staff, telegram.texts),),
            commands=(presses, build_request_router(deps, service, staff, telegram.texts)),
        )

    return Feature(
        name="actions",
        routers=routers,
        stats_sections=(_stats_section(service),),
        on_start=on_start,
        background=background,
    )


def _sweeper(
    needs: Needs,
    telegram: TelegramNeeds,
    service: ActionService,
    staff: Staff,
    conf: ActionsSettings,
) -> ActionSweeper:
    """The background work that settles unknown outcomes and reminds staff of open
    requests: its own delivery, so a reminder survives a restart like any reply."""
    settings = needs.settings
    delivery = OutgoingDelivery(
        OutgoingRepository(needs.db, clock=time.time),
        telegram.sender,
        storage_retry=needs.storage_retry,
        first_retry_s=min(conf.action_retry_first_s, 15.0),
    )
    return ActionSweeper(
        service,
        delivery,
        telegram.texts,
        staff_chats=sorted(settings.admin_ids),
        operator_chat_id=settings.operator_chat_id,
        every_s=min(conf.action_retry_first_s, 15.0),
        staff=staff,
        escalate_after_s=conf.action_request_escalate_s,
    )


def _stats_section(service: ActionService) -> StatsSection:
    """The /stats block: the period's counts, plus what waits on people now."""

    async def stats_section(report: StatsReport) -> TableSection:
        counts = await service.counts(report.since, report.until)
        waiting = await service.needing_attention()
        requests = await service.open_requests()

        def lines(language: Language) -> list[str]:
            return actions_block(counts, language, waiting, requests)

        return lines

    return stats_section


# customers' words in their language, the staff's in the shop's (bot/telegram/action_words.py)
ACTIONS: TelegramFeatureSpec[ActionParts, ActionsSettings] = TelegramFeatureSpec(
    name="actions",
    chat=actions_in_turns,
    telegram=actions_on_telegram,
    settings=ActionsSettings,
    words=word_table(ACTION_WORDS, ACTION_STAFF_WORDS),
    turned_on={"actions_enabled": tuple(d.name for d in BUILT_IN_ACTIONS)},
)
