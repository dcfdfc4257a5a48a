"""`get_order_status`: where is my order — for the customer who owns it.

Access is decided here from the caller identity in `ToolContext` (Telegram), never from
the model's arguments. An order with an owner is shown to a caller whose Telegram id is
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

import time
from collections.abc import Callable
from datetime import date, datetime

from pydantic import BaseModel, ConfigDict, Field, field_validator

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
from tools.shop.rules import OrderStatus, check_order_id

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

DESCRIPTION = (
    "Get the current status of one of the customer's orders by its 4-digit number: "
    "processing, in transit, ready for pickup, delivered or cancelled, plus the last "
    "update time, pickup point and expected delivery date when known. Use it when the "
    "customer asks where an order is, when it will arrive or whether it can be picked up. "
    "If the customer did not give a 4-digit order number, ask for it instead of guessing."
)


class GetOrderStatusArguments(BaseModel):
    model_config = ConfigDict(extra="forbid")

    order_id: str = Field(
        description="The order number: exactly 4 digits, e.g. 8041, without any prefix.",
    )

    @field_validator("order_id")
    @classmethod
    def _four_digits(cls, value: str) -> str:
        return check_order_id(value)


class OrderStatusResult(LookupResult):
    order_id: str
    found: bool
    status: OrderStatus | None = None
    updated_at: datetime | None = None
    pickup_point: str | None = None
    expected_date: date | None = None
    ask_in_private_chat: bool = False
    message: str


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
        # or not it exists or belongs to the caller.
        # Through a storage fault the lookup waits (its timeout paused) instead of
        # failing: the customer's check is answered once the store is back.
        store = context.storage_wait
        allowed = await store.run(
            "order lookup",
            lambda: context.shop.record_order_lookup(
                user_id=caller.key,
                order_id=arguments.order_id,
                now=now,
                since=now - LOOKUP_WINDOW_S,
                max_distinct=self._limit,
            ),
        )
        if not allowed:
            raise ToolBusinessError(ErrorCode.RATE_LIMITED, RATE_LIMITED_MESSAGE)
        order = await store.run("order read", lambda: context.shop.get_order(arguments.order_id))
        if order is not None and order.owner_telegram_id is None and order.owner_phone is None:
            return _found(order)  # public: anyone, in any chat
        if not caller.private_chat or caller.is_chat:
            # the same answer for own, someone else's and missing orders (module docstring)
            return OrderStatusResult(
                order_id=arguments.order_id,
                found=False,
                ask_in_private_chat=True,
                message=PRIVATE_CHAT_MESSAGE,
            )
        # read for every private lookup, found or not, so a miss costs the same
        phone = await store.run(
            "verified phone read", lambda: context.shop.get_verified_phone(caller.key)
        )
        if order is not None and _owned_by(order, caller.key, phone):
            context.notes.append(OwnOrderShown(order_id=order.order_id))
            return _found(order)
        if phone is None:
            context.notes.append(OrderMissedNoPhone(order_id=arguments.order_id))
        return OrderStatusResult(
            order_id=arguments.order_id,
            found=False,
            message=NOT_FOUND_MESSAGE,
        )


def _owned_by(order: OrderRecord, user_id: int, verified_phone: str | None) -> bool:
    if order.owner_telegram_id is not None and order.owner_telegram_id == user_id:
        return True
    return verified_phone is not None and order.owner_phone == verified_phone


def _found(order: OrderRecord) -> OrderStatusResult:
    # Storage keeps dates as ISO text; validation turns them into date/datetime.
    return OrderStatusResult.model_validate(
        {
            "order_id": order.order_id,
            "found": True,
            "status": OrderStatus(order.status),
            "updated_at": order.updated_at,
            "pickup_point": order.pickup_point,
            "expected_date": order.expected_date,
            "message": "Order found.",
        }
    )


def order_status_tool(
    *, lookups_per_hour: int, clock: Callable[[], float] = time.time
) -> Tool[GetOrderStatusArguments, OrderStatusResult]:
    return Tool(
        name=GET_ORDER_STATUS,
        description=DESCRIPTION,
        arguments_model=GetOrderStatusArguments,
        result_model=OrderStatusResult,
        handler=OrderStatusHandler(lookups_per_hour=lookups_per_hour, clock=clock),
        timeout_s=5.0,
        read_only=True,
    )
