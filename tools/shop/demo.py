"""The demo shop from the course seeds, inserted when `SEED_DEMO_DATA` is on.

Orders have no owner, so every user can try them. They carry what a real order does —
when it last changed, where it goes or waits, when it is expected — with dates computed
at seeding relative to that moment (in Moscow time, the demo shop's), so a demo answer
reads like a real one rather than naming a date years ago. Names and aliases are written as a
person would and stored through the shop's own rules (`normalise_product_name`,
`check_order_id`), so the demo is found exactly like imported data. Demo rows are marked
as such: seeding happens only in a database without data of the shop's own, and the
shop's first import (or `support-bot remove-demo`) removes every demo row, so a shop's
real data is never mixed with the demo.
"""

from __future__ import annotations

from datetime import UTC, datetime, timedelta, timezone
from enum import StrEnum

from storage.shop import ShopRepository
from storage.shop_records import FaqRecord, OrderRecord, ProductRecord, ReturnPolicyRecord
from tools.shop.faq import faq_key
from tools.shop.import_document import plan_import
from tools.shop.rules import OrderStatus, check_order_id, normalise_product_name

DEMO_TIMEZONE = timezone(timedelta(hours=3), "MSK")
DEMO_PICKUP_POINT = "Пункт выдачи на ул. Садовой, 12 (ежедневно 10:00–21:00)"
DEMO_ORDER_IDS = ("8041", "7718", "9912", "5530")
# the first three also in storage/migrations/0013_demo_data.sql (5530 came later)


def _order(
    order_id: str,
    status: OrderStatus,
    *,
    updated_at: datetime,
    pickup_point: str | None = None,
    expected_date: datetime | None = None,
) -> OrderRecord:
    return OrderRecord(
        order_id=check_order_id(order_id),
        status=status.value,
        updated_at=updated_at.isoformat(timespec="minutes"),
        pickup_point=pickup_point,
        expected_date=None if expected_date is None else expected_date.date().isoformat(),
    )


def _at(day: datetime, hour: int, minute: int) -> datetime:
    return day.replace(hour=hour, minute=minute, second=0, microsecond=0)


def demo_orders(now: datetime) -> tuple[OrderRecord, ...]:
    """8041 on its way, 7718 delivered, 9912 waiting at a pickup point, 5530 still being
    processed (so it can be cancelled: ACTIONS_ENABLED), dated around `now`.

    Every `updated_at` is in the past of `now` and every expected date of an order still
    on its way is after it.
    """
    local = now.astimezone(DEMO_TIMEZONE)
    day = timedelta(days=1)
    return (
        _order(
            "8041",
            OrderStatus.IN_TRANSIT,
            updated_at=local - timedelta(hours=3, minutes=17),
            pickup_point=DEMO_PICKUP_POINT,
            expected_date=local + 2 * day,
        ),
        _order(
            "7718",
            OrderStatus.DELIVERED,
            updated_at=_at(local - 3 * day, 14, 32),
            pickup_point=DEMO_PICKUP_POINT,
        ),
        _order(
            "9912",
            OrderStatus.READY_FOR_PICKUP,
            updated_at=_at(local - day, 11, 5),
            pickup_point=DEMO_PICKUP_POINT,
        ),
        _order(
            "5530",
            OrderStatus.PROCESSING,
            updated_at=local - timedelta(minutes=40),
            pickup_point=DEMO_PICKUP_POINT,
        ),
    )


def _policy(
    name: str, *, return_days: int, conditions: str, aliases: tuple[str, ...]
) -> ReturnPolicyRecord:
    return ReturnPolicyRecord(
        product=normalise_product_name(name),
        display_name=name,
        return_days=return_days,
        conditions=conditions,
        aliases=tuple(normalise_product_name(alias) for alias in aliases),
    )


DEMO_RETURN_POLICIES: tuple[ReturnPolicyRecord, ...] = (
    _policy(
        "Кофемашина",
        return_days=14,
        conditions="Товар должен сохранить комплектность и не иметь следов использования.",
        aliases=("кофемашину", "кофемашины", "кофемашин", "кофемашинка", "coffee machine"),
    ),
    _policy(
        "Наушники",
        return_days=7,
        conditions="Возврат возможен при сохранении упаковки и товарного вида.",
        aliases=("наушников", "наушник", "наушниками", "headphones", "earphones"),
    ),
    _policy(
        "Клавиатура",
        return_days=14,
        conditions="Нужны комплектность и отсутствие механических повреждений.",
        aliases=("клавиатуру", "клавиатуры", "клавиатур", "keyboard"),
    ),
)


# -- FAQ (get_shop_info) -------------------------------------------------------------


def _faq(topic: str, answer: str, *, aliases: tuple[str, ...]) -> FaqRecord:
    return FaqRecord(
        key=faq_key(topic),
        topic=topic,
        answer=answer,
        aliases=tuple(faq_key(alias) for alias in aliases),
    )


