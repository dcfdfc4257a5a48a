"""The http backend's actions against the reference fake of the contract:
`POST /orders/{number}/cancel` and `/returns` with `Idempotency-Key`, exactly once."""

from __future__ import annotations

from collections.abc import AsyncIterator
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import jsonschema
import pytest
import yaml
from pydantic import SecretStr

from tests.fakes.shop_api import TOKEN, FakeShopApi, fake_shop_api, order  # noqa: F401
from tools.shop.backend import ActionDone, ActionRejected, ActionUnknown, ReturnLine
from tools.shop.backends.http import HttpBackend
from tools.shop.orders import LiveOrder, OrderItem
from tools.shop.rules import OrderStatus

OP, OTHER_OP = "a" * 32, "b" * 32
SPEC = Path(__file__).resolve().parents[3] / "docs" / "shop-api.openapi.yaml"


@pytest.fixture
async def backend(fake_shop_api: FakeShopApi) -> AsyncIterator[HttpBackend]:  # noqa: F811
    fake_shop_api.put(order("5001", "processing"), order("5002", "delivered"))
    http = HttpBackend(fake_shop_api.base_url, SecretStr(TOKEN), timeout_s=2.0)
    try:
        yield http
    finally:
        await http.aclose()


def live(number: str) -> LiveOrder:
    return LiveOrder(number=number, status=OrderStatus.PROCESSING, updated_at=datetime.now(UTC))


def schema(name: str) -> dict[str, Any]:
    document = yaml.safe_load(SPEC.read_text(encoding="utf-8"))
    found: dict[str, Any] = document["components"]["schemas"][name]
    return {**found, "components": document["components"]}


async def test_cancel_once_the_same_key_answers_the_same(
    backend: HttpBackend,
    fake_shop_api: FakeShopApi,  # noqa: F811
) -> None:
    assert await backend.cancel_order(live("5001"), OP) == ActionDone()
    assert await backend.cancel_order(live("5001"), OP) == ActionDone()  # asked again
    assert fake_shop_api.cancellations == ["5001"]
    # another operation on the cancelled order: the shop's refusal code
    assert await backend.cancel_order(live("5001"), OTHER_OP) == ActionRejected("not_cancellable")
    assert await backend.cancel_order(live("5999"), "c" * 32) == ActionRejected("not_found")


async def test_a_lost_answer_is_unknown_and_asking_again_with_the_key_acts_once(
    backend: HttpBackend,
    fake_shop_api: FakeShopApi,  # noqa: F811
) -> None:
    fake_shop_api.lose_answers = 1
    assert isinstance(await backend.cancel_order(live("5001"), OP), ActionUnknown)
    assert await backend.cancel_order(live("5001"), OP) == ActionDone()
    assert fake_shop_api.cancellations == ["5001"]


async def test_a_shop_that_is_down_is_unknown_never_done(
    backend: HttpBackend,
    fake_shop_api: FakeShopApi,  # noqa: F811
) -> None:
    fake_shop_api.fail("500", times=1)
    assert isinstance(await backend.cancel_order(live("5001"), OP), ActionUnknown)
    assert fake_shop_api.cancellations == []


async def test_a_return_is_opened_once_with_the_shops_reference(
    backend: HttpBackend,
    fake_shop_api: FakeShopApi,  # noqa: F811
) -> None:
    lines = [ReturnLine(OrderItem(name="Наушники", quantity=1), 1)]
    first = await backend.request_return(live("5002"), lines, "шумят", OP)
    again = await backend.request_return(live("5002"), lines, "шумят", OP)
    assert first == again == ActionDone(reference="RET-1")
    [opened] = fake_shop_api.returns
    body = {"items": opened["items"], "reason": opened["reason"]}
    jsonschema.Draft202012Validator(schema("ReturnRequest")).validate(body)
    jsonschema.Draft202012Validator(schema("ReturnOpened")).validate({"id": "RET-1"})
    jsonschema.Draft202012Validator(schema("ActionRefusal")).validate({"error": "not_cancellable"})
