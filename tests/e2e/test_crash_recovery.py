"""Crash proof: SIGKILL at the worst moments, restart, and the customer gets one answer."""

from __future__ import annotations

import asyncio
from pathlib import Path

import pytest

from bot.telegram.handoff_view import HANDOFF_WORDS
from tests.e2e.chat_helpers import WAIT_S, Script, last_user_text, query, seen_text, tool_step
from tests.e2e.conftest import StartBot
from tests.fakes.openai_server import FakeOpenAIServer, default_script, fake_call
from tests.fakes.telegram_server import FakeTelegramServer, message_update
from tests.waits import OUTER_LIMIT_S

CHAT = 3003
QUESTION = "Где сейчас находится заказ 8041?"
OPERATORS = -1001503
CALM_CHAT = 3004  # the same question without a crash, for comparison
MISSED_AND_PERSON = "Где мой заказ 9999? Позовите человека"


pytestmark = pytest.mark.both_backends


def inbox_status(database: Path, update_id: int) -> str:
    [(status,)] = query(database, "SELECT status FROM updates WHERE update_id = ?", update_id)
    return str(status)


async def exactly_one_answer(fake_telegram: FakeTelegramServer) -> str:
    """The answer, checked to be the only one: a later /help in the same chat is handled
    after it, so when the /help reply is there, any duplicate would be there too."""
    fake_telegram.enqueue_update(message_update(CHAT, text="/help"))
    messages = await fake_telegram.wait_for_messages(CHAT, 2)
    assert len(messages) == 2, [m.text for m in messages]
    assert "/new" in messages[1].plain_text
    return messages[0].plain_text


async def test_killed_mid_turn_answers_once_after_restart(
    start_bot: StartBot,
    fake_telegram: FakeTelegramServer,
    fake_openai: FakeOpenAIServer,
    database_path: Path,
) -> None:
    release = fake_openai.hold_answers()
    bot = await start_bot()
    update_id = fake_telegram.enqueue_update(message_update(CHAT, text=QUESTION))
    await fake_openai.wait_for_requests(1)
    assert inbox_status(database_path, update_id) == "pending"
    await bot.kill()
    assert fake_telegram.messages_to(CHAT) == []

    fake_openai.handler = default_script
    release.set()
    await start_bot()
    answer = await exactly_one_answer(fake_telegram)
    assert "8041" in answer
    assert inbox_status(database_path, update_id) == "delivered"


async def test_killed_after_the_reply_was_stored_sends_it_without_the_model(
    start_bot: StartBot,
    fake_telegram: FakeTelegramServer,
    fake_openai: FakeOpenAIServer,
    database_path: Path,
) -> None:
    hold = fake_telegram.hold_send_message(CHAT)
    bot = await start_bot()
    update_id = fake_telegram.enqueue_update(message_update(CHAT, text=QUESTION))
    await asyncio.wait_for(hold.arrived.wait(), OUTER_LIMIT_S)
    assert inbox_status(database_path, update_id) == "answered"
    model_calls = len(fake_openai.requests)
    await bot.kill()
    await fake_telegram.wait_until(lambda: hold.idle)  # the dead request was dropped
    hold.release()
    assert fake_telegram.messages_to(CHAT) == []

    await start_bot()
    answer = await exactly_one_answer(fake_telegram)
    assert "8041" in answer
    assert len(fake_openai.requests) == model_calls  # the model was not asked again
    assert inbox_status(database_path, update_id) == "delivered"


async def test_turn_cut_by_the_shutdown_grace_is_answered_after_restart(
    start_bot: StartBot,
    fake_telegram: FakeTelegramServer,
    fake_openai: FakeOpenAIServer,
    database_path: Path,
) -> None:
    release = fake_openai.hold_answers()
    bot = await start_bot(SHUTDOWN_GRACE_S="0.5")
    update_id = fake_telegram.enqueue_update(message_update(CHAT, text=QUESTION))
    await fake_openai.wait_for_requests(1)
    assert await bot.terminate() == 0  # the model never answered: the grace ran out
    await bot.wait_for_line("left for the next start")
    assert inbox_status(database_path, update_id) == "pending"
    assert fake_telegram.messages_to(CHAT) == []

    fake_openai.handler = default_script
    release.set()
    await start_bot()
    answer = await exactly_one_answer(fake_telegram)
    assert "8041" in answer


