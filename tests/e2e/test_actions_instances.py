"""Actions with two bot instances on one PostgreSQL database.

Two real processes in webhook mode, the local backend, ACTIONS_ENABLED=cancel_order. The
card is sent by one instance; the customer presses ✅ twice, racing, and the load
balancer (played by the test) hands one press to each instance at once, and the first
press to the other instance again (Telegram retrying). Imported data: the press becomes
a request to the staff, and two admins press ✅ Done, one on each instance. Exactly one
request, one cancellation, one result message; every press is told it is being done.

Both instances store the presses they are given; the chat's claim (bot/runtime/claimed.py) has one
instance handle them in order, and the action's conditional transitions
(storage/actions.py `move`) are the guard behind it — their race at the same instant is
tested directly on both backends in tests/unit/services/test_actions.py
(`test_two_presses_at_once_let_exactly_one_through`).
"""

from __future__ import annotations

import asyncio
from pathlib import Path

import aiohttp
import pytest

from bot.telegram.action_words import ACTION_WORDS
from tests.e2e.chat_helpers import WAIT_S, StartBot, import_shop, query, tool_step, wait_for_db
from tests.e2e.harness import free_port, post_update, webhook_env
from tests.e2e.test_actions import (
    ASK_CONFIRM,
    CUSTOMER,
    MINE,
    STAFF,
    _calls,
    _model,
    cancellations,
    card_buttons,
    press_update,
    staff_done_update,
    status_of,
)
from tests.fakes.openai_server import FakeOpenAIServer
from tests.fakes.telegram_server import FakeTelegramServer, message_update

pytestmark = pytest.mark.postgres
OTHER_STAFF = 7698


@pytest.fixture
def e2e_backend() -> str:
    """Both instances share one PostgreSQL database."""
    return "postgres"


async def test_two_racing_presses_on_two_instances_cancel_once_with_one_result(
    start_bot: StartBot,
    bot_base_env: dict[str, str],
    tmp_path: Path,
    fake_telegram: FakeTelegramServer,
    fake_openai: FakeOpenAIServer,
    database_path: Path,
    http: aiohttp.ClientSession,
) -> None:
    await import_shop(
        bot_base_env,
        tmp_path,
        {"orders": [{"order_id": MINE, "status": "processing", "owner_telegram_id": CUSTOMER}]},
    )
    fake_openai.handler = tool_step(_calls, _model)
    ports = [free_port(), free_port()]
    for name, port in zip(("first", "second"), ports, strict=True):
        await start_bot(
            webhook_env(bot_base_env, port),
            INSTANCE_ID=name,
            ACTIONS_ENABLED="cancel_order",
            ADMIN_IDS=f"{STAFF},{OTHER_STAFF}",
        )

    # the card, from the first instance
    asked = message_update(CUSTOMER, text=f"Отмените заказ {MINE}")
    assert await post_update(http, ports[0], asked) == 200
    [card] = await fake_telegram.wait_for_messages(CUSTOMER, 1, within=WAIT_S)
    assert ASK_CONFIRM in card.plain_text and len(card_buttons(card)) == 2

    # ✅ twice, racing: one press to each instance, the first also retried on the second
    presses = [press_update(card, 0), press_update(card, 0)]
    statuses = await asyncio.gather(
        post_update(http, ports[0], presses[0]),
        post_update(http, ports[1], presses[1]),
        post_update(http, ports[1], presses[0]),
    )
    assert list(statuses) == [200, 200, 200]
    # two admins press ✅ Done on their cards at once, one on each instance
    done = [
        await staff_done_update(fake_telegram, MINE, chat=who, user=who)
        for who in (STAFF, OTHER_STAFF)
    ]
    statuses = await asyncio.gather(
        post_update(http, ports[0], done[0]), post_update(http, ports[1], done[1])
    )
    assert list(statuses) == [200, 200]
    await wait_for_db(database_path, "SELECT status FROM pending_actions", [("done",)])
    await fake_telegram.wait_for_messages(CUSTOMER, 3, within=WAIT_S)
    # a /help now, to either instance, is answered after anything still due
    assert await post_update(http, ports[1], message_update(CUSTOMER, text="/help")) == 200
    messages = await fake_telegram.wait_for_messages(CUSTOMER, 4, within=WAIT_S)
    assert "/new" in messages[-1].plain_text
    assert len(messages) == 4, [m.plain_text for m in messages]  # card, requested, result, /help
    assert messages[1].plain_text == ACTION_WORDS["ru"].action_requested
    assert messages[2].plain_text == f"Заказ {MINE} отменён."
    assert status_of(database_path, MINE) == "cancelled"
    assert cancellations(database_path) == 1

    ids = {p["callback_query"]["id"] for p in presses}
    await fake_telegram.wait_until(
        lambda: (
            {
                c.params.get("callback_query_id")
                for c in fake_telegram.calls_of("answerCallbackQuery")
            }
            >= ids
        ),
        within=WAIT_S,
    )
    notes = sorted(
        str(c.params.get("text") or "")
        for c in fake_telegram.calls_of("answerCallbackQuery")
        if c.params.get("callback_query_id") in ids
    )
    # the press that claimed it is being worked on; the other, handled before the staff's
    # Done or after it, is told the same or that it is done already (never done twice)
    assert ACTION_WORDS["ru"].action_working in notes, notes
    assert set(notes) <= {ACTION_WORDS["ru"].action_working, ACTION_WORDS["ru"].action_already}, (
        notes
    )
    assert query(database_path, "SELECT count(*) FROM pending_actions") == [(1,)]
