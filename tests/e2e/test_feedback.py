"""👍/👎 under AI answers through the real process: `python -m bot` against both fakes.

A customer's answer carries the two buttons (stored with the answer); a 👍 and a later 👎
on the same answer count once, as 👎 — in the database and in the owner's /stats; each
press is acknowledged with answerCallbackQuery (no new message) and the buttons are
edited to mark the choice. A forged press — another chat's answer named in the data, or
data that is not a feedback button's — is refused and changes nothing.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from bot.telegram.handoff_view import HANDOFF_WORDS
from bot.telegram.texts import EN, RU
from tests.e2e.chat_helpers import WAIT_S, StartBot, query, seen_text, wait_for_db
from tests.fakes.openai_server import Body, FakeOpenAIServer, FakeReply, completion
from tests.fakes.telegram_server import (
    FakeTelegramServer,
    SentMessage,
    callback_update,
    message_update,
)

pytestmark = pytest.mark.both_backends

CUSTOMER, OTHER, ADMIN = 7301, 7302, 7309


def answer_model(body: Body) -> FakeReply:
    if not body.get("tools"):
        return completion(text="summary")
    return completion(text="Your order is on its way.")


def buttons(message: SentMessage) -> list[list[dict[str, Any]]]:
    markup = message.reply_markup or {}
    return list(markup.get("inline_keyboard") or [])


async def ask(telegram: FakeTelegramServer, chat_id: int, text: str) -> SentMessage:
    before = len(telegram.messages_to(chat_id))
    telegram.enqueue_update(message_update(chat_id, text=text, language_code="en"))
    return (await telegram.wait_for_messages(chat_id, before + 1, within=WAIT_S))[before]


async def press(
    telegram: FakeTelegramServer, chat_id: int, message_id: int, data: str
) -> dict[str, Any]:
    """Press a button; the acknowledgement (answerCallbackQuery) the bot made for it."""
    update = callback_update(chat_id, data=data, message_id=message_id, language_code="en")
    query_id = update["callback_query"]["id"]
    telegram.enqueue_update(update)
    call = await telegram.wait_for_call(
        "answerCallbackQuery",
        lambda c: c.params.get("callback_query_id") == query_id,
        within=WAIT_S,
    )
    return call.params


async def test_thumbs_up_then_down_counts_once_as_down_and_a_forged_press_is_refused(
    start_bot: StartBot,
    fake_telegram: FakeTelegramServer,
    fake_openai: FakeOpenAIServer,
    database_path: Path,
) -> None:
    fake_openai.handler = answer_model
    await start_bot(ADMIN_IDS=str(ADMIN))

    answer = await ask(fake_telegram, CUSTOMER, "Where is my order 8041?")
    [[up, down]] = buttons(answer)
    assert (up["text"], down["text"]) == ("👍", "👎")
    [(turn_id,)] = query(database_path, "SELECT id FROM turns WHERE chat_id = ?", CUSTOMER)
    assert up["callback_data"] == f"fb:{turn_id}:u" and down["callback_data"] == f"fb:{turn_id}:d"
    # the buttons are part of the stored answer, so a redelivery sends the same ones
    [(stored,)] = query(
        database_path, "SELECT reply FROM updates WHERE chat_id = ? AND reply IS NOT NULL", CUSTOMER
    )
    assert f"fb:{turn_id}:u" in stored

    messages_before = len(fake_telegram.messages_to(CUSTOMER))
    ack = await press(fake_telegram, CUSTOMER, answer.message_id, up["callback_data"])
    assert ack["text"] == EN.feedback_thanks
    await fake_telegram.wait_until(
        lambda: buttons(fake_telegram.messages_to(CUSTOMER)[-1])[0][0]["text"] != "👍"
    )
    [[marked_up, _]] = buttons(fake_telegram.messages_to(CUSTOMER)[-1])
    assert marked_up["text"] == "✓ 👍"

    ack = await press(fake_telegram, CUSTOMER, answer.message_id, down["callback_data"])
    assert ack["text"] == EN.feedback_thanks
    await wait_for_db(
        database_path,
        "SELECT rating FROM answer_feedback WHERE turn_id = ?",
        [(-1,)],
        turn_id,
    )
    assert query(database_path, "SELECT count(*) FROM answer_feedback") == [(1,)]
    # acknowledged, never answered with a new message
    assert len(fake_telegram.messages_to(CUSTOMER)) == messages_before

    # another chat presses a button naming the customer's answer: refused, nothing changes
    other = await ask(fake_telegram, OTHER, "Hello")
    ack = await press(fake_telegram, OTHER, other.message_id, f"fb:{turn_id}:u")
    assert ack["text"] == EN.feedback_refused
    for forged in (
        f"fb:{turn_id}:x",
        f"fb:{turn_id.upper()}:u",
        "fb:../../etc:u",
        "fb:" + "a" * 60,
    ):
        ack = await press(fake_telegram, OTHER, other.message_id, forged)
        assert ack["text"] == EN.feedback_refused
    assert query(database_path, "SELECT turn_id, chat_id, rating FROM answer_feedback") == [
        (turn_id, CUSTOMER, -1)
    ]
    assert fake_telegram.calls_of("editMessageReplyMarkup")[-1].params["chat_id"] == CUSTOMER

    # the owner's view counts the answer once, as not helpful
    before = len(fake_telegram.messages_to(ADMIN))
    fake_telegram.enqueue_update(message_update(ADMIN, text="/stats", language_code="ru"))
    [table, *_] = (await fake_telegram.wait_for_messages(ADMIN, before + 1, within=WAIT_S))[before:]
    lines = seen_text(table.text).splitlines()
    assert any(line.split() == ["полезно", "0"] for line in lines), lines
    assert any(line.split() == ["не", "помогло", "1"] for line in lines), lines
    assert RU.feedback_thanks not in seen_text(table.text)


async def test_feedback_enabled_false_sends_answers_without_buttons(
    start_bot: StartBot,
    fake_telegram: FakeTelegramServer,
    fake_openai: FakeOpenAIServer,
) -> None:
    fake_openai.handler = answer_model
    await start_bot(FEEDBACK_ENABLED="false")
    answer = await ask(fake_telegram, CUSTOMER, "Where is my order 8041?")
    assert seen_text(answer.text) == "Your order is on its way."
    assert answer.reply_markup is None


async def test_with_handoff_configured_a_thumbs_down_offers_a_person_who_then_gets_the_chat(
    start_bot: StartBot,
    fake_telegram: FakeTelegramServer,
    fake_openai: FakeOpenAIServer,
) -> None:
    operators = -1001500
    fake_openai.handler = answer_model
    fake_telegram.add_forum(operators)
    await start_bot(OPERATOR_CHAT_ID=str(operators))

    answer = await ask(fake_telegram, CUSTOMER, "Where is my order 8041?")
    [[_, down]] = buttons(answer)
    await press(fake_telegram, CUSTOMER, answer.message_id, down["callback_data"])
    await fake_telegram.wait_until(
        lambda: len(buttons(fake_telegram.messages_to(CUSTOMER)[-1])) == 2
    )
    [_, [person]] = buttons(fake_telegram.messages_to(CUSTOMER)[-1])
    assert person == {"text": HANDOFF_WORDS["en"].operator_button, "callback_data": "handoff:start"}

    # the customer presses it: the operators get a topic, the customer the notice
    before = len(fake_telegram.messages_to(CUSTOMER))
    fake_telegram.enqueue_update(
        callback_update(CUSTOMER, "handoff:start", message_id=answer.message_id, language_code="en")
    )
    [notice] = (await fake_telegram.wait_for_messages(CUSTOMER, before + 1, within=WAIT_S))[before:]
    assert seen_text(notice.text) == HANDOFF_WORDS["en"].handoff_started
    await fake_telegram.wait_until(lambda: any(key[0] == operators for key in fake_telegram.topics))
