"""Business mode through the real process: the bot answers in the owner's own chats.

The fake Bot API speaks Telegram Business as the Bot API documentation (10.3) describes
it (tests/fakes/telegram_server.py): connections with rights, business messages from the
customer and from the owner, the bot's own sends echoed back as business messages, and
Telegram's refusals (no `can_reply`, outside the 24-hour window).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from tests.e2e.chat_helpers import WAIT_S, StartBot, last_user_text, query, seen_text, wait_for_db
from tests.fakes.openai_server import Body, FakeOpenAIServer, FakeReply, completion, fake_call
from tests.fakes.telegram_server import (
    FakeTelegramServer,
    SentMessage,
    business_message_update,
    callback_update,
    message_update,
)

pytestmark = pytest.mark.both_backends

OWNER, CUSTOMER, STRANGER, OTHER_CUSTOMER = 7501, 7502, 7509, 7503
CONNECTION = "bc-owner-1"
BUSINESS_TYPES = {"business_connection", "business_message", "edited_business_message"}


def answer_model(body: Body) -> FakeReply:
    if not body.get("tools"):
        return completion(text="summary")
    return completion(text=f"Answer to: {last_user_text(body)}")


def asked(openai: FakeOpenAIServer, text: str) -> int:
    return sum(1 for b in openai.chat_requests if b.get("tools") and last_user_text(b) == text)


async def finished(database: Path, update_id: int, reason: str) -> None:
    await wait_for_db(
        database, "SELECT reason FROM updates WHERE update_id = ?", [(reason,)], update_id
    )


async def customer_says(
    telegram: FakeTelegramServer, text: str, *, chat_id: int = CUSTOMER, **kwargs: Any
) -> int:
    return telegram.enqueue_business_message(
        business_message_update(CONNECTION, chat_id, text=text, language_code="en", **kwargs)
    )


async def next_in(telegram: FakeTelegramServer, chat_id: int, before: int) -> SentMessage:
    return (await telegram.wait_for_messages(chat_id, before + 1, within=WAIT_S))[before]


async def connect(
    telegram: FakeTelegramServer, owner: int = OWNER, connection: str = CONNECTION, **rights: Any
) -> int:
    return telegram.enqueue_update(telegram.connect_business(connection, owner, **rights))


async def test_a_customer_in_the_owners_chat_gets_one_answer_as_the_owner(
    start_bot: StartBot,
    fake_telegram: FakeTelegramServer,
    fake_openai: FakeOpenAIServer,
    database_path: Path,
) -> None:
    fake_openai.handler = answer_model
    bot = await start_bot(ADMIN_IDS=str(OWNER), BUSINESS_ENABLED="true")
    # polling asks Telegram for the business update types
    poll = await fake_telegram.wait_for_call("getUpdates", within=WAIT_S)
    assert BUSINESS_TYPES <= set(poll.params["allowed_updates"])

    await connect(fake_telegram)
    notice = await next_in(fake_telegram, OWNER, 0)
    assert "Connected" in seen_text(notice.text) or "Подключено" in seen_text(notice.text)

    update_id = await customer_says(fake_telegram, "Where is my order?")
    answer = await next_in(fake_telegram, CUSTOMER, 0)
    assert answer.params["business_connection_id"] == CONNECTION
    assert seen_text(answer.text) == "Answer to: Where is my order?"
    assert answer.reply_markup is None  # no 👍/👎, no "notify me" in the owner's chat
    await wait_for_db(
        database_path, "SELECT status FROM updates WHERE update_id = ?", [("delivered",)], update_id
    )
    # the bot's own message, echoed by Telegram as a business message, changes nothing
    await wait_for_db(
        database_path,
        "SELECT count(*) FROM updates WHERE reason = 'business_from_bot'",
        [(1,)],
    )
    assert len(fake_telegram.messages_to(CUSTOMER)) == 1
    assert asked(fake_openai, "Where is my order?") == 1
    assert not fake_telegram.drafts  # no draft streaming in business chats
    for call in fake_telegram.calls_of("sendChatAction"):
        assert call.params.get("business_connection_id") == CONNECTION
    # the conversation is its own, apart from the customer's chat with the bot
    [(chat_id,)] = query(database_path, "SELECT DISTINCT chat_id FROM turns")
    assert chat_id < -(2**62)

    # another account connects the bot: one WARNING, then nothing for its customers
    await connect(fake_telegram, owner=STRANGER, connection="bc-stranger")
    await bot.wait_for_line("bc-stranger of account 7509 ignored")
    stranger_update = fake_telegram.enqueue_business_message(
        business_message_update("bc-stranger", OTHER_CUSTOMER, text="Hello?", language_code="en")
    )
    await finished(database_path, stranger_update, "business_not_served")
    assert fake_telegram.messages_to(OTHER_CUSTOMER) == []
    assert fake_telegram.messages_to(STRANGER) == []
    assert asked(fake_openai, "Hello?") == 0

    # the owner's /stats counts the question under the owner's chats
    fake_telegram.enqueue_update(message_update(OWNER, text="/stats", language_code="en"))
    table = await next_in(fake_telegram, OWNER, 1)
    lines = seen_text(table.text).splitlines()
    assert any(line.split() == ["in", "your", "own", "chats", "1"] for line in lines), lines
    assert any(line.split() == ["in", "the", "bot's", "chat", "0"] for line in lines), lines


async def test_the_owners_own_message_silences_the_bot_and_ai_on_gives_it_back(
    start_bot: StartBot,
    fake_telegram: FakeTelegramServer,
    fake_openai: FakeOpenAIServer,
    database_path: Path,
) -> None:
    fake_openai.handler = answer_model
    await start_bot(ADMIN_IDS=str(OWNER), BUSINESS_ENABLED="true", BUSINESS_PAUSE_HOURS="2")
    await connect(fake_telegram)
    await next_in(fake_telegram, OWNER, 0)

    await customer_says(fake_telegram, "Do you ship abroad?")
    await next_in(fake_telegram, CUSTOMER, 0)

    # the owner answers by hand: the bot steps back and tells the owner once
    fake_telegram.enqueue_business_message(
        business_message_update(CONNECTION, CUSTOMER, text="Yes, I'll check", from_id=OWNER)
    )
    paused = await next_in(fake_telegram, OWNER, 1)
    assert "2" in seen_text(paused.text)
    [[give_back]] = paused.reply_markup["inline_keyboard"]  # type: ignore[index]
    second = fake_telegram.enqueue_business_message(
        business_message_update(CONNECTION, CUSTOMER, text="and one more", from_id=OWNER)
    )
    await finished(database_path, second, "business_owner_wrote")

    silenced = await customer_says(fake_telegram, "How much is shipping?")
    await finished(database_path, silenced, "business_paused")
    assert len(fake_telegram.messages_to(CUSTOMER)) == 1
    assert asked(fake_openai, "How much is shipping?") == 0
    assert len(fake_telegram.messages_to(OWNER)) == 2  # one notice per pause

    # /ai on in the owner's chat with the bot gives the chats back
    fake_telegram.enqueue_update(message_update(OWNER, text="/ai on", language_code="en"))
    done = await next_in(fake_telegram, OWNER, 2)
    assert "Done" in seen_text(done.text)
    await customer_says(fake_telegram, "Is it fragile-safe?")
    answer = await next_in(fake_telegram, CUSTOMER, 1)
    assert seen_text(answer.text) == "Answer to: Is it fragile-safe?"

    # the button does the same for one chat
    fake_telegram.enqueue_business_message(
        business_message_update(CONNECTION, CUSTOMER, text="I take it from here", from_id=OWNER)
    )
    again = await next_in(fake_telegram, OWNER, 3)
    [[button]] = again.reply_markup["inline_keyboard"]  # type: ignore[index]
    assert button["callback_data"] == give_back["callback_data"]
    fake_telegram.enqueue_update(
        callback_update(
            OWNER, button["callback_data"], message_id=again.message_id, language_code="en"
        )
    )
    await fake_telegram.wait_for_call(
        "answerCallbackQuery", lambda c: "Done" in str(c.params.get("text")), within=WAIT_S
    )
    await customer_says(fake_telegram, "Thanks!")
    answer = await next_in(fake_telegram, CUSTOMER, 2)
    assert seen_text(answer.text) == "Answer to: Thanks!"


async def test_approval_mode_posts_only_after_the_owners_send(
    start_bot: StartBot,
    fake_telegram: FakeTelegramServer,
    fake_openai: FakeOpenAIServer,
    database_path: Path,
) -> None:
    fake_openai.handler = answer_model
    await start_bot(ADMIN_IDS=str(OWNER), BUSINESS_ENABLED="true", BUSINESS_APPROVAL="true")
    await connect(fake_telegram)
    await next_in(fake_telegram, OWNER, 0)

    async def draft_for(text: str, seen: int) -> dict[str, str]:
        await customer_says(fake_telegram, text)
        card = await next_in(fake_telegram, OWNER, seen)
        assert f"Answer to: {text}" in seen_text(card.text)
        [buttons] = card.reply_markup["inline_keyboard"]  # type: ignore[index]
        return {b["text"]: b["callback_data"] for b in buttons} | {"id": str(card.message_id)}

    def press(card: dict[str, str], button: str) -> None:
        fake_telegram.enqueue_update(
            callback_update(OWNER, card[button], message_id=int(card["id"]), language_code="en")
        )

    first = await draft_for("Can I pay by card?", 1)
    assert fake_telegram.messages_to(CUSTOMER) == []  # nothing before the owner decides
    press(first, "Send")
    posted = await next_in(fake_telegram, CUSTOMER, 0)
    assert seen_text(posted.text) == "Answer to: Can I pay by card?"
    assert posted.params["business_connection_id"] == CONNECTION

    second = await draft_for("Can I pay in cash?", 2)
    press(second, "Discard")
    await fake_telegram.wait_for_call(
        "answerCallbackQuery", lambda c: c.params.get("text") == "Discarded.", within=WAIT_S
    )
    press(second, "Send")  # too late: decided once
    await fake_telegram.wait_for_call(
        "answerCallbackQuery", lambda c: c.params.get("text") == "Already decided.", within=WAIT_S
    )
    assert len(fake_telegram.messages_to(CUSTOMER)) == 1

    third = await draft_for("Do you deliver on Sundays?", 3)
    press(third, "Edit")
    prompt = await next_in(fake_telegram, OWNER, 4)
    assert "next message" in seen_text(prompt.text)
    fake_telegram.enqueue_update(
        message_update(OWNER, text="Yes, <b>on Sundays</b> too", language_code="en")
    )
    rewritten = await next_in(fake_telegram, CUSTOMER, 1)
    assert seen_text(rewritten.text) == "Yes, <b>on Sundays</b> too"
    assert rewritten.params["business_connection_id"] == CONNECTION
    assert asked(fake_openai, "Yes, <b>on Sundays</b> too") == 0  # the owner is not a turn

    # the history keeps what the customer read: the sent draft, no discarded one, the
    # owner's rewrite instead of the bot's draft
    await customer_says(fake_telegram, "Thanks")
    await next_in(fake_telegram, OWNER, 6)
    history = query(database_path, "SELECT role, content FROM messages ORDER BY id")
    assert history[:5] == [
        ("user", "Can I pay by card?"),
        ("assistant", "Answer to: Can I pay by card?"),
        ("user", "Can I pay in cash?"),
        ("user", "Do you deliver on Sundays?"),
        ("assistant", "Yes, <b>on Sundays</b> too"),
    ]


async def test_a_revoked_can_reply_stops_replies_with_one_warning(
    start_bot: StartBot,
    fake_telegram: FakeTelegramServer,
    fake_openai: FakeOpenAIServer,
    database_path: Path,
) -> None:
    fake_openai.handler = answer_model
    bot = await start_bot(ADMIN_IDS=str(OWNER), BUSINESS_ENABLED="true")
    await connect(fake_telegram)
    await next_in(fake_telegram, OWNER, 0)
    await customer_says(fake_telegram, "Hello")
    await next_in(fake_telegram, CUSTOMER, 0)

    await connect(fake_telegram, can_reply=False)
    told = await next_in(fake_telegram, OWNER, 1)
    assert "Telegram" in seen_text(told.text)
    for text in ("Are you there?", "Hello??"):
        update_id = await customer_says(fake_telegram, text)
        await finished(database_path, update_id, "business_cannot_reply")
    assert len(fake_telegram.messages_to(CUSTOMER)) == 1
    assert asked(fake_openai, "Are you there?") == 0
    warnings = [line for line in bot.lines if "took away can_reply" in line]
    assert len(warnings) == 1 and "WARNING" in warnings[0], warnings

    # given back: answers again
    await connect(fake_telegram, can_reply=True)
    await next_in(fake_telegram, OWNER, 2)
    await customer_says(fake_telegram, "Back?")
    answer = await next_in(fake_telegram, CUSTOMER, 1)
    assert seen_text(answer.text) == "Answer to: Back?"


def _asks_for_a_person(body: Body) -> FakeReply:
    """The model calls request_human when the customer asks for a person."""
    messages = body.get("messages") or []
    if body.get("tools") and "person" in last_user_text(body).lower():
        if messages[-1].get("role") != "tool":
            return completion(tool_calls=[fake_call("request_human", {"reason": "wants a human"})])
        return completion(text="Of course.")
    return answer_model(body)


async def test_a_person_asked_for_in_the_owners_chat_is_the_owner_not_the_operators(
    start_bot: StartBot,
    fake_telegram: FakeTelegramServer,
    fake_openai: FakeOpenAIServer,
    database_path: Path,
) -> None:
    operators = -1001600
    fake_openai.handler = _asks_for_a_person
    fake_telegram.add_forum(operators)
    await start_bot(ADMIN_IDS=str(OWNER), BUSINESS_ENABLED="true", OPERATOR_CHAT_ID=str(operators))
    await connect(fake_telegram)
    await next_in(fake_telegram, OWNER, 0)

    await customer_says(fake_telegram, "Can I talk to a person?")
    answer = await next_in(fake_telegram, CUSTOMER, 0)
    assert answer.params["business_connection_id"] == CONNECTION
    assert seen_text(answer.text).startswith("Of course.")
    assert "The owner will answer you here" in seen_text(answer.text)
    assert answer.reply_markup is None  # no "talk to a person" button either
    # the owner is told in their chat with the bot, with the button that gives it back
    told = await next_in(fake_telegram, OWNER, 1)
    assert "asks for a person (wants a human)" in seen_text(told.text)
    [[give_back]] = told.reply_markup["inline_keyboard"]  # type: ignore[index]
    assert give_back["callback_data"].startswith("bzr:")
    # no operators' handoff, no topic
    assert query(database_path, "SELECT count(*) FROM handoffs") == [(0,)]
    assert not fake_telegram.topics

    # the bot is paused there, as when the owner writes
    silenced = await customer_says(fake_telegram, "Hello?")
    await finished(database_path, silenced, "business_paused")
    assert asked(fake_openai, "Hello?") == 0
    assert len(fake_telegram.messages_to(CUSTOMER)) == 1
