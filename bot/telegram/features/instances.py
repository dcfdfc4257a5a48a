"""Several instances on one PostgreSQL database, as one unit (on with DATABASE_URL).

A chat is answered by one instance at a time: its updates are claimed after they are
stored (bot/runtime/claimed.py over storage/coordination.py: the intake's scheduler, `chats`),
the inbox's transitions are fenced by the claim (`chats.inbox_fence`), every request
waits for no expired claim (the sender's guard), and each instance sends at its share
of TELEGRAM_GLOBAL_SENDS_PER_S. In polling mode one instance
polls (`Leadership`, bot/runtime/leadership.py), and /metrics says which. With SQLite there is
one process, which keeps its chats in memory: `build_instances` returns None.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass

from bot.runtime.claimed import Coordination, send_budget_share
from bot.runtime.config import BotMode, NoSettings, Settings
from bot.runtime.leadership import Leadership, polling_leadership
from bot.runtime.metrics import Metrics
from bot.telegram.features import ChatOwnership, Feature
from bot.telegram.features.catalog import Needs, TelegramFeatureSpec, TelegramNeeds, on
from bot.telegram.sender import Sender, guard_requests
from storage.coordination import ClaimRepository
from storage.database import Database

log = logging.getLogger("bot")


@dataclass(frozen=True, slots=True)
class Instances:
    coordination: Coordination  # this instance's claims and fence
    leadership: Leadership | None  # polling mode: the election of the one poller
    chats: ChatOwnership  # the claimed scheduler (at its share of the send budget), fence


def build_instances(settings: Settings, db: Database, sender: Sender) -> Instances | None:
    """None on SQLite; on PostgreSQL the claims, whose fence guards every request of
    `sender` from now on, and in polling mode the election."""
    if db.dialect.name != "postgres":
        return None
    log.info(
        "instance %s: chats are claimed in the database, leases of %.0f s",
        settings.instance_id,
        settings.claim_lease_s,
    )
    claims = ClaimRepository(db, owner=settings.instance_id, lease_s=settings.claim_lease_s)
    leadership = (
        polling_leadership(settings.database_url, settings.bot_token)
        if settings.bot_mode is BotMode.POLLING
        else None
    )
    coordination = Coordination(claims)
    guard_requests(sender, coordination.fence.check)
    share = send_budget_share(sender.set_global_rate, settings.telegram_global_sends_per_s)
    chats = ChatOwnership(
        scheduling=coordination.scheduling(on_live=share), inbox_fence=claims.inbox_fence
    )
    return Instances(coordination, leadership, chats)


def instances_feature(instances: Instances) -> Feature:
    leadership = instances.leadership

    def gauges(metrics: Metrics) -> None:
        if leadership is None:
            return
        metrics.register_gauge(
            "support_bot_polling_leader",
            "1 while this instance holds the polling leader lock (PostgreSQL), else 0.",
            lambda: int(leadership.is_leader),
        )

    return Feature(name="instances", gauges=gauges, chats=instances.chats)


def instances_on_telegram(
    _needs: Needs, telegram: TelegramNeeds, _own: None, _conf: NoSettings
) -> Feature | None:
    # built with the transport (the sender's guard needs it first): bot/telegram/wiring/telegram.py
    return instances_feature(telegram.instances) if telegram.instances is not None else None


# Telegram only (the claims and the poller's election); on with PostgreSQL
INSTANCES: TelegramFeatureSpec[None, NoSettings] = TelegramFeatureSpec(
    name="instances",
    chat=lambda needs, _conf: on(needs.db.dialect.name == "postgres"),
    telegram=instances_on_telegram,
)
