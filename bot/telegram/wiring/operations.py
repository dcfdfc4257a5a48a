"""Operations: /healthz and /metrics (what they read is registered here, once)."""

from __future__ import annotations

from collections.abc import Iterable, Sequence

from bot.runtime.config import Settings
from bot.runtime.health import Health
from bot.runtime.metrics import Metrics
from bot.telegram.features import Feature
from bot.telegram.sender import Sender
from bot.telegram.wiring.telegram import Pipeline
from storage.database import Database
from storage.inbox import FINAL_STATUSES
from tools.shop.directory import ShopDirectory


def build_metrics(settings: Settings, tool_names: Iterable[str]) -> Metrics | None:
    """METRICS_ENABLED: the registry the turn records report to (bot/runtime/metrics.py)."""
    if not settings.metrics_enabled:
        return None
    return Metrics(
        tool_names=tool_names,
        model_names=(settings.openai_model, *settings.openai_fallback_models),
    )


def build_health(
    settings: Settings, db: Database, pipeline: Pipeline, shop: ShopDirectory | None = None
) -> Health:
    return Health(
        db=db,
        inbox=pipeline.inbox,
        intake=pipeline.intake,
        delivery=pipeline.responder,
        delivery_threshold_s=settings.health_delivery_threshold_s,
        shop=shop,
    )


def watch_shop(metrics: Metrics, shop: ShopDirectory) -> None:
    """The shop backend's numbers (a live backend only; never a URL or a credential)."""
    if shop.backend_name == "local":
        return
    stats = shop.stats
    metrics.register_counter(
        "support_bot_shop_requests",
        "Requests to the shop's API by outcome: ok, not_found, timeout, unavailable, "
        "rate_limited, auth, malformed.",
        lambda: dict(stats.requests),
        label="outcome",
    )
    metrics.register_counter(
        "support_bot_shop_request_seconds",
        "Seconds spent in requests to the shop's API (divide by the requests for the mean).",
        lambda: stats.latency_sum_s,
    )
    metrics.register_gauge(
        "support_bot_shop_last_request_seconds",
        "How long the last request to the shop's API took.",
        lambda: stats.last_latency_s or 0.0,
    )
    metrics.register_gauge(
        "support_bot_shop_circuit_open",
        "1 while the circuit breaker stops asking the shop's API (after failures in a row).",
        lambda: 1 if shop.state == "open" else 0,
    )
    metrics.register_counter(
        "support_bot_shop_cache_hits",
        "Order questions answered from the short-lived cache, without asking the shop.",
        lambda: stats.cache_hits,
    )
    metrics.register_counter(
        "support_bot_shop_rejected_while_open",
        "Order questions answered 'unavailable' at once because the circuit was open.",
        lambda: stats.rejected_while_open,
    )


def watch_state(
    metrics: Metrics, pipeline: Pipeline, sender: Sender, features: Sequence[Feature] = ()
) -> None:
    """The numbers /metrics reads at scrape time (nothing on the hot path), the
    features' among them."""
    inbox, intake = pipeline.inbox, pipeline.intake
    metrics.register_gauge(
        "support_bot_inbox_updates",
        "Updates waiting in the inbox: pending (not answered yet) or answered (reply "
        "stored, not delivered yet).",
        inbox.count_unfinished,
        label="status",
    )
    metrics.register_counter(
        "support_bot_inbox_finished",
        "Updates finished by this process, by status: delivered, failed, unknown (the "
        "reply may not have arrived), ignored (nothing to answer).",
        lambda: {status: inbox.finished[status] for status in FINAL_STATUSES},
        label="status",
    )
    metrics.register_gauge(
        "support_bot_send_queue_depth",
        "Outgoing Bot API requests waiting for their pacing turn (per chat or global rate).",
        lambda: sender.queued_requests,
    )
    metrics.register_gauge(
        "support_bot_busy_chats", "Chats with an update being handled.", lambda: intake.busy_chats
    )
    metrics.register_gauge(
        "support_bot_stalled_chats",
        "Chats whose updates wait for a restart (storage failed beyond the retry bound).",
        lambda: intake.stalled_chats,
    )
    metrics.register_counter(
        "support_bot_flood_control_waits",
        "Times Telegram's flood control (429 retry_after) was waited out.",
        lambda: sender.flood_waits,
    )
    metrics.register_counter(
        "support_bot_flood_control_wait_seconds",
        "Seconds spent waiting out Telegram's flood control.",
        lambda: sender.flood_wait_s,
    )
    for feature in features:
        if feature.gauges is not None:
            feature.gauges(metrics)
