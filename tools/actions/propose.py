"""The proposing tool of an action (`propose_<name>`): the model proposes, the
application decides.

In order: the number read by the shop's rule; the caller's lookup budget (a proposal
reads an order, so it counts as a lookup, or proposals would make probing free); private
chats only (a card in a group would show an order to everyone); the order through the
ShopDirectory, as order lookups read it; who may act on it — `tools.shop.access.may_see`,
the order lookups' own rule (the owner by Telegram id or verified phone, the demo's
public orders anyone): an order the caller may not see gets exactly the answer of a
missing one; then the definition's state and policy check. An allowed action
is stored pending with a new operation id (storage/actions.py) *before* the turn ends,
and noted (`ActionProposed`): the loop ends the turn suspended and the card goes out with
the turn's answer. A refusal is an ordinary result with its code for the model.
"""

from __future__ import annotations

import json
import logging
import time
import uuid
from collections.abc import Callable, Mapping
from datetime import UTC, datetime
from typing import Any

from storage.actions import ActionRepository, NewAction
from tools.actions.builtin import being_returned
from tools.actions.definition import ActionDefinition, ActionShop, Allowed, Decision, Policy
from tools.base import (
    ActionProposed,
    Caller,
    ErrorCode,
    LookupResult,
    OrderMissedNoPhone,
    Tool,
    ToolBusinessError,
    ToolContext,
)
from tools.order_status import (
    NOT_FOUND_MESSAGE,
    charge_lookup,
)
from tools.shop.access import Visibility, may_see
from tools.shop.backend import REQUEST_RETURN, ShopUnavailable
from tools.shop.orders import LiveOrder

log = logging.getLogger(__name__)

PRIVATE_ONLY_MESSAGE = (
    "Orders can be changed only in a private chat with the bot. Ask the customer to write "
    "to the bot directly. Do not say or guess whether this order exists."
)
PROPOSED_MESSAGE = (
    "Allowed. Nothing has happened yet: the customer now gets a card under your reply "
    "stating the exact effect, with buttons to confirm or decline. In one short sentence, "
    "ask them to check it and press a button. Do not say it is done."
)
UNAVAILABLE_MESSAGE = "The shop's system is not answering right now; try again later."
ONE_AT_A_TIME_MESSAGE = (
    "Not proposed: one change per reply. The customer gets the card of the change you "
    "already proposed in this reply; ask them to check it and press a button, and offer "
    "this one in a later reply."
)


class ProposalResult(LookupResult):
    order_id: str
    found: bool
    proposed: bool = False
    refused: str | None = None
    ask_in_private_chat: bool = False
    message: str


def may_act(order: LiveOrder | None, caller: Caller, verified_phone: str | None) -> bool:
    """Who may act on an order: who may see it (tools/shop/access.py, exactly as order
    lookups), in a private chat, never on behalf of a chat."""
    if not caller.private_chat or caller.is_chat:
        return False
    seen = may_see(
        order,
        caller_user_id=caller.key,
        verified_phone=verified_phone,
        private_chat=caller.private_chat,
        sender_is_chat=caller.is_chat,
    )
    return order is not None and seen is Visibility.VISIBLE


