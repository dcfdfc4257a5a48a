"""Order numbers as the shop writes them: the rule the import, the lookup and the model
all follow (ORDER_NUMBER_PATTERN; the demo's four digits by default)."""

from __future__ import annotations

import json
from collections.abc import Callable

import pytest

from bot.runtime.config import SettingsError, load_shop_settings
from storage.shop import ShopRepository
from tools.base import ToolCall, ToolContext
from tools.executor import ToolExecutor
from tools.factory import build_registry
from tools.shop.import_document import ShopDataError, plan_import
from tools.shop.orders import FOUR_DIGITS, OrderNumberRule, rule_from_setting

OWNER = 5001
SIX_TO_TEN = rule_from_setting(r"[0-9]{6,10}", "10023456", "6 to 10 digits")
PREFIXED = rule_from_setting(r"AB-[0-9]{6}", "AB-123456", None)


def lookup(order_id: str) -> ToolCall:
    return ToolCall("call_1", "get_order_status", json.dumps({"order_id": order_id}))


async def import_orders(shop: ShopRepository, rule: OrderNumberRule, numbers: list[str]) -> None:
    plan = plan_import(
        {
            "orders": [
                {"order_id": n, "status": "in_transit", "owner_telegram_id": OWNER} for n in numbers
            ]
        },
        rule,
    )
    await shop.import_shop_data(orders=plan.orders, policies=[], texts={})


@pytest.mark.parametrize(
    ("rule", "numbers"),
    [
        (SIX_TO_TEN, ["123456", "1234567890"]),
        (PREFIXED, ["AB-123456", " AB-654321 "]),
    ],
)
async def test_a_shops_own_numbers_import_and_are_found(
    shop: ShopRepository,
    context_for: Callable[..., ToolContext],
    rule: OrderNumberRule,
    numbers: list[str],
) -> None:
    await import_orders(shop, rule, numbers)
    executor = ToolExecutor(build_registry(order_number_rule=rule))
    for number in numbers:
        outcome = await executor.execute(lookup(number), context_for(OWNER))
        data = json.loads(outcome.content)["data"]
        assert data["found"] is True, outcome.content
        assert data["order_id"] == number.strip()
        assert data["status"] == "in_transit"


def test_the_demo_rule_still_refuses_other_lengths_in_the_import() -> None:
    with pytest.raises(ShopDataError) as caught:
        plan_import({"orders": [{"order_id": "123456", "status": "delivered"}]})
    assert "must be exactly 4 digits, e.g. 8041" in caught.value.problems[0]
    with pytest.raises(ShopDataError) as prefixed:
        plan_import({"orders": [{"order_id": "AB-12345", "status": "delivered"}]}, PREFIXED)
    assert "must be an order number like AB-123456" in prefixed.value.problems[0]


async def test_a_number_outside_the_rule_is_invalid_arguments_for_the_model(
    shop: ShopRepository, context_for: Callable[..., ToolContext]
) -> None:
    executor = ToolExecutor(build_registry(order_number_rule=SIX_TO_TEN))
    outcome = await executor.execute(lookup("8041"), context_for(OWNER))
    error = json.loads(outcome.content)["error"]
    assert error["code"] == "invalid_arguments"
    assert "6 to 10 digits, e.g. 10023456" in outcome.content


@pytest.mark.parametrize("rule", [SIX_TO_TEN, PREFIXED])
def test_the_schema_the_model_sees_names_the_format(rule: OrderNumberRule) -> None:
    schema = next(
        s
        for s in build_registry(order_number_rule=rule).schemas()
        if s["function"]["name"] == "get_order_status"
    )
    function = schema["function"]
    assert rule.example in function["description"]
    assert rule.description in function["description"]
    assert "4-digit" not in function["description"]
    field = function["parameters"]["properties"]["order_id"]["description"]
    assert rule.description in field and rule.example in field


def test_shopify_style_prefix_is_dropped() -> None:
    rule = rule_from_setting(r"[0-9]{4,10}", "1001", "the order number", prefix="#")
    assert rule.normalise("#1001") == "1001"
    assert rule.normalise(" # 1001") == "1001"
    assert FOUR_DIGITS.normalise("8041") == "8041"
    assert not FOUR_DIGITS.accepts("８０４１")  # full-width digits are not ASCII


def test_the_setting_is_checked_at_start() -> None:
    rule = load_shop_settings(
        order_number_pattern=r"AB-[0-9]{6}", order_number_example="AB-123456"
    ).order_number_rule()
    assert rule is not None and rule.accepts("AB-000001")
    assert load_shop_settings().order_number_rule() is None
    for overrides, words in (
        ({"order_number_pattern": "[0-9", "order_number_example": "1"}, "not a regular expression"),
        ({"order_number_pattern": "[0-9]{6}", "order_number_example": "12"}, "does not match"),
        ({"order_number_pattern": "[0-9]{6}"}, "needs ORDER_NUMBER_EXAMPLE"),
    ):
        with pytest.raises(SettingsError) as caught:
            load_shop_settings(**overrides)
        assert words in str(caught.value)
