"""get_order_status: owners see their orders, nobody can probe others', lookups are bounded."""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any

from storage.database import Database
from storage.records import AuditStatus
from storage.shop import OrderUpsert, ShopRepository
from tools.base import Caller, ToolCall, ToolContext
from tools.executor import ToolExecutor
from tools.factory import build_registry

from .conftest import FakeClock

OWNER = 5001
STRANGER = 5002


async def add_order(shop: ShopRepository, order_id: str, **values: Any) -> None:
    await shop.import_shop_data(
        orders=[OrderUpsert(order_id=order_id, values=values)], policies=[], texts={}
    )


def lookup(order_id: str, call_id: str = "call_1") -> ToolCall:
    return ToolCall(call_id, "get_order_status", json.dumps({"order_id": order_id}))


class CountingShop(ShopRepository):
    """The real repository, counting how often an order row is actually read."""

    def __init__(self, inner: ShopRepository) -> None:
        self.__dict__.update(inner.__dict__)
        self.order_reads = 0

    async def get_order(self, order_id: str) -> Any:
        self.order_reads += 1
        return await super().get_order(order_id)


async def test_owner_sees_the_details_of_their_order(
    shop: ShopRepository, context_for: Callable[..., ToolContext], clock: FakeClock
) -> None:
    await add_order(
        shop,
        "1234",
        status="ready_for_pickup",
        owner_telegram_id=OWNER,
        updated_at="2026-11-28T09:30:00+03:00",
        pickup_point="Пункт выдачи на Тверской, 7",
        expected_date="2026-11-30",
    )
    executor = ToolExecutor(build_registry(clock=clock))
    outcome = await executor.execute(lookup("1234"), context_for(OWNER))
    data = json.loads(outcome.content)["data"]
    assert data["found"] is True
    assert data["status"] == "ready_for_pickup"
    assert data["pickup_point"] == "Пункт выдачи на Тверской, 7"
    assert data["expected_date"] == "2026-11-30"
    assert data["updated_at"].startswith("2026-11-28T09:30:00")


async def test_someone_elses_order_looks_exactly_like_a_missing_one(
    db: Database,
    shop: ShopRepository,
    context_for: Callable[..., ToolContext],
    clock: FakeClock,
) -> None:
    await add_order(shop, "1234", status="in_transit", owner_telegram_id=OWNER)
    executor = ToolExecutor(build_registry(clock=clock))
    hidden = await executor.execute(lookup("1234"), context_for(STRANGER))

    async with db.transaction() as conn:
        await conn.execute("DELETE FROM orders WHERE order_id = '1234'")
    missing = await executor.execute(lookup("1234"), context_for(STRANGER + 1))

    assert hidden.content == missing.content  # byte-identical
    assert json.loads(hidden.content)["data"]["found"] is False
    assert hidden.audit.status == missing.audit.status == AuditStatus.BUSINESS_ERROR
    assert hidden.audit.error_code == missing.audit.error_code == "not_found"


async def test_public_demo_orders_are_visible_to_everyone(
    shop: ShopRepository, context_for: Callable[..., ToolContext], clock: FakeClock
) -> None:
    executor = ToolExecutor(build_registry(clock=clock))
    expected = {
        "8041": "in_transit",
        "7718": "delivered",
        "9912": "ready_for_pickup",
        "5530": "processing",
    }
    for user in (1, 2, 3):
        for order_id, status in expected.items():
            outcome = await executor.execute(lookup(order_id), context_for(user))
            data = json.loads(outcome.content)["data"]
            assert data["found"] is True and data["status"] == status


