"""`list_my_orders`: "what are my orders?" without a number, from the shop's live data.

Registered only with a live `SHOP_BACKEND` (a customer of a live shop often does not know
the number; the local demo's orders are found by number). Only in a private chat and only
by the caller's *verified* phone (a contact they shared as their own, read from storage
by their Telegram id): the backend lists the orders of that phone and
`tools.shop.access.may_see` still decides each one, so nothing is listed that a lookup by
number would not show. At most `MAX_LISTED` orders, the newest first. One call counts as
one lookup of the hour's budget (the same key each time, so asking again is free).
Without a verified phone it lists nothing and notes `OrderMissedNoPhone`, so the bot
offers the share-my-phone button.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable

from pydantic import BaseModel, ConfigDict

from tools.base import (
    ErrorCode,
    LookupResult,
    OrderMissedNoPhone,
    Tool,
    ToolBusinessError,
    ToolContext,
)
from tools.order_status import (
    UNAVAILABLE_MESSAGE,
    OrderStatusResult,
    charge_lookup,
    directory_of,
    found_result,
)
from tools.shop.access import Visibility, may_see
from tools.shop.backend import ShopUnavailable

log = logging.getLogger("tools.my_orders")

LIST_MY_ORDERS = "list_my_orders"
MAX_LISTED = 5
# the lookup-budget key of a list (not an order number: no rule's number contains "*")
LIST_LOOKUP_KEY = "*my-orders"
DESCRIPTION = (
    "List the customer's own most recent orders (at most 5, newest first) with their "
    "status, when the customer asks about their orders without giving an order number. "
    "Works only in a private chat and only for a customer who shared their phone number "
    "with the bot; otherwise it says so."
)
NO_PHONE_MESSAGE = (
    "The customer has not shared their phone number with the bot, so their orders cannot "
    "be listed. Ask them for the order number, or to share their phone with /phone."
)
PRIVATE_MESSAGE = (
    "This is a group chat: orders are listed only in a private chat with the bot. Ask "
    "the customer to write to the bot directly."
)


class ListMyOrdersArguments(BaseModel):
    model_config = ConfigDict(extra="forbid")


class MyOrdersResult(LookupResult):
    found: bool
    orders: list[OrderStatusResult]
    message: str


class MyOrdersHandler:
    def __init__(self, *, lookups_per_hour: int, clock: Callable[[], float] = time.time) -> None:
        self._limit = lookups_per_hour
        self._clock = clock

    async def __call__(
        self, arguments: ListMyOrdersArguments, context: ToolContext
    ) -> MyOrdersResult:
        caller = context.caller
        if not caller.private_chat or caller.is_chat:
            return MyOrdersResult(found=False, orders=[], message=PRIVATE_MESSAGE)
        store = context.storage_wait
        now = self._clock()
        await charge_lookup(context, LIST_LOOKUP_KEY, limit=self._limit, now=now)
        phone = await store.run(
            "verified phone read", lambda: context.shop.get_verified_phone(caller.key)
        )
        if phone is None:
            context.notes.append(OrderMissedNoPhone(order_id=""))
            return MyOrdersResult(found=False, orders=[], message=NO_PHONE_MESSAGE)
        directory = directory_of(context)
        try:
            listed = await directory.orders_for_phone(phone)
        except ShopUnavailable as exc:
            log.warning("order list: shop %s unavailable (%s)", directory.backend_name, exc.kind)
            raise ToolBusinessError(ErrorCode.UNAVAILABLE, UNAVAILABLE_MESSAGE) from None
        visible = [
            order
            for order in listed
            if may_see(
                order,
                caller_user_id=caller.key,
                verified_phone=phone,
                private_chat=caller.private_chat,
                sender_is_chat=caller.is_chat,
            )
            is Visibility.VISIBLE
        ]
        visible.sort(key=lambda order: order.updated_at, reverse=True)
        orders = [found_result(order) for order in visible[:MAX_LISTED]]
        message = "The customer's most recent orders." if orders else "No orders for this phone."
        return MyOrdersResult(found=bool(orders), orders=orders, message=message)


def my_orders_tool(
    *, lookups_per_hour: int, clock: Callable[[], float] = time.time
) -> Tool[ListMyOrdersArguments, MyOrdersResult]:
    return Tool(
        name=LIST_MY_ORDERS,
        description=DESCRIPTION,
        arguments_model=ListMyOrdersArguments,
        result_model=MyOrdersResult,
        handler=MyOrdersHandler(lookups_per_hour=lookups_per_hour, clock=clock),
        timeout_s=5.0,
        read_only=True,
    )
