"""SHOP_BACKEND=http through the real process: `python -m bot` reading orders live from a
shop API that follows the published contract (tests/fakes/shop_api.py).

The acceptance lines of the generic HTTP backend: the owner sees their order; a status
changed in the shop is seen after the cache's TTL; another customer gets the answer of a
missing order; 5xx, timeout, malformed JSON and 401 each give one polite "temporarily
unavailable" turn with nothing internal in it, and the bot keeps answering other
questions. A live order with no identity the bot can match is shown to nobody. Set-up
mistakes end the start with one line (exit 2); an unreachable API is a retrying warning.
"""

from __future__ import annotations

import asyncio
import json
import re
import socket
from pathlib import Path
from typing import Any

import aiohttp

from tests.e2e.chat_helpers import WAIT_S, StartBot, ask, results_for, tool_messages, tool_step
from tests.e2e.harness import BotProcess, free_port
from tests.fakes.openai_server import FakeOpenAIServer, fake_call
from tests.fakes.shop_api import TOKEN, FakeShopApi, order
from tests.fakes.telegram_server import FakeTelegramServer
from tests.fakes.trickle import trickling

OWNER, STRANGER = 7301, 7302
NUMBER, MISSING, NOBODYS = "100234", "100999", "100555"
SORRY = "Извините, система заказов сейчас недоступна, попробуйте через несколько минут."


def careful_model(openai: FakeOpenAIServer) -> None:
    """Looks up every 6-digit number, answers from the result; on `unavailable` it says
    it politely (as the tool's message asks) — the rest of the reply is the tool's data."""

    def answer(body: dict[str, Any]) -> str:
        results = tool_messages(body)
        if not results:
            return "Здравствуйте! Чем могу помочь?"
        parts = []
        for result in results:
            if result.get("ok"):
                parts.append(json.dumps(result["data"], ensure_ascii=False))
            elif result["error"]["code"] == "unavailable":
                parts.append(SORRY)
            else:
                parts.append("ошибка " + result["error"]["code"])
        return " ".join(parts)

    openai.handler = tool_step(
        lambda text: (
            [
                fake_call("get_order_status", {"order_id": n})
                for n in re.findall(r"(?<!\d)\d{6}(?!\d)", text)
            ]
            + ([fake_call("get_shop_info", {"topic": "оплата"})] if "оплат" in text else [])
        ),
        answer,
    )


def shop_env(shop: FakeShopApi, **more: str) -> dict[str, str]:
    return {
        "SHOP_BACKEND": "http",
        "SHOP_API_URL": shop.base_url,
        "SHOP_API_TOKEN": TOKEN,
        "SHOP_CACHE_TTL_S": "1",
        "SHOP_MISS_TTL_S": "1",
        "SHOP_TIMEOUT_S": "1",
        # the order path alone (the product catalogue, read at start: test_products.py)
        "PRODUCTS_ENABLED": "false",
        **more,
    }


async def test_owner_sees_the_live_order_and_its_changes_others_get_the_missing_answer(
    start_bot: StartBot,
    fake_telegram: FakeTelegramServer,
    fake_openai: FakeOpenAIServer,
    fake_shop_api: FakeShopApi,
) -> None:
    careful_model(fake_openai)
    fake_shop_api.put(
        order(
            NUMBER, "processing", telegram_id=OWNER, items=[{"name": "Кофемашина", "quantity": 1}]
        ),
        order(NOBODYS, "in_transit", email="someone@example.com"),
    )
    bot = await start_bot(**shop_env(fake_shop_api))

    first = await ask(fake_telegram, OWNER, f"Где мой заказ {NUMBER}?")
    assert '"found": true' in first and '"status": "processing"' in first
    assert "Кофемашина" in first
    assert fake_shop_api.requests[0] == ("/api/orders", "phone=%2B10000000000")  # the check
    assert fake_shop_api.requests[1][0] == f"/api/orders/{NUMBER}"  # read live, not imported

    # the shop ships it: the next question, once the cache's second is over, says so
    fake_shop_api.put(order(NUMBER, "in_transit", telegram_id=OWNER))
    async with asyncio.timeout(WAIT_S):
        while True:
            reply = await ask(fake_telegram, OWNER, f"А сейчас где заказ {NUMBER}?")
            if '"status": "in_transit"' in reply:
                break
            assert '"status": "processing"' in reply
            await asyncio.sleep(0.3)

    # another customer: exactly the answer of a number the shop does not have
    stolen_q, missing_q = f"Где заказ {NUMBER}?", f"Где заказ {MISSING}?"
    stolen = await ask(fake_telegram, STRANGER, stolen_q)
    missing = await ask(fake_telegram, STRANGER, missing_q)
    assert stolen.replace(NUMBER, "N") == missing.replace(MISSING, "N")
    assert results_for(fake_openai, stolen_q)[0]["data"]["found"] is False
    # an order without any identity the bot can match: nobody, not even "public"
    for caller in (OWNER, STRANGER):
        nobodys = await ask(fake_telegram, caller, f"Что с заказом {NOBODYS}?")
        assert '"found": false' in nobodys and "someone@example.com" not in nobodys
    assert TOKEN not in bot.output


