"""Tool-call protocol edge cases through the real process: `python -m bot` against both fakes.

A broken or hostile model proposes calls the loop must not choke on: arguments nested
deeper than any parser's recursion limit (answered to the model as `invalid_arguments`,
the turn goes on), and two calls sharing one call id (rejected as a protocol error
before anything runs, so no result can be read as another call's data). What the
customer sees, what the model was told and what the database holds are checked.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from bot.telegram.texts import RU
from tests.e2e.chat_helpers import (
    StartBot,
    ask,
    last_user_text,
    query,
    results_for,
    seen_text,
    wait_for_db,
)
from tests.fakes.openai_server import Body, FakeOpenAIServer, FakeReply, completion, fake_call
from tests.fakes.telegram_server import FakeTelegramServer

pytestmark = pytest.mark.both_backends


DEEP_TEXT = "Где мой заказ?"
SAME_ID_TEXT = "Где заказы 8041 и 8042?"
DEEP = '{"order_id":' + "[" * 3000 + "]" * 3000 + "}"
ASK_NUMBER = "Пришлите, пожалуйста, номер заказа из 4 цифр."


def broken_model(body: Body) -> FakeReply:
    if not body.get("tools"):
        return completion(text="summary")
    if body["messages"][-1].get("role") == "tool":
        return completion(text=ASK_NUMBER)
    text = last_user_text(body)
    if text == DEEP_TEXT:
        return completion(tool_calls=[fake_call("get_order_status", DEEP, id="call_deep")])
    if text == SAME_ID_TEXT:
        return completion(
            tool_calls=[
                fake_call("get_order_status", {"order_id": "8041"}, id="call_same"),
                fake_call("get_order_status", {"order_id": "8042"}, id="call_same"),
            ]
        )
    return completion(text="Здравствуйте!")


async def test_deep_arguments_and_a_shared_call_id_never_break_the_turn(
    start_bot: StartBot,
    fake_telegram: FakeTelegramServer,
    fake_openai: FakeOpenAIServer,
    database_path: Path,
) -> None:
    fake_openai.handler = broken_model
    await start_bot()

    # arguments nested 3,000 deep: the model is told, and its next text reaches the customer
    assert await ask(fake_telegram, 601, DEEP_TEXT) == ASK_NUMBER
    [result] = results_for(fake_openai, DEEP_TEXT)
    assert result["ok"] is False and result["error"]["code"] == "invalid_arguments"

    # two calls under one id: no tool runs, the customer gets the short apology
    reply = await ask(fake_telegram, 602, SAME_ID_TEXT)
    assert reply == seen_text(RU.apology)
    assert [last_user_text(b) for b in fake_openai.chat_requests].count(SAME_ID_TEXT) == 1

    # the chat keeps working afterwards
    assert await ask(fake_telegram, 602, "Здравствуйте") == "Здравствуйте!"

    await wait_for_db(
        database_path, "SELECT count(*) FROM turns WHERE chat_id IN (601, 602)", [(3,)]
    )
    assert query(database_path, "SELECT chat_id, call_id, status, error_code FROM tool_calls") == [
        (601, "call_deep", "rejected", "invalid_arguments")
    ]
    assert query(
        database_path,
        "SELECT chat_id, status, error_code FROM turns ORDER BY started_at",
    ) == [
        (601, "answered", None),
        (602, "failed", "protocol_error"),
        (602, "answered", None),
    ]
