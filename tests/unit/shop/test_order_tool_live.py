"""get_order_status over a live backend (the HTTP contract's fake): the same rules, the
lookup budget spent even when the shop is down, `unavailable` without any detail."""

from __future__ import annotations

import json
from collections.abc import AsyncIterator

import pytest
from pydantic import SecretStr

from storage.database import Database
from storage.shop import ShopRepository
from tests.fakes.shop_api import TOKEN, FakeShopApi, order
from tools.base import Caller, OrderMissedNoPhone, ToolCall, ToolContext
from tools.executor import ToolExecutor
from tools.factory import build_registry
from tools.shop.backends.http import HttpBackend
from tools.shop.directory import ShopDirectory

OWNER, OTHER = 8101, 8102
PHONE = "+79123456789"


@pytest.fixture
async def directory(fake_shop_api: FakeShopApi) -> AsyncIterator[ShopDirectory]:
    backend = HttpBackend(fake_shop_api.base_url, SecretStr(TOKEN), timeout_s=0.5, budget_s=1.5)
    shop = ShopDirectory(backend, cache_ttl_s=0, miss_ttl_s=0)
    try:
        yield shop
    finally:
        await shop.aclose()


def context(db: Database, shop: ShopDirectory, user: int, *, private: bool = True) -> ToolContext:
    caller = Caller(key=user, chat_id=user if private else -100, private_chat=private)
    return ToolContext(caller=caller, shop=ShopRepository(db), shop_directory=shop)


def lookup(number: str) -> ToolCall:
    return ToolCall("call_1", "get_order_status", json.dumps({"order_id": number}))


async def test_owner_by_id_or_verified_phone_sees_it_others_get_the_missing_answer(
    db: Database, fake_shop_api: FakeShopApi, directory: ShopDirectory
) -> None:
    fake_shop_api.put(
        order("100234", "in_transit", telegram_id=OWNER, delivery={"tracking_number": "TR9"}),
        order("100777", "delivered", phone="8 912 345 67 89"),
    )
    await ShopRepository(db).set_verified_phone(OTHER, PHONE, now=0)
    executor = ToolExecutor(build_registry(order_number_rule=directory.number_rule))

    mine = json.loads(
        (await executor.execute(lookup("100234"), context(db, directory, OWNER))).content
    )
    assert mine["data"]["found"] is True and mine["data"]["tracking_number"] == "TR9"
    by_phone = await executor.execute(lookup("#100777"), context(db, directory, OTHER))
    assert json.loads(by_phone.content)["data"]["status"] == "delivered"

    stranger = context(db, directory, OTHER)
    hidden = await executor.execute(lookup("100234"), stranger)
    missing = await executor.execute(lookup("100235"), context(db, directory, OTHER))
    assert hidden.content.replace("100234", "N") == missing.content.replace("100235", "N")
    no_phone = context(db, directory, 8199)
    await executor.execute(lookup("100234"), no_phone)
    assert no_phone.notes == [OrderMissedNoPhone(order_id="100234")]
    group = await executor.execute(lookup("100234"), context(db, directory, OWNER, private=False))
    assert json.loads(group.content)["data"]["ask_in_private_chat"] is True


async def test_a_shop_that_is_down_is_unavailable_and_still_costs_a_lookup(
    db: Database, fake_shop_api: FakeShopApi, directory: ShopDirectory
) -> None:
    fake_shop_api.fail("500")
    executor = ToolExecutor(
        build_registry(order_lookups_per_hour=2, order_number_rule=directory.number_rule)
    )
    for number in ("100001", "100002"):
        outcome = await executor.execute(lookup(number), context(db, directory, OWNER))
        error = json.loads(outcome.content)["error"]
        assert error["code"] == "unavailable"
        assert "500" not in outcome.content and "127.0.0.1" not in outcome.content
        assert outcome.audit.error_code == "unavailable"
    fake_shop_api.fail(None)
    third = await executor.execute(lookup("100003"), context(db, directory, OWNER))
    assert json.loads(third.content)["error"]["code"] == "rate_limited"