async def test_a_failing_shop_is_one_polite_unavailable_turn_and_the_bot_keeps_answering(
    start_bot: StartBot,
    fake_telegram: FakeTelegramServer,
    fake_openai: FakeOpenAIServer,
    fake_shop_api: FakeShopApi,
) -> None:
    careful_model(fake_openai)
    fake_shop_api.put(order(NUMBER, "processing", telegram_id=OWNER))
    bot = await start_bot(**shop_env(fake_shop_api, SHOP_CACHE_TTL_S="0", SHOP_MISS_TTL_S="0"))
    for mode in ("500", "timeout", "malformed", "401"):
        fake_shop_api.fail(mode)
        question = f"Где мой заказ {NUMBER}? ({mode})"
        reply = await ask(fake_telegram, OWNER, question)
        assert reply == SORRY, reply
        result = results_for(fake_openai, question)[0]
        assert result["ok"] is False and result["error"]["code"] == "unavailable"
        seen_by_model = json.dumps(result)
        for internal in ("HTTP", "500", "401", "127.0.0.1", "timeout", TOKEN, "Traceback"):
            assert internal not in seen_by_model, (internal, seen_by_model)
        # other questions are still answered from the bot's own data
        other = await ask(fake_telegram, OWNER, "Какие способы оплаты?")
        assert "Картой" in other, other
        fake_shop_api.fail(None)
    # and once the shop is back, the order is answered again
    back = await ask(fake_telegram, OWNER, f"Где мой заказ {NUMBER}?")
    assert '"found": true' in back
    assert TOKEN not in bot.output and "Traceback" not in bot.output


async def test_set_up_mistakes_end_the_start_with_one_line(
    bot_base_env: dict[str, str], tmp_path: Path, fake_shop_api: FakeShopApi
) -> None:
    rejected = await BotProcess(
        {**bot_base_env, **shop_env(fake_shop_api), "SHOP_API_TOKEN": "wrong-token-123"}, tmp_path
    ).start()
    assert await rejected.wait_exit() == 2
    errors = [line for line in rejected.lines if line.startswith("error:")]
    assert len(errors) == 1 and "SHOP_API_TOKEN was rejected" in errors[0], rejected.output
    assert "wrong-token-123" not in rejected.output and "Traceback" not in rejected.output

    elsewhere = {
        **shop_env(fake_shop_api),
        "SHOP_API_URL": f"http://127.0.0.1:{fake_shop_api.port}/",
    }
    not_the_api = await BotProcess({**bot_base_env, **elsewhere}, tmp_path).start()
    assert await not_the_api.wait_exit() == 2
    assert "does not answer like the shop API" in not_the_api.output
    assert TOKEN not in not_the_api.output

    plain_http = {**shop_env(fake_shop_api), "SHOP_API_URL": "http://shop.example.com/api"}
    insecure = await BotProcess({**bot_base_env, **plain_http}, tmp_path).start()
    assert await insecure.wait_exit() == 2
    assert "SHOP_API_URL" in insecure.output and "https" in insecure.output


async def test_an_unreachable_shop_api_is_a_retrying_warning_then_the_bot_starts(
    start_bot: StartBot, bot_base_env: dict[str, str], tmp_path: Path
) -> None:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    later = FakeShopApi()
    env = {**bot_base_env, **shop_env(later), "SHOP_API_URL": f"http://127.0.0.1:{port}/api"}
    bot = await BotProcess(env, tmp_path).start()
    try:
        line = await bot.wait_for_line("is unreachable or failing")
        assert f"127.0.0.1:{port}" in line and "retrying in" in line
        await later.start(port=port)
        await bot.wait_ready()
        assert TOKEN not in bot.output
    finally:
        await bot.terminate()
        await later.close()