async def test_eleventh_distinct_order_in_an_hour_is_rate_limited_and_audited(
    shop: ShopRepository, context_for: Callable[..., ToolContext], clock: FakeClock
) -> None:
    await add_order(shop, "1234", status="delivered", owner_telegram_id=OWNER)
    counting = CountingShop(shop)
    context = ToolContext(caller=Caller(key=STRANGER, chat_id=STRANGER), shop=counting)
    executor = ToolExecutor(build_registry(order_lookups_per_hour=10, clock=clock))
    # someone else's order and non-existent numbers count too: probing is not free
    ids = ["8041", "1234", *(f"{n:04d}" for n in range(1, 9))]
    for order_id in ids:
        outcome = await executor.execute(lookup(order_id), context)
        assert outcome.ok, outcome.content
        clock.advance(60)
    reads_before = counting.order_reads

    over = await executor.execute(lookup("5555", "call_11"), context)
    body = json.loads(over.content)
    assert body["ok"] is False and body["error"]["code"] == "rate_limited"
    assert counting.order_reads == reads_before  # the lookup was not performed
    assert over.audit.status is AuditStatus.BUSINESS_ERROR
    assert over.audit.error_code == "rate_limited"
    assert over.audit.call_id == "call_11"

    # asking again about an order already checked this hour does not count again
    again = await executor.execute(lookup("8041"), context)
    assert json.loads(again.content)["data"]["status"] == "in_transit"

    # another customer has their own allowance
    other = await executor.execute(lookup("5555"), context_for(OWNER))
    assert other.ok

    # the window rolls: once the first lookups are older than an hour, new ones pass
    clock.advance(3600 - 9 * 60 + 1)
    later = await executor.execute(lookup("5555"), context)
    assert later.ok, later.content


async def test_the_bound_holds_under_concurrent_lookups(
    context_for: Callable[..., ToolContext], clock: FakeClock
) -> None:
    executor = ToolExecutor(build_registry(order_lookups_per_hour=10, clock=clock))
    calls = [lookup(f"{n:04d}", f"call_{n}") for n in range(1, 16)]
    outcomes = await executor.execute_batch(calls, context_for(STRANGER))
    codes = [json.loads(o.content).get("error", {}).get("code") for o in outcomes]
    assert codes.count("rate_limited") == 5
    assert sum(o.ok for o in outcomes) == 10


# ------------------------------------------------------------------ groups
GROUP = -100_500
OTHER_GROUP = -100_600
SECRET_PICKUP = "Пункт выдачи на Тверской, 7"


async def add_owned_order(shop: ShopRepository) -> None:
    await add_order(
        shop,
        "1234",
        status="ready_for_pickup",
        owner_telegram_id=OWNER,
        updated_at="2026-11-28T09:30:00+03:00",
        pickup_point=SECRET_PICKUP,
        expected_date="2026-11-30",
    )


def without_number(content: str) -> str:
    return content.replace("1234", "####").replace("4321", "####")


async def test_owner_in_private_chat_sees_their_order(
    shop: ShopRepository, context_for: Callable[..., ToolContext], clock: FakeClock
) -> None:
    await add_owned_order(shop)
    executor = ToolExecutor(build_registry(clock=clock))
    outcome = await executor.execute(lookup("1234"), context_for(OWNER))
    data = json.loads(outcome.content)["data"]
    assert data["found"] is True and data["pickup_point"] == SECRET_PICKUP
    assert "ask_in_private_chat" not in data  # said only when it is so


async def test_owner_in_a_group_is_asked_to_write_privately_and_gets_no_data(
    shop: ShopRepository, context_for: Callable[..., ToolContext], clock: FakeClock
) -> None:
    await add_owned_order(shop)
    executor = ToolExecutor(build_registry(clock=clock))
    outcome = await executor.execute(lookup("1234"), context_for(OWNER, GROUP))
    data = json.loads(outcome.content)["data"]
    assert outcome.ok
    assert data["found"] is False and data["ask_in_private_chat"] is True
    assert "private chat" in data["message"]
    assert not {"status", "pickup_point", "expected_date"} & set(data)  # no nulls sent
    assert "updated_at" not in data
    for secret in (SECRET_PICKUP, "ready_for_pickup", "2026-11-30", "2026-11-28"):
        assert secret not in outcome.content


