"""What the model writes, on its way to the customer, through the real process.

The fake model plays a model that runs on, hides link targets or writes control
characters; the tests check what a customer would see.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from bot.texts import EN
from tests.e2e.chat_helpers import StartBot, finished_sql, seen_text, wait_for_db
from tests.fakes.openai_server import Body, FakeOpenAIServer, FakeReply, completion
from tests.fakes.telegram_server import FakeTelegramServer, message_update

CUSTOMER = 5301


def _runs_on(body: Body) -> FakeReply:
    """A model that would write 300,000 characters, stopping only at the requested cap."""
    if not body.get("tools"):
        return completion(text="summary")
    cap = body.get("max_completion_tokens")
    if cap is None:
        return completion(text="All our delivery options, in detail. " * 8_000)
    return completion(
        text=("All our delivery options, in detail. " * 8_000)[: cap * 4], finish_reason="length"
    )


@pytest.mark.both_backends
async def test_an_answer_that_runs_on_is_capped_and_says_it_was_cut(
    start_bot: StartBot,
    fake_telegram: FakeTelegramServer,
    fake_openai: FakeOpenAIServer,
    database_path: Path,
) -> None:
    fake_openai.handler = _runs_on
    await start_bot()
    update = message_update(CUSTOMER, text="Tell me about delivery", language_code="en")
    fake_telegram.enqueue_update(update)
    await wait_for_db(
        database_path, finished_sql([update["update_id"]]), [(1,)], update["update_id"]
    )
    [request] = fake_openai.chat_requests
    assert request["max_completion_tokens"] == 1000  # the default ANSWER_MAX_TOKENS
    answer = fake_telegram.messages_to(CUSTOMER)
    assert 1 <= len(answer) <= 2  # not 74
    assert answer[0].plain_text.startswith("All our delivery options")
    assert answer[-1].plain_text.endswith(seen_text(EN.cut_short))
