"""The words of order updates, in the customer's language (`ORDER_UPDATE_WORDS`): the
"notify me" button, the notes of a press and of /updates, the message when an order moves
(one per status) and the menu entry. A shop's TEXTS_FILE rewords them by their keys; a
word with `{order}` (the order's number, filled in per message) must keep it. Order
updates have no staff words.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

from bot.telegram.texts import Language


@dataclass(frozen=True, slots=True)
class OrderUpdateWords:
    """What customers read of order updates (in their language)."""

    # {order} (the order's number) is required in each, filled in per message
    order_updates_button: str  # under an answer that showed the customer their own order
    order_updates_subscribed: str
    order_updates_already: str
    order_updates_finished: str
    order_updates_not_yours: str  # missing, someone else's and public orders alike
    order_updates_stopped: str
    order_updates_stop_button: str
    # without a placeholder
    order_updates_private_only: str
    order_updates_unavailable: str
    order_updates_list: str  # above the list of orders (/updates)
    order_updates_none: str
    # the message when an order moves: one per status, in the shop's own words
    order_update_processing: str
    order_update_in_transit: str
    order_update_ready_for_pickup: str
    order_update_delivered: str
    order_update_cancelled: str
    menu_updates: str

    def for_order(self, key: str, order: str) -> str:
        """A word with its {order} filled in (`key`: one of this table's)."""
        return str(getattr(self, key)).format(order=order)


ORDER_UPDATE_WORDS: Mapping[Language, OrderUpdateWords] = {
    "ru": OrderUpdateWords(
        order_updates_button="🔔 Сообщить, когда заказ {order} сдвинется",
        order_updates_subscribed=(
            "Хорошо: напишу здесь, когда статус заказа {order} изменится. "
            "Уведомления о заказах — /updates."
        ),
        order_updates_already="Уведомления о заказе {order} уже включены. Список — /updates.",
        order_updates_finished="Заказ {order} уже завершён — изменений по нему больше не будет.",
        order_updates_not_yours=(
            "Не могу включить уведомления о заказе {order}: они доступны только владельцу "
            "заказа. Проверьте номер или подтвердите телефон — /phone."
        ),
        order_updates_stopped="Уведомления о заказе {order} выключены.",
        order_updates_stop_button="Выключить: заказ {order}",
        order_updates_private_only="Уведомления о заказах доступны только в личном чате с ботом.",
        order_updates_unavailable=(
            "Не получилось связаться с магазином. Попробуйте, пожалуйста, чуть позже."
        ),
        order_updates_list="Я сообщу вам об изменениях этих заказов:",
        order_updates_none=(
            "Уведомлений о заказах нет. Спросите о своём заказе, и под ответом будет кнопка "
            "«Сообщить, когда заказ сдвинется»."
        ),
        order_update_processing="Заказ {order} снова в обработке.",
        order_update_in_transit="Заказ {order} передан в доставку.",
        order_update_ready_for_pickup="Заказ {order} ждёт вас в пункте выдачи.",
        order_update_delivered="Заказ {order} доставлен.",
        order_update_cancelled="Заказ {order} отменён.",
        menu_updates="Уведомления о заказах",
    ),
    "en": OrderUpdateWords(
        order_updates_button="🔔 Notify me when order {order} moves",
        order_updates_subscribed=(
            "Done: I will write here when the status of order {order} changes. "
            "Your order notifications: /updates."
        ),
        order_updates_already="Notifications for order {order} are already on. The list: /updates.",
        order_updates_finished="Order {order} is already completed: nothing more will change.",
        order_updates_not_yours=(
            "I cannot turn on notifications for order {order}: only the order's owner can. "
            "Please check the number or verify your phone with /phone."
        ),
        order_updates_stopped="Notifications for order {order} are off.",
        order_updates_stop_button="Stop: order {order}",
        order_updates_private_only=(
            "Order notifications are available in a private chat with the bot."
        ),
        order_updates_unavailable="I could not reach the shop. Please try again a little later.",
        order_updates_list="I will tell you when these orders move:",
        order_updates_none=(
            "You have no order notifications. Ask about your order, and the answer will have a "
            '"Notify me when it moves" button.'
        ),
        order_update_processing="Order {order} is being processed again.",
        order_update_in_transit="Order {order} is on its way.",
        order_update_ready_for_pickup="Order {order} is ready for pickup.",
        order_update_delivered="Order {order} has been delivered.",
        order_update_cancelled="Order {order} has been cancelled.",
        menu_updates="Order notifications",
    ),
}