async def test_in_a_group_own_others_and_missing_orders_get_one_answer(
    shop: ShopRepository, context_for: Callable[..., ToolContext], clock: FakeClock
) -> None:
    """The reply is read by the whole group: it must not tell whose or whether it exists."""
    await add_owned_order(shop)
    executor = ToolExecutor(build_registry(clock=clock))
    owner = await executor.execute(lookup("1234"), context_for(OWNER, GROUP))
    stranger = await executor.execute(lookup("1234"), context_for(STRANGER, GROUP))
    missing = await executor.execute(lookup("4321"), context_for(STRANGER, GROUP))

    assert owner.content == stranger.content  # byte-identical
    assert without_number(stranger.content) == without_number(missing.content)
    assert json.loads(stranger.content)["data"]["found"] is False
    assert owner.audit.status == stranger.audit.status == missing.audit.status
    assert owner.audit.status is AuditStatus.BUSINESS_ERROR  # "said no" in /stats


async def test_a_public_order_is_found_in_a_group(
    context_for: Callable[..., ToolContext], clock: FakeClock
) -> None:
    executor = ToolExecutor(build_registry(clock=clock))
    outcome = await executor.execute(lookup("8041"), context_for(STRANGER, GROUP))
    data = json.loads(outcome.content)["data"]
    assert data["found"] is True and data["status"] == "in_transit"
    assert "ask_in_private_chat" not in data  # said only when it is so


async def test_a_context_that_does_not_say_private_gets_no_private_data(
    shop: ShopRepository, clock: FakeClock
) -> None:
    await add_owned_order(shop)
    executor = ToolExecutor(build_registry(clock=clock))
    outcome = await executor.execute(
        lookup("1234"), ToolContext(caller=Caller(key=OWNER, chat_id=OWNER), shop=shop)
    )
    assert SECRET_PICKUP not in outcome.content
    assert json.loads(outcome.content)["data"]["ask_in_private_chat"] is True


async def test_an_anonymous_admin_never_gets_owner_access(
    shop: ShopRepository, context_for: Callable[..., ToolContext], clock: FakeClock
) -> None:
    await add_owned_order(shop)
    executor = ToolExecutor(build_registry(clock=clock))
    anonymous = context_for(GROUP, GROUP, sender_is_chat=True)  # keyed by its group
    assert anonymous.caller.private_chat is False
    in_group = await executor.execute(lookup("1234"), anonymous)
    # even a context claiming the owner's id in a private chat: a chat is not a person
    forged = ToolContext(
        caller=Caller(key=OWNER, chat_id=OWNER, private_chat=True, is_chat=True), shop=shop
    )
    claimed = await executor.execute(lookup("1234"), forged)
    public = await executor.execute(lookup("8041"), anonymous)

    for outcome in (in_group, claimed):
        assert SECRET_PICKUP not in outcome.content
        assert json.loads(outcome.content)["data"]["found"] is False
    assert json.loads(public.content)["data"]["found"] is True


async def test_anonymous_admins_of_each_group_have_their_own_lookup_allowance(
    context_for: Callable[..., ToolContext], clock: FakeClock
) -> None:
    executor = ToolExecutor(build_registry(order_lookups_per_hour=3, clock=clock))
    first_group = context_for(GROUP, GROUP, sender_is_chat=True)
    other_group = context_for(OTHER_GROUP, OTHER_GROUP, sender_is_chat=True)
    person_in_group = context_for(OWNER, GROUP)

    for n in range(1, 4):
        assert (await executor.execute(lookup(f"{n:04d}"), first_group)).ok
    over = await executor.execute(lookup("0004"), first_group)
    assert json.loads(over.content)["error"]["code"] == "rate_limited"
    assert over.audit.user_id == GROUP

    # neither another group's anonymous admins nor a person in the same group are affected
    for context in (other_group, person_in_group):
        outcome = await executor.execute(lookup("0004"), context)
        assert outcome.ok, outcome.content