# Made-up terms and contacts (example.com, a 000 phone number): a demo, not a shop.
DEMO_FAQ: tuple[FaqRecord, ...] = (
    _faq(
        "Доставка",
        "Курьером по городу — 300 ₽, бесплатно при заказе от 5000 ₽; срок — 1–3 рабочих "
        "дня. Самовывоз из пункта выдачи — бесплатно, на следующий день после оформления.",
        aliases=(
            "доставки",
            "доставку",
            "доставкой",
            "доставке",
            "курьер",
            "самовывоз",
            "delivery",
            "shipping",
        ),
    ),
    _faq(
        "Оплата",
        "Картой онлайн при оформлении заказа, через СБП, или картой и наличными при получении.",
        aliases=("оплаты", "оплату", "оплатой", "оплатить", "payment", "pay"),
    ),
    _faq(
        "Контакты",
        "Телефон: +7 000 000-00-00 (ежедневно с 9:00 до 21:00), e-mail: support@example.com.",
        aliases=(
            "контакт",
            "контактов",
            "телефон",
            "e-mail",
            "email",
            "связаться",
            "contacts",
            "contact",
            "phone",
        ),
    ),
)


# -- products (search_products, get_product) ----------------------------------------

_DEMO_PRODUCT_PAGE = "https://shop.example/products/"


def _demo_variant(
    variant_id: str, options: dict[str, str], price: int, stock: int, restock: str | None = None
) -> dict[str, object]:
    variant: dict[str, object] = {
        "variant_id": variant_id,
        "options": options,
        "price": {"amount": str(price), "currency": "RUB"},
        "stock": stock,
    }
    if restock is not None:
        variant["restock_date"] = restock
    return variant


# A small made-up catalogue (example addresses): written as an import would be, so the
# demo's products are read exactly like a shop's own.
DEMO_PRODUCTS: tuple[dict[str, object], ...] = (
    {
        "product_id": "arctic-parka",
        "title": "Пуховик Arctic",
        "description": "Зимний пуховик до −30 °C: натуральный пух, капюшон с мехом, "
        "ветрозащитная ткань. Winter down parka.",
        "url": _DEMO_PRODUCT_PAGE + "arctic-parka",
        "variants": [
            _demo_variant("arctic-s-black", {"Размер": "S", "Цвет": "чёрный"}, 12990, 6),
            _demo_variant("arctic-m-black", {"Размер": "M", "Цвет": "чёрный"}, 12990, 2),
            _demo_variant(
                "arctic-l-black", {"Размер": "L", "Цвет": "чёрный"}, 12990, 0, "2026-12-20"
            ),
            _demo_variant("arctic-m-blue", {"Размер": "M", "Цвет": "синий"}, 12990, 9),
        ],
    },
    {
        "product_id": "runner-sneakers",
        "title": "Кроссовки Runner",
        "description": "Лёгкие беговые кроссовки с амортизирующей подошвой. Running shoes.",
        "url": _DEMO_PRODUCT_PAGE + "runner-sneakers",
        "variants": [
            _demo_variant("runner-41-white", {"Размер": "41", "Цвет": "белый"}, 5490, 7),
            _demo_variant("runner-42-white", {"Размер": "42", "Цвет": "белый"}, 5490, 3),
            _demo_variant(
                "runner-42-black", {"Размер": "42", "Цвет": "чёрный"}, 5490, 0, "2026-12-15"
            ),
            _demo_variant("runner-43-black", {"Размер": "43", "Цвет": "чёрный"}, 5490, 12),
        ],
    },
    {
        "product_id": "aqua-kettle",
        "title": "Электрочайник Aqua",
        "description": "Стеклянный чайник на 1,7 л с подсветкой и автоотключением. "
        "Electric glass kettle.",
        "url": _DEMO_PRODUCT_PAGE + "aqua-kettle",
        "variants": [
            _demo_variant("aqua-blue", {"Цвет": "голубой"}, 2990, 15),
            _demo_variant("aqua-grey", {"Цвет": "серый"}, 2790, 0),
        ],
    },
    {
        "product_id": "barista-coffee-machine",
        "title": "Кофемашина Barista",
        "description": "Рожковая кофемашина с капучинатором, давление 15 бар. "
        "Espresso coffee machine.",
        "url": _DEMO_PRODUCT_PAGE + "barista-coffee-machine",
        "variants": [_demo_variant("barista", {}, 24990, 4)],
    },
)


def demo_product_records() -> list[ProductRecord]:
    """The demo catalogue as the import stores it (validated by the import's rules)."""
    plan = plan_import({"products": list(DEMO_PRODUCTS)})
    assert plan.products is not None
    return plan.products


async def seed_demo_shop(shop: ShopRepository, *, now: datetime | None = None) -> bool:
    """Insert the demo orders (dated around `now`, default the current time), policies and
    FAQ into whichever of their tables is empty, marked as demo rows — only into a
    database without data of the shop's own, and never again once an import or
    `remove-demo` retired the demo. Returns True when anything was inserted.
    """
    orders = demo_orders(now or datetime.now(UTC))
    return await shop.seed_demo(
        orders=orders,
        policies=DEMO_RETURN_POLICIES,
        faq=DEMO_FAQ,
        products=demo_product_records(),
    )


class DemoChange(StrEnum):
    """What `settle_demo_shop` did at start-up."""

    NONE = "none"
    SEEDED = "seeded"
    REMOVED = "removed"


async def settle_demo_shop(shop: ShopRepository, *, seed: bool) -> DemoChange:
    """At start-up: take the demo out of a shop that holds its own data (a database from
    before demo rows were retired on import still has both), or seed it when `seed`
    (SEED_DEMO_DATA) and the shop has nothing of its own."""
    if await shop.holds_own_data():
        if await shop.holds_demo():
            await shop.remove_demo()
            return DemoChange.REMOVED
        return DemoChange.NONE
    if seed and await seed_demo_shop(shop):
        return DemoChange.SEEDED
    return DemoChange.NONE
