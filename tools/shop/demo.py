"""The demo shop from the course seeds, inserted when `SEED_DEMO_DATA` is on.

Orders have no owner, so every user can try them. Names and aliases are written as a
person would and stored through the shop's own rules (`normalise_product_name`,
`check_order_id`), so the demo is found exactly like imported data. It only fills
tables that are empty: a shop's real data is never mixed with the demo.
"""

from __future__ import annotations

from storage.shop import ShopRepository
from storage.shop_records import FaqRecord, OrderRecord, ReturnPolicyRecord
from tools.shop.faq import faq_key
from tools.shop.rules import OrderStatus, check_order_id, normalise_product_name


def _order(order_id: str, status: OrderStatus, *, pickup_point: str | None = None) -> OrderRecord:
    return OrderRecord(
        order_id=check_order_id(order_id), status=status.value, pickup_point=pickup_point
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


DEMO_ORDERS: tuple[OrderRecord, ...] = (
    _order("8041", OrderStatus.IN_TRANSIT),
    _order("7718", OrderStatus.DELIVERED),
    _order(
        "9912",
        OrderStatus.READY_FOR_PICKUP,
        pickup_point="Демо-пункт выдачи, ул. Примерная, 1",
    ),
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
            "доставки", "доставку", "доставкой", "доставке", "курьер", "самовывоз",
            "delivery", "shipping",
        ),
    ),
    _faq(
        "Оплата",
        "Картой онлайн при оформлении заказа, через СБП, или картой и наличными при "
        "получении.",
        aliases=("оплаты", "оплату", "оплатой", "оплатить", "payment", "pay"),
    ),
    _faq(
        "Контакты",
        "Телефон: +7 000 000-00-00 (ежедневно с 9:00 до 21:00), e-mail: "
        "support@example.com.",
        aliases=(
            "контакт", "контактов", "телефон", "e-mail", "email", "связаться",
            "contacts", "contact", "phone",
        ),
    ),
)


async def seed_demo_shop(shop: ShopRepository) -> bool:
    """Insert the demo orders, policies and FAQ into whichever of their tables is empty.

    The demo FAQ only goes into a demo shop (no orders but the demo ones): its made-up
    delivery prices and contacts must never reach a real shop's customers, e.g. when a
    shop's existing database gains the FAQ table on an upgrade. Returns True when
    anything was inserted.
    """
    seeded = await shop.seed_if_empty(orders=DEMO_ORDERS, policies=DEMO_RETURN_POLICIES)
    if await shop.has_orders_except([order.order_id for order in DEMO_ORDERS]):
        return seeded
    return await shop.seed_faq_if_empty(DEMO_FAQ) or seeded
