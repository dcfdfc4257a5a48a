"""The demo shop from the course seeds, inserted when `SEED_DEMO_DATA` is on.

Orders have no owner, so every user can try them. Policy names and aliases are stored
already normalised (lowercase, single spaces), which is how lookups find them; a unit
test in tests/unit/tools checks them against the tools' normaliser.
"""

from __future__ import annotations

from storage.shop_records import OrderRecord, ReturnPolicyRecord

DEMO_ORDERS: tuple[OrderRecord, ...] = (
    OrderRecord(order_id="8041", status="in_transit"),
    OrderRecord(order_id="7718", status="delivered"),
    OrderRecord(
        order_id="9912",
        status="ready_for_pickup",
        pickup_point="Демо-пункт выдачи, ул. Примерная, 1",
    ),
)

DEMO_RETURN_POLICIES: tuple[ReturnPolicyRecord, ...] = (
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
