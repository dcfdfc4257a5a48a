"""Phone-verified ownership in get_order_status: who sees a phone-owned order, and the
note that makes the bot offer the share button on every miss (never only for real orders).
"""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any

from storage.shop import OrderUpsert, ShopRepository
from tools.base import OrderMissedNoPhone, OwnOrderShown, ToolCall, ToolContext
from tools.executor import ToolExecutor
from tools.factory import build_registry

from .conftest import FakeClock

OWNER, STRANGER, TG_OWNER = 5101, 5102, 5103
PHONE, OTHER_PHONE = "+79123456789", "+79990001122"


async def add_order(shop: ShopRepository, order_id: str, **values: Any) -> None:
    await shop.import_shop_data(
        orders=[OrderUpsert(order_id=order_id, values=values)], policies=[], texts={}
    )


def lookup(order_id: str) -> ToolCall:
    return ToolCall("call_1", "get_order_status", json.dumps({"order_id": order_id}))


async def run(executor: ToolExecutor, order_id: str, context: ToolContext) -> dict[str, Any]:
    outcome = await executor.execute(lookup(order_id), context)
    assert outcome.ok
    data: dict[str, Any] = json.loads(outcome.content)["data"]
    assert "+7" not in outcome.content and "912" not in outcome.content  # never the phone
    return data


async def test_the_verified_phone_owner_sees_the_order_and_nobody_else_does(
    shop: ShopRepository, context_for: Callable[..., ToolContext], clock: FakeClock
) -> None:
    await add_order(shop, "2001", status="in_transit", owner_phone=PHONE, pickup_point="P")
    await shop.set_verified_phone(OWNER, PHONE, now=clock())
    await shop.set_verified_phone(STRANGER, OTHER_PHONE, now=clock())
    executor = ToolExecutor(build_registry(clock=clock))

    assert (await run(executor, "2001", context_for(OWNER)))["found"] is True
    assert (await run(executor, "2001", context_for(STRANGER)))["found"] is False
    # no verified phone at all: not the owner either
    assert (await run(executor, "2001", context_for(TG_OWNER)))["found"] is False


async def test_a_phone_owned_order_is_not_public(
    shop: ShopRepository, context_for: Callable[..., ToolContext], clock: FakeClock
) -> None:
    """No owner_telegram_id no longer means "public" when the order has an owner_phone."""
    await add_order(shop, "2002", status="in_transit", owner_phone=PHONE)
    executor = ToolExecutor(build_registry(clock=clock))
    hidden = await executor.execute(lookup("2002"), context_for(STRANGER))
    missing = await executor.execute(lookup("2009"), context_for(STRANGER + 10))
    assert json.loads(hidden.content)["data"]["found"] is False
    assert hidden.content.replace("2002", "N") == missing.content.replace("2009", "N")


async def test_telegram_id_or_phone_either_one_is_enough(
    shop: ShopRepository, context_for: Callable[..., ToolContext], clock: FakeClock
) -> None:
    await add_order(shop, "2003", status="delivered", owner_telegram_id=TG_OWNER, owner_phone=PHONE)
    await shop.set_verified_phone(OWNER, PHONE, now=clock())
    executor = ToolExecutor(build_registry(clock=clock))
    assert (await run(executor, "2003", context_for(TG_OWNER)))["found"] is True
    assert (await run(executor, "2003", context_for(OWNER)))["found"] is True
    assert (await run(executor, "2003", context_for(STRANGER)))["found"] is False


async def test_a_changed_or_forgotten_phone_changes_what_is_visible(
    shop: ShopRepository, context_for: Callable[..., ToolContext], clock: FakeClock
) -> None:
    await add_order(shop, "2004", status="processing", owner_phone=PHONE)
    executor = ToolExecutor(build_registry(clock=clock))
    await shop.set_verified_phone(OWNER, PHONE, now=clock())
    assert (await run(executor, "2004", context_for(OWNER)))["found"] is True
    await shop.set_verified_phone(OWNER, OTHER_PHONE, now=clock())  # a new share replaces it
    assert (await run(executor, "2004", context_for(OWNER)))["found"] is False
    await shop.set_verified_phone(OWNER, PHONE, now=clock())
    assert await shop.delete_verified_phone(OWNER) is True
    assert await shop.delete_verified_phone(OWNER) is False
    assert (await run(executor, "2004", context_for(OWNER)))["found"] is False


async def test_in_a_group_even_the_phone_owner_is_sent_to_a_private_chat(
    shop: ShopRepository, context_for: Callable[..., ToolContext], clock: FakeClock
) -> None:
    await add_order(shop, "2005", status="in_transit", owner_phone=PHONE)
    await shop.set_verified_phone(OWNER, PHONE, now=clock())
    executor = ToolExecutor(build_registry(clock=clock))
    context = context_for(OWNER, chat_id=-100500)
    data = await run(executor, "2005", context)
    assert data["found"] is False and data["ask_in_private_chat"] is True
    assert context.notes == []  # no share button in a group


async def test_every_miss_without_a_verified_phone_is_noted_alike(
    shop: ShopRepository, context_for: Callable[..., ToolContext], clock: FakeClock
) -> None:
    """The offer to share a phone must not depend on whether the order exists."""
    await add_order(shop, "2006", status="in_transit", owner_phone=PHONE)
    await add_order(shop, "2007", status="in_transit", owner_telegram_id=TG_OWNER)
    executor = ToolExecutor(build_registry(clock=clock))
    contents = []
    for number in ("2006", "2007", "2008"):  # phone-owned, someone else's, missing
        context = context_for(STRANGER)
        outcome = await executor.execute(lookup(number), context)
        assert context.notes == [OrderMissedNoPhone(order_id=number)]
        contents.append(outcome.content.replace(number, "N"))
    assert len(set(contents)) == 1

    # a found order, or a miss by a customer who has a verified phone: no such note; the
    # owner's own order is noted as shown (the "notify me when it moves" offer)
    found = context_for(TG_OWNER)
    await executor.execute(lookup("2007"), found)
    assert found.notes == [OwnOrderShown(order_id="2007")]
    await shop.set_verified_phone(STRANGER, OTHER_PHONE, now=clock())
    verified = context_for(STRANGER)
    await executor.execute(lookup("2008"), verified)
    assert verified.notes == []
