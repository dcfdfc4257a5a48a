"""The demo shop: its content is unchanged, it follows the shop's own rules, and its
orders read like real ones (dates around the moment of seeding, a pickup point)."""

from __future__ import annotations

from datetime import UTC, date, datetime, timedelta

import pytest

from storage.shop_records import ReturnPolicyRecord
from tools.order_status import _found
from tools.shop.demo import DEMO_PICKUP_POINT, DEMO_RETURN_POLICIES, demo_orders
from tools.shop.rules import OrderStatus, check_order_id

# 2026-11-30 21:30 UTC is already 1 December in Moscow, the demo shop's time zone
NOW = datetime(2026, 11, 30, 21, 30, tzinfo=UTC)

EXPECTED_POLICIES = (
    ReturnPolicyRecord(
        product="кофемашина",
        display_name="Кофемашина",
        return_days=14,
        conditions="Товар должен сохранить комплектность и не иметь следов использования.",
        aliases=("кофемашину", "кофемашины", "кофемашин", "кофемашинка", "coffee machine"),
    ),
    ReturnPolicyRecord(
        product="наушники",
        display_name="Наушники",
        return_days=7,
        conditions="Возврат возможен при сохранении упаковки и товарного вида.",
        aliases=("наушников", "наушник", "наушниками", "headphones", "earphones"),
    ),
    ReturnPolicyRecord(
        product="клавиатура",
        display_name="Клавиатура",
        return_days=14,
        conditions="Нужны комплектность и отсутствие механических повреждений.",
        aliases=("клавиатуру", "клавиатуры", "клавиатур", "keyboard"),
    ),
)


def test_demo_policies_are_unchanged() -> None:
    assert DEMO_RETURN_POLICIES == EXPECTED_POLICIES


def test_demo_orders_carry_dates_around_the_seeding_and_a_pickup_point() -> None:
    orders = {order.order_id: order for order in demo_orders(NOW)}
    assert {k: v.status for k, v in orders.items()} == {
        "8041": "in_transit",
        "7718": "delivered",
        "9912": "ready_for_pickup",
        "5530": "processing",
    }
    assert orders["8041"].updated_at == "2026-11-30T21:13+03:00"
    assert orders["8041"].expected_date == "2026-12-03"
    assert orders["7718"].updated_at == "2026-11-28T14:32+03:00"
    assert orders["9912"].updated_at == "2026-11-30T11:05+03:00"
    for order in orders.values():
        assert order.pickup_point == DEMO_PICKUP_POINT


@pytest.mark.parametrize("days", [0, 1, 365, 3650])
def test_demo_dates_are_never_in_the_future_of_the_seeding_nor_expected_in_its_past(
    days: int,
) -> None:
    now = NOW + timedelta(days=days, hours=days)
    for order in demo_orders(now):
        assert order.updated_at is not None
        updated = datetime.fromisoformat(order.updated_at)
        assert now - timedelta(days=4) < updated < now
        if order.status == OrderStatus.IN_TRANSIT:
            assert order.expected_date is not None
            assert date.fromisoformat(order.expected_date) > updated.date()


def test_demo_orders_follow_the_order_rules_and_read_as_the_tool_returns_them() -> None:
    for order in demo_orders(NOW):
        assert check_order_id(order.order_id) == order.order_id
        assert type(order.status) is str and OrderStatus(order.status)
        assert order.owner_telegram_id is None  # every user can try the demo
        result = _found(order)  # what get_order_status gives the model
        assert result.updated_at is not None and result.pickup_point == DEMO_PICKUP_POINT
