"""A shop's own order numbers through the real process: ORDER_NUMBER_PATTERN set once in
the environment is what `import-data` accepts, what the model is told and what the bot
looks up."""

from __future__ import annotations

import json
import re
from pathlib import Path

from tests.e2e.chat_helpers import (
    StartBot,
    ask,
    import_shop,
    results_for,
    tool_messages,
    tool_step,
)
from tests.fakes.openai_server import FakeOpenAIServer, fake_call
from tests.fakes.telegram_server import FakeTelegramServer

OWNER = 7401
FORMAT = {
    "ORDER_NUMBER_PATTERN": "AB-[0-9]{6}",
    "ORDER_NUMBER_EXAMPLE": "AB-123456",
    "ORDER_NUMBER_DESCRIPTION": "AB, a dash and 6 digits",
}


async def test_the_shops_format_is_imported_told_to_the_model_and_found(
    start_bot: StartBot,
    bot_base_env: dict[str, str],
    tmp_path: Path,
    fake_telegram: FakeTelegramServer,
    fake_openai: FakeOpenAIServer,
) -> None:
    env = {**bot_base_env, **FORMAT}
    await import_shop(
        env,
        tmp_path,
        {"orders": [{"order_id": "AB-654321", "status": "delivered", "owner_telegram_id": OWNER}]},
    )
    fake_openai.handler = tool_step(
        lambda text: [
            fake_call("get_order_status", {"order_id": n})
            for n in re.findall(r"[A-Z]{2}-?\d+", text)
        ],
        lambda body: json.dumps(tool_messages(body), ensure_ascii=False),
    )
    await start_bot(env)

    found = await ask(fake_telegram, OWNER, "Где заказ AB-654321?")
    assert '"found": true' in found and '"status": "delivered"' in found
    await ask(fake_telegram, OWNER, "Где заказ AB-6543?")  # an echoed error is withheld
    [wrong] = results_for(fake_openai, "Где заказ AB-6543?")
    assert wrong["error"]["code"] == "invalid_arguments"
    assert "AB, a dash and 6 digits" in wrong["error"]["message"]

    tools = fake_openai.chat_requests[0]["tools"]
    order_tool = next(t["function"] for t in tools if t["function"]["name"] == "get_order_status")
    assert "AB, a dash and 6 digits, e.g. AB-123456" in order_tool["description"]
    assert "4-digit" not in order_tool["description"]
    field = order_tool["parameters"]["properties"]["order_id"]["description"]
    assert "AB-123456" in field
