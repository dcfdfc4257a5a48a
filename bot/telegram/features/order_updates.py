"""Order updates as one feature: on only with ORDER_UPDATES_ENABLED.

It adds /updates and the "notify me" / "stop" buttons among the customers' commands, its
menu entry, the shop's push routes (bot/runtime/shop_push.py) on the web server, the worker that
reads pushes, polls and sends (bot/runtime/order_notifier.py) as background work, its gauges and
its /stats block, and the "notify me" button under an answer that showed the customer
their own order (`notify_rows`, drawn by bot/telegram/turn_view.py among the features' rows).
Its settings are `OrderUpdatesSettings` (ORDER_UPDATES_*, the shops' push secrets and
SHOP_WEBHOOK_MAX_BYTES), its words `ORDER_UPDATE_WORDS` (bot/telegram/order_update_words.py).
"""

from __future__ import annotations

import logging
import re
from collections.abc import Callable

from aiogram.types import InlineKeyboardButton
from aiohttp import web
from pydantic import Field, SecretStr, field_validator

from bot.runtime.config import BotMode, FeatureSettings, Settings
from bot.runtime.leadership import Leadership, LeaderWords
from bot.runtime.metrics import Metrics
from bot.runtime.order_notifier import (
    NotificationWords,
    OrderNotifier,
    QuietHours,
    order_updates_lock_name,
)
from bot.runtime.shop_push import PushSecrets, add_shop_push_routes
from bot.telegram.channel import TelegramChannel
from bot.telegram.context import HandlerDeps
from bot.telegram.features import Feature, FeatureRouters
from bot.telegram.features.catalog import Needs, TelegramFeatureSpec, TelegramNeeds, on, word_table
from bot.telegram.keyboards import OrderUpdatesButton
from bot.telegram.order_update_words import ORDER_UPDATE_WORDS
from bot.telegram.routers.admin import StatsSection
from bot.telegram.routers.order_updates import MENU, build_order_updates_router
from bot.telegram.sender import Sender
from bot.telegram.stats_view.order_updates import order_updates_block
from bot.telegram.stats_view.table import TableSection
from bot.telegram.texts import Language, Texts, TextTable, language_for
from services.loop_types import TurnReply
from services.offers import NotifyWhenItMoves
from services.order_updates import OrderUpdates
from services.stats import StatsReport
from storage.database import Database
from storage.leader import LeaderLock
from storage.order_updates import Notification, OrderUpdateRepository
from storage.shop import ShopRepository
from tools.shop.directory import ShopDirectory

log = logging.getLogger(__name__)


class OrderUpdatesSettings(FeatureSettings):
    """Order updates' own settings (the names owners have always set); the web server's
    and the database's, which other parts share, stay in `Settings`."""

    # "notify me when it moves" under an answer that showed a customer their own order,
    # /updates, the shop's pushes and the polling fallback. Off: none of it exists.
    order_updates_enabled: bool = False
    # the polling fallback reads each subscribed, unfinished order at most this often
    # (0: no polling, pushes only) ...
    order_updates_poll_minutes: float = Field(default=15.0, ge=0, le=10_080)
    # ... and at most this many orders per round (the shop API's budget)
    order_updates_poll_budget: int = Field(default=60, ge=1, le=100_000)
    # the shared secret of the generic push endpoint (POST /shop/events, HMAC-SHA256 of
    # the body); unset: no push endpoint
    shop_webhook_secret: SecretStr | None = None
    # Shopify's orders/updated webhook (the app's client secret) and WooCommerce's
    # order.updated webhook (the webhook's secret): unset, no such route
    shopify_webhook_secret: SecretStr | None = None
    woocommerce_webhook_secret: SecretStr | None = None
    # a push body larger than this is refused (413) unread
    shop_webhook_max_bytes: int = Field(default=65_536, ge=1024, le=10_485_760)
    # no notification between these hours, HH-HH (e.g. 22-8) at ORDER_UPDATES_UTC_OFFSET
    # hours from UTC (unset: any time); the ones due go out when the quiet hours end
    order_updates_quiet_hours: str | None = None
    order_updates_utc_offset: int = Field(default=0, ge=-12, le=14)

    @field_validator("order_updates_quiet_hours")
    @classmethod
    def _check_quiet_hours(cls, value: str | None) -> str | None:
        if value is not None and not re.fullmatch(r"([01]?\d|2[0-3])-([01]?\d|2[0-3])", value):
            raise ValueError("expected HH-HH in whole hours, e.g. 22-8")
        return value


ORDER_UPDATES_WORDS = LeaderWords(
    leading="order updates: this instance holds the lock; it polls the shop and notifies",
    standing_by="order updates: another instance notifies; this one stands by",
    unreachable=(
        "order updates: cannot reach the database for the lock (%s); retrying every %.0f s"
    ),
    lost="order updates: lost the lock; this instance stops notifying",
)


def _secret(value: object) -> str | None:
    getter = getattr(value, "get_secret_value", None)
    return str(getter()) if getter is not None else None


def notify_rows(reply: TurnReply, shop_texts: Texts) -> list[list[InlineKeyboardButton]]:
    """One "notify me when order N moves" row per own order the answer showed (the
    turn view draws them only under an answer in a private chat)."""
    texts = shop_texts.of(ORDER_UPDATE_WORDS)
    rows = []
    for offer in reply.offers:
        if isinstance(offer, NotifyWhenItMoves):
            number = offer.order_number
            text = texts.for_order("order_updates_button", number)
            button = OrderUpdatesButton.button("on", number, text)
            if button is not None:
                rows.append([button])
    return rows


