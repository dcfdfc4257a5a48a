"""`get_order_status`: where is my order — for the customer who owns it.

Orders are read through the `ShopDirectory` (tools/shop/directory.py: the configured
`SHOP_BACKEND`, cached); access is decided by `tools.shop.access.may_see` from the caller
identity in `ToolContext` (Telegram), never from the model's arguments. What an order
number looks like is the shop's `OrderNumberRule`: the argument's validator and the
schema the model reads are built from it. When the shop cannot answer, the model gets
`unavailable` (to tell the customer it is temporarily unavailable), never a detail.
An order with an owner is shown to a caller whose Telegram id is
its `owner_telegram_id` or whose verified phone is its `owner_phone`; the verified phone
is read from storage by the caller's Telegram id (a number the customer proved theirs by
sharing their own contact, see `services.phones`), never taken from the conversation.
The result never contains the phone number. A miss in a private chat by a caller without
a verified phone notes `OrderMissedNoPhone`, so the bot offers to share one
— for every such miss, whether or not the order exists. An order someone else owns is
indistinguishable from an order that does not exist, so the tool cannot be used to probe
which numbers are real. The number of distinct orders one caller may look up per rolling
hour is bounded, and every lookup counts — found, hidden or missing — because otherwise
probing is free.

Groups. An answer in a group is read by every member and enters the group's shared
history, so an owner-only order is never shown there, not even to its owner. In a group
only public orders (no owner id and no owner phone) are found; every other number — the
caller's own order, someone else's, a missing one — gets one and the same answer: "ask
in a private chat with the bot" (`ask_in_private_chat`). Uniform on purpose: the reply
is posted in the group, so answering the owner "ask in private" but others "not found"
would tell every member that the order exists and whose it is. A message sent on behalf
of a chat (an anonymous group admin, a channel) never gets owner access, wherever it
comes from.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable
from datetime import date, datetime
from decimal import Decimal
from typing import Any

from pydantic import (
    BaseModel,
    ConfigDict,
    Field,
    SerializerFunctionWrapHandler,
    field_validator,
    model_serializer,
)

from storage.shop_records import OrderRecord
from tools.base import (
    ErrorCode,
    LookupResult,
    OrderMissedNoPhone,
    OwnOrderShown,
    Tool,
    ToolBusinessError,
    ToolContext,
)
from tools.shop.access import Visibility, may_see
from tools.shop.backend import ShopUnavailable
from tools.shop.backends.local import LocalBackend, live_order
from tools.shop.directory import ShopDirectory, local_directory
from tools.shop.orders import FOUR_DIGITS, UNKNOWN_TIME, LiveOrder, OrderNumberRule
from tools.shop.rules import OrderStatus

log = logging.getLogger("tools.order_status")

GET_ORDER_STATUS = "get_order_status"
LOOKUP_WINDOW_S = 3600.0
NOT_FOUND_MESSAGE = (
    "No order with this number was found for this customer. Ask the customer to check "
    "the number; orders are shown only to the customer who placed them."
)
PRIVATE_CHAT_MESSAGE = (
    "This is a group chat: everyone in it reads the answer, so only public orders are "
    "shown here, and no public order has this number. Tell the customer that their own "
    "orders are shown only in a private chat with the bot: ask them to write to the bot "
    "directly and ask again there. Do not say or guess whether this order exists."
)
RATE_LIMITED_MESSAGE = (
    "The customer has checked too many different orders in the last hour. "
    "Ask them to try again later; orders already checked can still be asked about."
)
UNAVAILABLE_MESSAGE = (
    "The shop's order system is temporarily unavailable, so the order cannot be checked "
    "right now. Apologise briefly and ask the customer to try again in a few minutes; do "
    "not guess the order's status. Other questions can still be answered."
)

DESCRIPTION = (
    "The status of one of the customer's orders by its 4-digit number: processing, in "
    "transit, ready for pickup, delivered or cancelled, with the pickup point and the "
    "expected date when known."
)


def description_for(rule: OrderNumberRule) -> str:
    """The tool's description for a shop's order numbers (the demo's: `DESCRIPTION`)."""
    if rule == FOUR_DIGITS:
        return DESCRIPTION
    return (
        f"The status of one of the customer's orders by its number ({rule.description}, "
        f"e.g. {rule.example}): processing, in transit, ready for pickup, delivered or "
        "cancelled, with the pickup point, delivery and tracking details when known."
    )


def _number_field(rule: OrderNumberRule) -> str:
    return f"{rule.description}, e.g. {rule.example}, no prefix."


# The demo's arguments (four digits); `arguments_for` builds them for a shop's rule. (No
# docstring: it would become the schema's description the model reads.)
class GetOrderStatusArguments(BaseModel):
    model_config = ConfigDict(extra="forbid")

    order_id: str = Field(description=_number_field(FOUR_DIGITS))

    @field_validator("order_id")
    @classmethod
    def _order_number(cls, value: str) -> str:
        return FOUR_DIGITS.normalise(value)


def arguments_for(rule: OrderNumberRule) -> type[GetOrderStatusArguments]:
    """The argument model whose validator and schema say what `rule` says."""
    if rule == FOUR_DIGITS:
        return GetOrderStatusArguments

    class ShopOrderStatusArguments(GetOrderStatusArguments):
        order_id: str = Field(description=_number_field(rule))

        @field_validator("order_id")
        @classmethod
        def _order_number(cls, value: str) -> str:
            return rule.normalise(value)

    return ShopOrderStatusArguments


class OrderLine(BaseModel):
    name: str
    quantity: int


class OrderTotal(BaseModel):
    amount: Decimal
    currency: str


class OrderStatusResult(LookupResult):
    order_id: str
    found: bool
    status: OrderStatus | None = None
    updated_at: datetime | None = None
    pickup_point: str | None = None
    expected_date: date | None = None
    carrier: str | None = None
    tracking_number: str | None = None
    tracking_url: str | None = None
    items: list[OrderLine] | None = None
    total: OrderTotal | None = None
    ask_in_private_chat: bool = False
    message: str

    @model_serializer(mode="wrap")
    def _without_unknown_live_details(self, serialize: SerializerFunctionWrapHandler) -> Any:
        """Delivery details, items and the total are left out where the shop gave none (an
        imported order may lack them): the model reads no nulls it cannot use, and an
        answer keeps the size it had before live shops."""
        data = serialize(self)
        for key in _LIVE_ONLY:
            if isinstance(data, dict) and data.get(key) is None:
                data.pop(key, None)
        if isinstance(data, dict) and data.get("ask_in_private_chat") is False:
            data.pop("ask_in_private_chat")  # said only when it is so
        return data


_LIVE_ONLY = ("carrier", "tracking_number", "tracking_url", "items", "total")


async def charge_lookup(context: ToolContext, key: str, *, limit: int, now: float) -> None:
    """One lookup of `key` (an order number, or a list's key) against the caller's budget
    of `limit` distinct keys per rolling hour; a repeat within the hour is free. Raises
    `rate_limited` over the budget. Through a storage fault it waits (the tool's timeout
    paused) instead of failing. Every tool that reads an order charges it here, before
    the read, so probing costs the same whatever the answer or the shop's state."""
    allowed = await context.storage_wait.run(
        "order lookup",
        lambda: context.shop.record_order_lookup(
            user_id=context.caller.key,
            order_id=key,
            now=now,
            since=now - LOOKUP_WINDOW_S,
            max_distinct=limit,
        ),
    )
    if not allowed:
        raise ToolBusinessError(ErrorCode.RATE_LIMITED, RATE_LIMITED_MESSAGE)


class OrderStatusHandler:
    """The handler, configured with the lookup bound and a clock (injectable for tests)."""

    def __init__(self, *, lookups_per_hour: int, clock: Callable[[], float] = time.time) -> None:
        if lookups_per_hour < 1:
            raise ValueError("lookups_per_hour must be at least 1")
        self._limit = lookups_per_hour
        self._clock = clock

    async def __call__(
        self, arguments: GetOrderStatusArguments, context: ToolContext
    ) -> OrderStatusResult:
        now = self._clock()
        caller = context.caller
        # A repeat lookup of an order already checked within the hour does not use up
        # another slot (the customer asking twice is normal); a new number does, whether
        # or not it exists or belongs to the caller — and whether or not the shop answers
        # (counted before the read, so probing a shop that is down is not free either).
        # Through a storage fault the lookup waits (its timeout paused) instead of
        # failing: the customer's check is answered once the store is back.
        store = context.storage_wait
        await charge_lookup(context, arguments.order_id, limit=self._limit, now=now)
        directory = directory_of(context)
        try:
            if directory.reads_bot_storage:  # a storage fault is waited out, as before
                order = await store.run(
                    "order read", lambda: directory.get_order(arguments.order_id)
                )
            else:  # the shop's API: bounded by the backend's budget and this tool's timeout
                order = await directory.get_order(arguments.order_id)
        except ShopUnavailable as exc:
            log.warning("order read: shop %s unavailable (%s)", directory.backend_name, exc.kind)
            raise ToolBusinessError(ErrorCode.UNAVAILABLE, UNAVAILABLE_MESSAGE) from None
        private = caller.private_chat and not caller.is_chat
        phone = None
        if private:  # read for every private lookup, found or not, so a miss costs the same
            phone = await store.run(
                "verified phone read", lambda: context.shop.get_verified_phone(caller.key)
            )
        seen = may_see(
            order,
            caller_user_id=caller.key,
            verified_phone=phone,
            private_chat=caller.private_chat,
            sender_is_chat=caller.is_chat,
        )
        if seen is Visibility.VISIBLE and order is not None:
            if private and not order.public:  # the customer's own: "notify me"
                context.notes.append(OwnOrderShown(order_id=order.number))
            return found_result(order)
        if seen is Visibility.ASK_IN_PRIVATE:
            # the same answer for own, someone else's and missing orders (module docstring)
            return OrderStatusResult(
                order_id=arguments.order_id,
                found=False,
                ask_in_private_chat=True,
                message=PRIVATE_CHAT_MESSAGE,
            )
        if phone is None:
            context.notes.append(OrderMissedNoPhone(order_id=arguments.order_id))
        return OrderStatusResult(
            order_id=arguments.order_id,
            found=False,
            message=NOT_FOUND_MESSAGE,
        )


def directory_of(context: ToolContext) -> ShopDirectory:
    """Where this turn reads orders (the local backend over `shop` when none is set)."""
    if context.shop_directory is not None:
        return context.shop_directory
    return local_directory(LocalBackend(context.shop))


def found_result(order: LiveOrder | OrderRecord) -> OrderStatusResult:
    """What the model is given about an order the caller may see."""
    if isinstance(order, OrderRecord):  # a stored order (the demo's tests read them so)
        order = live_order(order)
    delivery = order.delivery
    return OrderStatusResult(
        order_id=order.number,
        found=True,
        status=order.status,
        updated_at=None if order.updated_at == UNKNOWN_TIME else order.updated_at,
        pickup_point=delivery.pickup_point if delivery else None,
        expected_date=delivery.eta if delivery else None,
        carrier=delivery.carrier if delivery else None,
        tracking_number=delivery.tracking_number if delivery else None,
        tracking_url=delivery.tracking_url if delivery else None,
        items=[OrderLine(name=i.name, quantity=i.quantity) for i in order.items] or None,
        total=(
            OrderTotal(amount=order.total.amount, currency=order.total.currency)
            if order.total
            else None
        ),
        message="Order found.",
    )


_found = found_result  # the name the demo's tests read results by


def order_status_tool(
    *,
    lookups_per_hour: int,
    clock: Callable[[], float] = time.time,
    number_rule: OrderNumberRule = FOUR_DIGITS,
) -> Tool[GetOrderStatusArguments, OrderStatusResult]:
    """The tool for a shop whose order numbers follow `number_rule`."""
    return Tool(
        name=GET_ORDER_STATUS,
        description=description_for(number_rule),
        arguments_model=arguments_for(number_rule),
        result_model=OrderStatusResult,
        handler=OrderStatusHandler(lookups_per_hour=lookups_per_hour, clock=clock),
        timeout_s=5.0,
        read_only=True,
    )
