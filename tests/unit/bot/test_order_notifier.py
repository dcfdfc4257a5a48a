"""Quiet hours of order updates and their /stats block."""

from __future__ import annotations

import logging
from datetime import UTC, datetime

import pytest

from bot.runtime.order_notifier import OrderNotifier, QuietHours
from bot.telegram.stats_view.order_updates import order_updates_block
from storage.order_updates import OrderUpdateCounts


def at(hour: int, minute: int = 0) -> float:
    return datetime(2026, 12, 1, hour, minute, tzinfo=UTC).timestamp()


@pytest.mark.parametrize(
    ("hours", "offset", "utc_hour", "quiet"),
    [
        ("22-8", 0, 23, True),
        ("22-8", 0, 3, True),
        ("22-8", 0, 8, False),
        ("22-8", 0, 21, False),
        ("22-8", 3, 19, True),  # 22:00 at UTC+3
        ("22-8", 3, 5, False),  # 08:00 at UTC+3
        ("1-6", 0, 0, False),
        ("1-6", 0, 1, True),
        ("1-6", -5, 6, True),  # 01:00 at UTC-5
    ],
)
def test_quiet_hours(hours: str, offset: int, utc_hour: int, quiet: bool) -> None:
    window = QuietHours.parse(hours, offset)
    assert window is not None
    assert window.now_quiet(at(utc_hour)) is quiet


def test_no_quiet_hours_when_unset_or_empty() -> None:
    assert QuietHours.parse(None, 0) is None
    assert QuietHours.parse("7-7", 0) is None


def test_stats_block_in_both_languages() -> None:
    counts = OrderUpdateCounts(active=3, subscribed=5, sent=7, failed=1, unsubscribed=2)
    en = "\n".join(order_updates_block(counts, "en"))
    assert "ORDER UPDATES" in en and "7" in en and "unsubscribed" in en
    ru = "\n".join(order_updates_block(counts, "ru"))
    assert "УВЕДОМЛЕНИЯ О ЗАКАЗАХ" in ru


def test_settings_off_by_default_and_quiet_hours_checked(monkeypatch: pytest.MonkeyPatch) -> None:
    from bot.runtime.config import SettingsError, load_feature_settings
    from bot.telegram.features.order_updates import OrderUpdatesSettings

    for name in ("ORDER_UPDATES_ENABLED", "SHOP_WEBHOOK_SECRET", "ORDER_UPDATES_QUIET_HOURS"):
        monkeypatch.delenv(name, raising=False)
    settings = load_feature_settings(OrderUpdatesSettings)
    assert settings.order_updates_enabled is False
    assert settings.shop_webhook_secret is None
    for good in ("22-8", "0-6", "9-18"):
        load_feature_settings(OrderUpdatesSettings, order_updates_quiet_hours=good)
    for bad in ("24-1", "22:00-08:00", "x", "8"):
        with pytest.raises(SettingsError, match="ORDER_UPDATES_QUIET_HOURS: expected HH-HH"):
            load_feature_settings(OrderUpdatesSettings, order_updates_quiet_hours=bad)


class BrokenPushes:
    """Order updates whose pushes step fails every time (a fault that is not one order's);
    the polling round works and is counted."""

    def __init__(self) -> None:
        self.polls = 0

    async def process_events(self) -> int:
        raise RuntimeError("the pushes step failed")

    async def poll_round(self) -> int:
        self.polls += 1
        return 0


class NoNotifications:
    def __init__(self) -> None:
        self.asked = 0

    async def due_notifications(self, limit: int) -> list[object]:
        self.asked += 1
        return []


async def test_a_failing_step_does_not_stop_the_others_and_is_said_once(
    caplog: pytest.LogCaptureFixture,
) -> None:
    updates, repo = BrokenPushes(), NoNotifications()
    notifier = OrderNotifier(
        updates,  # type: ignore[arg-type]
        repo,  # type: ignore[arg-type]
        channel=None,  # type: ignore[arg-type]
        words=None,  # type: ignore[arg-type]
        leadership=None,
        poll_every_s=1.0,
        clock=iter(range(0, 1000, 5)).__next__,  # a polling round is due at every tick
    )
    for _ in range(5):
        await notifier.tick()
    assert updates.polls == 5 and repo.asked == 5  # polled and sent every tick
    warnings = [r for r in caplog.records if r.levelno >= logging.WARNING]
    assert len(warnings) == 1 and "pushes failed (RuntimeError)" in warnings[0].getMessage()
