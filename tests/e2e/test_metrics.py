"""/metrics and JSON logs of the real process.

Polling (with HEALTH_ENABLED, LOG_FORMAT=json): a few turns — one with a tool, one whose
answer meets Telegram's flood control, one whose model call fails — move the turn,
model-call, tool-call, flood-control and inbox numbers by exactly what happened; every
log line is one JSON object, the lines written for an update carry its ids as fields,
and no message text is logged. Webhook: /metrics on the webhook port, and
METRICS_ENABLED=false takes it away.
"""

from __future__ import annotations

import json
from pathlib import Path

import aiohttp
import pytest
from prometheus_client.parser import text_string_to_metric_families

from tests.e2e.chat_helpers import WAIT_S, StartBot, ask, last_user_text, wait_for_db
from tests.e2e.harness import free_port, webhook_env
from tests.fakes.openai_server import Body, FakeOpenAIServer, FakeReply, default_script, error
from tests.fakes.telegram_server import FakeTelegramServer, message_update

Samples = dict[tuple[str, frozenset[tuple[str, str]]], float]

FAILING_TEXT = "Qwxz-broken-model-question"


async def scrape(http: aiohttp.ClientSession, port: int) -> Samples:
    async with http.get(f"http://127.0.0.1:{port}/metrics") as response:
        assert response.status == 200
        assert response.headers["Content-Type"].startswith("text/plain")
        text = await response.text()
    samples: Samples = {}
    for family in text_string_to_metric_families(text):
        for sample in family.samples:
            samples[(sample.name, frozenset(sample.labels.items()))] = sample.value
    return samples


def value(samples: Samples, name: str, **labels: str) -> float:
    return samples.get((name, frozenset(labels.items())), 0.0)


def failing_model(body: Body) -> FakeReply:
    if last_user_text(body) == FAILING_TEXT:
        return error(500, "scripted failure")
    return default_script(body)


async def test_metrics_move_with_turns_and_logs_are_json(
    start_bot: StartBot,
    fake_telegram: FakeTelegramServer,
    fake_openai: FakeOpenAIServer,
    database_path: Path,
    http: aiohttp.ClientSession,
) -> None:
    port = free_port()
    fake_openai.handler = failing_model
    bot = await start_bot(
        HEALTH_ENABLED="true", WEB_PORT=str(port), LOG_FORMAT="json", SEED_DEMO_DATA="true"
    )
    before = await scrape(http, port)
    assert value(before, "support_bot_turn_duration_seconds_count", outcome="completed") == 0
    assert value(before, "support_bot_busy_chats") == 0
    assert ("support_bot_send_queue_depth", frozenset()) in before  # the menu may be queued
    assert ("process_resident_memory_bytes", frozenset()) in before

    assert "8041" in await ask(fake_telegram, 801, "Где заказ 8041?")
    fake_telegram.fail_next_sends_with_retry_after(retry_after=1, times=1)
    await ask(fake_telegram, 802, "Здравствуйте!")
    await ask(fake_telegram, 803, FAILING_TEXT)  # the apology
    await wait_for_db(
        database_path, "SELECT count(*) FROM updates WHERE status = 'delivered'", [(3,)]
    )

    after = await scrape(http, port)
    turns = "support_bot_turn_duration_seconds_count"
    assert value(after, turns, outcome="completed") == 2
    assert value(after, turns, outcome="unavailable") == 1
    assert value(after, "support_bot_turn_duration_seconds_sum", outcome="completed") > 0
    assert (
        value(after, "support_bot_tool_calls_total", tool="get_order_status", status="success") == 1
    )
    chat_calls = value(
        after, "support_bot_model_call_duration_seconds_count", model="fake-model", purpose="chat"
    )
    assert chat_calls == 4  # tool step + answer, a greeting, the failed call
    errors = {
        dict(labels)["error"]: number
        for (name, labels), number in after.items()
        if name == "support_bot_model_call_errors_total"
    }
    assert sum(errors.values()) == 1, errors
    assert value(after, "support_bot_flood_control_waits_total") == 1
    assert value(after, "support_bot_flood_control_wait_seconds_total") == 1
    assert value(after, "support_bot_inbox_finished_total", status="delivered") == 3
    assert value(after, "support_bot_inbox_finished_total", status="failed") == 0
    assert value(after, "support_bot_inbox_updates", status="pending") == 0
    assert value(after, "support_bot_inbox_updates", status="answered") == 0

    assert await bot.terminate() == 0
    entries = [json.loads(line) for line in bot.lines if line.strip()]
    assert all(isinstance(entry, dict) and "message" in entry for entry in entries)
    failed_call = [e for e in entries if e["message"].startswith("model call failed")]
    assert failed_call, bot.output
    assert failed_call[0]["chat_id"] == 803
    assert isinstance(failed_call[0]["update_id"], int)
    assert len(failed_call[0]["turn_id"]) == 32
    assert {e["level"] for e in entries} >= {"INFO", "WARNING"}
    for text in ("Где заказ", "Здравствуйте", FAILING_TEXT):
        assert text not in bot.output


@pytest.mark.parametrize("enabled", [True, False])
async def test_webhook_serves_metrics_unless_disabled(
    enabled: bool,
    start_bot: StartBot,
    bot_base_env: dict[str, str],
    fake_telegram: FakeTelegramServer,
    http: aiohttp.ClientSession,
) -> None:
    port = free_port()
    await start_bot(webhook_env(bot_base_env, port), METRICS_ENABLED=str(enabled).lower())
    if not enabled:
        async with http.get(f"http://127.0.0.1:{port}/metrics") as response:
            assert response.status == 404
        return
    url = f"http://127.0.0.1:{port}/telegram/webhook"
    headers = {"X-Telegram-Bot-Api-Secret-Token": "e2e-secret_TOKEN-123"}
    async with http.post(
        url, json=message_update(811, text="Где заказ 8041?"), headers=headers
    ) as r:
        assert r.status == 200
    await fake_telegram.wait_for_messages(811, within=WAIT_S)
    samples = await scrape(http, port)
    assert value(samples, "support_bot_turn_duration_seconds_count", outcome="completed") == 1
    assert (
        value(samples, "support_bot_tool_calls_total", tool="get_order_status", status="success")
        == 1
    )


async def test_open_handoffs_are_a_gauge(
    start_bot: StartBot,
    fake_telegram: FakeTelegramServer,
    http: aiohttp.ClientSession,
) -> None:
    operators, customer = -1001500, 7301
    fake_telegram.add_forum(operators)
    port = free_port()
    await start_bot(HEALTH_ENABLED="true", WEB_PORT=str(port), OPERATOR_CHAT_ID=str(operators))
    assert value(await scrape(http, port), "support_bot_handoffs_open") == 0
    fake_telegram.enqueue_update(message_update(customer, text="/operator"))
    await fake_telegram.wait_for_messages(customer, 1, within=WAIT_S)
    assert value(await scrape(http, port), "support_bot_handoffs_open") == 1