class ProposingHandler:
    def __init__(
        self,
        definition: ActionDefinition[Any],
        shop: ActionShop,
        actions: ActionRepository,
        *,
        expiry_s: float,
        lookups_per_hour: int,
        clock: Callable[[], float] = time.time,
    ) -> None:
        self._definition = definition
        self._shop = shop
        self._actions = actions
        self._expiry_s = expiry_s
        self._limit = lookups_per_hour
        self._clock = clock

    async def __call__(self, arguments: Any, context: ToolContext) -> ProposalResult:
        started = time.perf_counter()
        result = await self._propose(arguments, context)
        decision = "proposed" if result.proposed else (result.refused or "not_found")
        log.info(
            "action %s proposed by user %s for order %s: %s (%.0f ms)",
            self._definition.name,
            context.caller.key,
            result.order_id,
            decision,
            (time.perf_counter() - started) * 1000,
        )
        return result

    async def _propose(self, arguments: Any, context: ToolContext) -> ProposalResult:
        caller = context.caller
        try:
            number = self._shop.number_rule.normalise(arguments.order_id)
        except ValueError as exc:
            raise ToolBusinessError(ErrorCode.INVALID_ARGUMENTS, f"order_id: {exc}") from None
        arguments = arguments.model_copy(update={"order_id": number})
        if any(isinstance(note, ActionProposed) for note in context.notes):
            # a reply carries one card: a second proposal would be stored with none
            return ProposalResult(
                order_id=number, found=False, refused="one_at_a_time", message=ONE_AT_A_TIME_MESSAGE
            )
        now = self._clock()
        await charge_lookup(context, number, limit=self._limit, now=now)
        if not caller.private_chat or caller.is_chat:
            return ProposalResult(
                order_id=number,
                found=False,
                ask_in_private_chat=True,
                message=PRIVATE_ONLY_MESSAGE,
            )
        order = await self._callers_order(number, context)
        if order is None:
            return ProposalResult(order_id=number, found=False, message=NOT_FOUND_MESSAGE)
        decision = await self._check(order, arguments, context, now)
        if not isinstance(decision, Allowed):
            return ProposalResult(
                order_id=number, found=True, refused=decision.code, message=decision.message
            )
        await self._store(order, arguments, context, now)
        return ProposalResult(order_id=number, found=True, proposed=True, message=PROPOSED_MESSAGE)

    async def _callers_order(self, number: str, context: ToolContext) -> LiveOrder | None:
        """The order when this customer may act on it, else None: a missing order and
        someone else's get the same answer, so a guess learns nothing."""
        try:
            order = await self._shop.get_order(number)
        except ShopUnavailable:
            raise ToolBusinessError(ErrorCode.UNAVAILABLE, UNAVAILABLE_MESSAGE) from None
        caller = context.caller
        phone = await context.storage_wait.run(
            "verified phone read", lambda: context.shop.get_verified_phone(caller.key)
        )
        if order is None or not may_act(order, caller, phone):  # the answer of a missing one
            if phone is None:
                context.notes.append(OrderMissedNoPhone(order_id=number))
            return None
        return order

    async def _check(
        self, order: LiveOrder, arguments: Any, context: ToolContext, now: float
    ) -> Decision:
        """The shop's policy on this order now, with what is already being returned, so
        a second return cannot take the same items twice."""
        store = context.storage_wait

        async def returning(order_number: str) -> Mapping[str, int]:
            confirmed = await store.run(
                "reading an order's returns",
                lambda: self._actions.confirmed_arguments(order_number, REQUEST_RETURN),
            )
            return being_returned(confirmed)

        policy = Policy(
            shop=context.shop, now=datetime.fromtimestamp(now, UTC), returning=returning
        )
        return await self._definition.check(order, arguments, policy)

    async def _store(
        self, order: LiveOrder, arguments: Any, context: ToolContext, now: float
    ) -> None:
        """Store the proposal under a new operation id and note it for the reply's card:
        nothing happens at the shop until the customer confirms it."""
        operation_id = uuid.uuid4().hex
        effect = self._definition.effect(order, arguments)
        new = NewAction(
            operation_id=operation_id,
            action=self._definition.name,
            order_number=arguments.order_id,
            chat_id=context.caller.chat_id,
            user_id=context.caller.key,
            arguments=arguments.model_dump_json(),
            effect=json.dumps(effect, ensure_ascii=False),
            done_words=json.dumps(
                self._definition.done(order, arguments, None), ensure_ascii=False
            ),
            turn_id=context.turn_id,
            expires_at=now + self._expiry_s,
        )
        await context.storage_wait.run(
            "storing a proposed action", lambda: self._actions.create(new)
        )
        context.notes.append(ActionProposed(operation_id=operation_id, effect=effect))


def proposing_tool(
    definition: ActionDefinition[Any],
    shop: ActionShop,
    actions: ActionRepository,
    *,
    expiry_s: float,
    lookups_per_hour: int,
    offered: Callable[[], bool] | None = None,
    clock: Callable[[], float] = time.time,
) -> Tool[Any, ProposalResult]:
    """`offered`: whether the model is offered it now (the connected shop does it)."""
    return Tool(
        name=definition.tool_name,
        description=definition.description,
        arguments_model=definition.arguments_model,
        result_model=ProposalResult,
        handler=ProposingHandler(
            definition,
            shop,
            actions,
            expiry_s=expiry_s,
            lookups_per_hour=lookups_per_hour,
            clock=clock,
        ),
        timeout_s=10.0,
        read_only=False,
        offered=offered,
    )
