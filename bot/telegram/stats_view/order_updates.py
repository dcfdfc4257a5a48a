"""The /stats block about order updates, shown when ORDER_UPDATES_ENABLED."""

from __future__ import annotations

from bot.telegram.stats_view.table import kv
from bot.telegram.stats_view.wording import format_int
from bot.telegram.texts import Language
from storage.order_updates import OrderUpdateCounts

_WORDS: dict[Language, dict[str, str]] = {
    "ru": {
        "title": "УВЕДОМЛЕНИЯ О ЗАКАЗАХ",
        "active": "подписок сейчас",
        "subscribed": "новых подписок",
        "sent": "отправлено",
        "failed": "не доставлено",
        "unsubscribed": "отписаны (бот заблокирован)",
    },
    "en": {
        "title": "ORDER UPDATES",
        "active": "subscriptions now",
        "subscribed": "new subscriptions",
        "sent": "sent",
        "failed": "not delivered",
        "unsubscribed": "unsubscribed (bot blocked)",
    },
}


def order_updates_block(counts: OrderUpdateCounts, language: Language) -> list[str]:
    w = _WORDS[language]
    return [
        kv(w["title"], "", indent=0),
        kv(w["active"], format_int(counts.active, language)),
        kv(w["subscribed"], format_int(counts.subscribed, language)),
        kv(w["sent"], format_int(counts.sent, language)),
        kv(w["failed"], format_int(counts.failed, language)),
        kv(w["unsubscribed"], format_int(counts.unsubscribed, language)),
    ]