async def test_healthz_metrics_and_stats_show_the_shop_and_never_its_token(
    start_bot: StartBot,
    bot_base_env: dict[str, str],
    fake_telegram: FakeTelegramServer,
    fake_openai: FakeOpenAIServer,
    fake_shop_api: FakeShopApi,
    http: aiohttp.ClientSession,
) -> None:
    careful_model(fake_openai)
    fake_shop_api.put(order(NUMBER, "processing", telegram_id=OWNER))
    port = free_port()
    admin = OWNER
    bot = await start_bot(
        **shop_env(fake_shop_api, SHOP_CACHE_TTL_S="0", SHOP_MISS_TTL_S="0"),
        HEALTH_ENABLED="true",
        WEB_HOST="127.0.0.1",
        WEB_PORT=str(port),
        ADMIN_IDS=str(admin),
    )
    assert '"found": true' in await ask(fake_telegram, OWNER, f"Где мой заказ {NUMBER}?")
    async with http.get(f"http://127.0.0.1:{port}/healthz") as response:
        assert response.status == 200
        health = await response.json()
    assert health["status"] == "ok"
    assert health["shop"]["backend"] == "http" and health["shop"]["state"] == "ok"
    assert health["shop"]["last_ok_at"] is not None and health["shop"]["last_request_ms"] >= 0

    fake_shop_api.fail("500")
    for _ in range(5):  # five failures in a row open the circuit
        assert await ask(fake_telegram, OWNER, f"Где мой заказ {NUMBER}?") == SORRY
    asked = len(fake_shop_api.requests)
    assert await ask(fake_telegram, OWNER, f"Где мой заказ {NUMBER}?") == SORRY
    assert len(fake_shop_api.requests) == asked  # open: answered without asking the shop
    async with asyncio.timeout(WAIT_S):
        while True:  # /healthz caches its answer for a second
            async with http.get(f"http://127.0.0.1:{port}/healthz") as response:
                health = await response.json()
            if health["shop"]["state"] == "open":
                break
            await asyncio.sleep(0.2)
    assert response.status == 200  # a dead shop does not make the bot unhealthy

    async with http.get(f"http://127.0.0.1:{port}/metrics") as response:
        metrics = await response.text()
    assert 'support_bot_shop_requests_total{outcome="ok"} 1.0' in metrics
    assert 'support_bot_shop_requests_total{outcome="unavailable"} 5.0' in metrics
    assert "support_bot_shop_circuit_open 1.0" in metrics
    assert "support_bot_shop_request_seconds_total" in metrics
    assert TOKEN not in metrics and fake_shop_api.base_url not in metrics

    stats = await ask(fake_telegram, admin, "/stats")
    assert "магазин недоступен" in stats or "shop unavailable" in stats, stats
    assert TOKEN not in bot.output and TOKEN not in stats


async def test_an_answer_the_network_delivers_in_parts_is_read_whole(
    start_bot: StartBot,
    fake_telegram: FakeTelegramServer,
    fake_openai: FakeOpenAIServer,
    fake_shop_api: FakeShopApi,
) -> None:
    """Every answer of the shop reaches the bot in three parts with pauses between them
    (tests/fakes/trickle.py): each lookup reads the whole answer, none is "unavailable"."""
    careful_model(fake_openai)
    fake_shop_api.put(order(NUMBER, "in_transit", telegram_id=OWNER))
    async with trickling(fake_shop_api.base_url, parts=3, pause_s=0.2) as proxy:
        env = shop_env(fake_shop_api, SHOP_API_URL=proxy.url, SHOP_TIMEOUT_S="4")
        env.update(SHOP_CACHE_TTL_S="0", SHOP_MISS_TTL_S="0")
        await start_bot(**env)
        for attempt in range(3):
            reply = await ask(fake_telegram, OWNER, f"Где мой заказ {NUMBER}? ({attempt})")
            assert '"found": true' in reply and '"status": "in_transit"' in reply
            assert SORRY not in reply
    assert proxy.answers >= 4  # the start-up check and three lookups, all through it
