"""The demo shop: its content is unchanged and it follows the shop's own rules."""

from __future__ import annotations

from storage.shop_records import OrderRecord, ReturnPolicyRecord
from tools.shop.demo import DEMO_ORDERS, DEMO_RETURN_POLICIES
from tools.shop.rules import OrderStatus, check_order_id

# The demo data exactly as it was stored before it moved from storage/ to tools/shop/.
EXPECTED_ORDERS = (
    OrderRecord(order_id="8041", status="in_transit"),
    OrderRecord(order_id="7718", status="delivered"),
    OrderRecord(
        order_id="9912",
        status="ready_for_pickup",
        pickup_point="Демо-пункт выдачи, ул. Примерная, 1",
    ),
)
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


def test_demo_content_is_unchanged() -> None:
    assert DEMO_ORDERS == EXPECTED_ORDERS
    assert DEMO_RETURN_POLICIES == EXPECTED_POLICIES


def test_demo_orders_follow_the_order_rules() -> None:
    for order in DEMO_ORDERS:
        assert check_order_id(order.order_id) == order.order_id
        assert type(order.status) is str and OrderStatus(order.status)
        assert order.owner_telegram_id is None  # every user can try the demo