def _misses_and_hands_over() -> Script:
    """A model that looks up a missing order and asks for a person in one step."""
    return tool_step(
        lambda text: (
            [
                fake_call("get_order_status", {"order_id": "9999"}),
                fake_call("request_human", {"reason": "заказ не найден"}),
            ]
            if "9999" in text
            else []
        ),
        lambda _body: "Заказ 9999 не найден. Зову сотрудника.",
    )


def _has_share_button(markup: dict[str, object] | None) -> bool:
    rows = (markup or {}).get("keyboard") or []
    assert isinstance(rows, list)
    return any(isinstance(b, dict) and b.get("request_contact") for row in rows for b in row)


async def test_killed_between_storing_the_turn_and_its_reply_sends_the_same_text_and_button(
    start_bot: StartBot,
    fake_telegram: FakeTelegramServer,
    fake_openai: FakeOpenAIServer,
    database_path: Path,
) -> None:
    """The turn (an order lookup that missed, a person called) is stored; its reply
    waits on the customer's new handoff topic — the one Bot API call between the two
    writes — and the bot dies there. After the restart the stored turn is replayed (not
    taken for a message to the operators, although a handoff is open now), and the
    customer gets exactly what a customer without the crash got: the same words, the
    handoff notice and the share-my-phone button; the operators get one brief."""
    fake_openai.handler = _misses_and_hands_over()
    fake_telegram.add_forum(OPERATORS)
    env = {"OPERATOR_CHAT_ID": str(OPERATORS)}
    bot = await start_bot(**env)
    fake_telegram.enqueue_update(message_update(CALM_CHAT, text=MISSED_AND_PERSON))
    [calm] = await fake_telegram.wait_for_messages(CALM_CHAT, 1, within=WAIT_S)
    assert _has_share_button(calm.reply_markup)  # the lookup missed, no verified phone
    assert HANDOFF_WORDS["ru"].handoff_started in seen_text(calm.text)

    hold = fake_telegram.hold_calls("createForumTopic")
    update_id = fake_telegram.enqueue_update(message_update(CHAT, text=MISSED_AND_PERSON))
    await asyncio.wait_for(hold.arrived.wait(), WAIT_S)
    stored = query(
        database_path, "SELECT status FROM turns WHERE request_key = ?", f"telegram:{update_id}"
    )
    assert stored == [("answered",)]
    assert inbox_status(database_path, update_id) == "pending"  # no reply stored yet
    asked = [b for b in fake_openai.chat_requests if last_user_text(b) == MISSED_AND_PERSON]
    await bot.kill()
    await fake_telegram.wait_until(lambda: hold.idle)
    hold.release()
    assert fake_telegram.messages_to(CHAT) == []

    await start_bot(**env)
    replayed = await exactly_one_answer(fake_telegram)
    again = [b for b in fake_openai.chat_requests if last_user_text(b) == MISSED_AND_PERSON]
    assert len(again) == len(asked)  # the stored turn was replayed, the model not asked
    [message] = fake_telegram.messages_to(CHAT)[:1]
    assert replayed == calm.plain_text
    assert (message.text, message.reply_markup) == (calm.text, calm.reply_markup)
    topics = [key for key in fake_telegram.topics if key[0] == OPERATORS]
    assert len(topics) == 2  # the calm customer's and this one's
    await fake_telegram.wait_until(
        lambda: all(fake_telegram.messages_in_topic(*key) for key in topics), within=WAIT_S
    )
    assert [len(fake_telegram.messages_in_topic(*key)) for key in topics] == [1, 1]