def _leadership(settings: Settings) -> Leadership | None:
    """With several instances (DATABASE_URL) one notifies: the holder of the lock."""
    if settings.database_url is None:
        return None
    bot_id = int(settings.bot_token.get_secret_value().split(":", 1)[0])
    url = settings.database_url.get_secret_value()
    return Leadership(LeaderLock(url, order_updates_lock_name(bot_id)), words=ORDER_UPDATES_WORDS)


def _push_secrets(settings: Settings, conf: OrderUpdatesSettings) -> PushSecrets:
    secrets = PushSecrets(
        generic=_secret(conf.shop_webhook_secret),
        shopify=_secret(conf.shopify_webhook_secret),
        woocommerce=_secret(conf.woocommerce_webhook_secret),
    )
    if secrets.any and settings.bot_mode is BotMode.POLLING and not settings.health_enabled:
        log.warning(
            "order updates: a shop webhook secret is set, but in polling mode the push "
            "routes are served only with HEALTH_ENABLED=true; polling the shop only"
        )
    return secrets


def _gauges(repo: OrderUpdateRepository) -> Callable[[Metrics], None]:
    def gauges(metrics: Metrics) -> None:
        async def subscriptions() -> float:
            return float((await repo.counts()).active)

        async def outcomes() -> dict[str, float]:
            counts = await repo.counts()
            return {
                "sent": float(counts.sent),
                "failed": float(counts.failed),
                "unsubscribed": float(counts.unsubscribed),
            }

        metrics.register_gauge(
            "support_bot_order_update_subscriptions",
            "Customers' order-update subscriptions active now.",
            subscriptions,
        )
        metrics.register_counter(
            "support_bot_order_updates",
            "Order-update notifications by outcome (stored, all instances): sent, failed "
            "(not delivered), unsubscribed (subscriptions stopped: the customer blocked "
            "the bot).",
            outcomes,
            label="outcome",
        )

    return gauges


def _stats_section(repo: OrderUpdateRepository) -> StatsSection:
    async def stats_section(report: StatsReport) -> TableSection:
        counts = await repo.counts(report.since, report.until)

        def lines(language: Language) -> list[str]:
            return order_updates_block(counts, language)

        return lines

    return stats_section


def order_updates_feature(
    settings: Settings,
    conf: OrderUpdatesSettings,
    db: Database,
    sender: Sender,
    texts: TextTable,
    shop: ShopDirectory,
) -> Feature | None:
    """The feature, or None when ORDER_UPDATES_ENABLED is off. Orders are read from
    `shop`'s backend directly (a change must be seen, not a cached copy)."""
    if not conf.order_updates_enabled:
        return None
    repo = OrderUpdateRepository(db)
    poll_every_s = conf.order_updates_poll_minutes * 60.0
    updates = OrderUpdates(
        repo,
        shop.backend.get_order,
        ShopRepository(db).get_verified_phone,
        normalise=shop.number_rule.normalise,
        poll_interval_s=poll_every_s,
        poll_budget=conf.order_updates_poll_budget,
    )
    notifier = OrderNotifier(
        updates,
        repo,
        TelegramChannel(sender),
        notification_words(texts),
        leadership=_leadership(settings),
        poll_every_s=poll_every_s,
        quiet=QuietHours.parse(conf.order_updates_quiet_hours, conf.order_updates_utc_offset),
    )
    secrets = _push_secrets(settings, conf)

    def routers(deps: HandlerDeps) -> FeatureRouters:
        return FeatureRouters(commands=(build_order_updates_router(deps, updates),))

    def web_routes(app: web.Application) -> None:
        add_shop_push_routes(
            app,
            repo,
            secrets,
            max_bytes=conf.shop_webhook_max_bytes,
            normalise=shop.number_rule.normalise,
            stored=notifier.wake,
        )

    return Feature(
        name="order_updates",
        routers=routers,
        menu=MENU,
        gauges=_gauges(repo),
        stats_sections=(_stats_section(repo),),
        offer_rows=notify_rows,
        background=notifier.run,
        web_routes=web_routes if secrets.any else None,
    )


def notification_words(texts: TextTable) -> NotificationWords:
    """A notification's words: `order_update_<status>` in the customer's language."""

    def words(notification: Notification) -> str | None:
        language = texts.by_language[language_for(notification.language)]
        said = language.of(ORDER_UPDATE_WORDS)
        key = f"order_update_{notification.status}"
        if not hasattr(said, key):
            return None
        return said.for_order(key, notification.order_number)

    return words


def order_updates_on_telegram(
    needs: Needs, telegram: TelegramNeeds, _own: None, conf: OrderUpdatesSettings
) -> Feature | None:
    return order_updates_feature(
        needs.settings, conf, needs.db, telegram.sender, telegram.texts, needs.shop
    )


# Telegram only: the lookup's "own order shown" note is the core's; the button is this
ORDER_UPDATES: TelegramFeatureSpec[None, OrderUpdatesSettings] = TelegramFeatureSpec(
    name="order_updates",
    chat=lambda _needs, conf: on(conf.order_updates_enabled),
    telegram=order_updates_on_telegram,
    settings=OrderUpdatesSettings,
    words=word_table(ORDER_UPDATE_WORDS),
    turned_on={"order_updates_enabled": True},
)
