"""A small local model that writes its tool calls as text, through the real process.

Qwen2.5-Coder-1.5B on llama.cpp (docs/simulations.md) never made a structured call: it
wrote bare or ```json-fenced JSON, and repeated the call after reading its result. The
fake model here does the same; the customer must never see that text, a read-only call
runs once through the executor (audited), an action can only show its card (the order
is untouched until the button), and the repeat is answered from the first result.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests.e2e.chat_helpers import StartBot, import_shop, query, tool_messages
from tests.e2e.test_actions import card_buttons, say, status_of
from tests.fakes.openai_server import Body, FakeOpenAIServer, FakeReply, completion
from tests.fakes.telegram_server import FakeTelegramServer

pytestmark = pytest.mark.both_backends

CUSTOMER = 7601  # the same customer as tests/e2e/test_actions.py (say() writes as them)
ORDER, TO_CANCEL = "4201", "4202"


def as_text(name: str, arguments: dict[str, str], form: str) -> str:
    call = json.dumps({"name": name, "arguments": arguments}, ensure_ascii=False)
    if form == "fenced":
        return f"Сейчас проверю.\n```json\n{call}\n```"
    if form == "tagged":
        return f"<tool_call>\n{call}\n</tool_call>"
    return call


def writing_model(form: str):  # type: ignore[no-untyped-def]
    """Writes the call as text; after a result, writes it AGAIN once (as Qwen did), then
    answers from the result."""

    def script(body: Body) -> FakeReply:
        if not body.get("tools"):
            return completion(text="summary")
        question = [m for m in body["messages"] if m.get("role") == "user"][-1]["content"]
        results = tool_messages(body)
        if "Отмените" in question:
            call = ("propose_cancel_order", {"order_id": TO_CANCEL})
        else:
            call = ("get_order_status", {"order_id": ORDER})
        if len(results) < 2 and body.get("tool_choice") != "none":
            return completion(text=as_text(*call, form))
        if results and results[-1].get("data", {}).get("proposed"):
            return completion(text="Проверьте, пожалуйста, карточку ниже.")
        status = results[0]["data"]["status"] if results else "?"
        return completion(text=f"Статус заказа {ORDER}: {status}.")

    return script


@pytest.mark.parametrize("form", ["bare", "fenced", "tagged"])
async def test_calls_written_as_text_run_once_and_the_customer_never_sees_them(
    form: str,
    start_bot: StartBot,
    bot_base_env: dict[str, str],
    tmp_path: Path,
    fake_telegram: FakeTelegramServer,
    fake_openai: FakeOpenAIServer,
    database_path: Path,
) -> None:
    await import_shop(
        bot_base_env,
        tmp_path,
        {
            "orders": [
                {"order_id": ORDER, "status": "in_transit", "owner_telegram_id": CUSTOMER},
                {"order_id": TO_CANCEL, "status": "processing", "owner_telegram_id": CUSTOMER},
            ]
        },
    )
    fake_openai.handler = writing_model(form)
    await start_bot(ACTIONS_ENABLED="cancel_order", STREAM_ANSWERS="false")

    answer = await say(fake_telegram, f"Где мой заказ {ORDER}?")
    assert answer.plain_text == f"Статус заказа {ORDER}: in_transit."
    card = await say(fake_telegram, f"Отмените заказ {TO_CANCEL}")
    assert "Проверьте, пожалуйста, карточку ниже." in card.plain_text
    assert len(card_buttons(card)) == 2  # the card: the button is the only way on

    for message in fake_telegram.messages_to(CUSTOMER):
        for leaked in ("{", "```", "tool_call", "get_order_status", "propose_cancel_order"):
            assert leaked not in message.plain_text
    # each call ran once, audited; its repeat got the first result back, not a second run
    rows = query(database_path, "SELECT tool_name, status, error_code FROM tool_calls ORDER BY id")
    assert rows == [
        ("get_order_status", "success", None),
        ("get_order_status", "rejected", "repeated_call"),
        ("propose_cancel_order", "success", None),
    ]
    assert status_of(database_path, TO_CANCEL) == "processing"  # nothing done before ✅
    assert query(database_path, "SELECT status FROM pending_actions") == [("pending",)]
