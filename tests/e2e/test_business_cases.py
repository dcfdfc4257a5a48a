"""Business mode's edge cases through the real process and the fake Bot API (Bot API
10.3's business shapes, tests/fakes/telegram_server.py): a message past Telegram's
24-hour reply window, an edited and a deleted customer's message, the owner writing while
a turn runs, the phone hint in place of the contact button, and imported data's staff
requests answered to a customer in the owner's chat.
"""

from __future__ import annotations

import asyncio
import time
from pathlib import Path
from typing import Any

import pytest

from bot.telegram.action_words import ACTION_WORDS
from bot.telegram.texts import RU
from tests.e2e.chat_helpers import WAIT_S, StartBot, last_user_text, query, seen_text, wait_for_db
from tests.e2e.harness import BotProcess
from tests.e2e.test_actions import CUSTOMER, MINE, MINE_TOO, card_buttons, setup
from tests.fakes.openai_server import Body, FakeOpenAIServer, FakeReply, completion
from tests.fakes.telegram_server import (
    BOT_USER,
    FakeTelegramServer,
    SentMessage,
    business_callback_update,
    business_message_update,
    callback_update,
    deleted_business_messages_update,
    edited_business_message_update,
    message_update,
)

pytestmark = pytest.mark.both_backends

OWNER = 7801
CONNECTION = "bc-cases-1"


class Model:
    """Answers "Answer to: <question>"; a question containing "slow" waits for `release`."""

    def __init__(self) -> None:
        self.release = asyncio.Event()

    def __call__(self, body: Body) -> FakeReply:
        if not body.get("tools"):
            return completion(text="summary")
        question = last_user_text(body)
        hold = self.release if "slow" in question else None
        return completion(text=f"Answer to: {question}", hold=hold)


def asked(openai: FakeOpenAIServer, text: str) -> int:
    return sum(1 for b in openai.chat_requests if b.get("tools") and last_user_text(b) == text)


async def start(
    start_bot: StartBot, telegram: FakeTelegramServer, openai: FakeOpenAIServer, **extra: str
) -> tuple[BotProcess, Model]:
    model = Model()
    openai.handler = model
    bot = await start_bot(ADMIN_IDS=str(OWNER), BUSINESS_ENABLED="true", **extra)
    await connect(telegram)
    return bot, model


async def connect(telegram: FakeTelegramServer) -> None:
    telegram.enqueue_update(telegram.connect_business(CONNECTION, OWNER))
    await telegram.wait_for_messages(OWNER, 1, within=WAIT_S)  # "Connected"


def says(telegram: FakeTelegramServer, text: str, **kwargs: Any) -> int:
    return telegram.enqueue_business_message(
        business_message_update(CONNECTION, CUSTOMER, text=text, language_code="en", **kwargs)
    )


async def stored(database: Path, update_id: int) -> None:
    await wait_for_db(
        database, "SELECT count(*) FROM updates WHERE update_id = ?", [(1,)], update_id
    )


async def next_in(telegram: FakeTelegramServer, chat_id: int, before: int) -> SentMessage:
    return (await telegram.wait_for_messages(chat_id, before + 1, within=WAIT_S))[before]


async def finished(database: Path, update_id: int, reason: str) -> None:
    await wait_for_db(
        database, "SELECT reason FROM updates WHERE update_id = ?", [(reason,)], update_id
    )


def history(database: Path) -> list[tuple[str, str]]:
    return [
        (str(role), str(content))
        for role, content in query(database, "SELECT role, content FROM messages ORDER BY id")
    ]


def sent_to_customer(telegram: FakeTelegramServer) -> list[str]:
    """Every attempt to post or show typing in the customer's chat, refused or not."""
    return [
        c.method
        for c in telegram.calls
        if c.method in ("sendMessage", "sendChatAction") and c.params.get("chat_id") == CUSTOMER
    ]


async def test_a_message_past_the_24_hour_window_is_not_answered_with_one_info_line(
    start_bot: StartBot,
    fake_telegram: FakeTelegramServer,
    fake_openai: FakeOpenAIServer,
    database_path: Path,
) -> None:
    bot, _ = await start(start_bot, fake_telegram, fake_openai)
    old = says(fake_telegram, "Still there?", date=int(time.time()) - 25 * 3600)
    await finished(database_path, old, "business_too_old")
    [status] = query(database_path, "SELECT status FROM updates WHERE update_id = ?", old)
    assert status[0] != "pending"  # done with, never retried
    assert sent_to_customer(fake_telegram) == []  # no reply attempted, not even typing
    assert asked(fake_openai, "Still there?") == 0
    await bot.wait_for_line("24-hour reply window")  # the log is read after the update row
    lines = [line for line in bot.lines if "24-hour reply window" in line]
    assert len(lines) == 1 and "INFO" in lines[0], lines
    assert "Still there?" not in bot.output and str(CUSTOMER) not in lines[0]

    # a fresh message is answered as usual
    says(fake_telegram, "Hello")
    answer = await next_in(fake_telegram, CUSTOMER, 0)
    assert seen_text(answer.text) == "Answer to: Hello"


async def test_an_edit_is_not_answered_again_and_a_deleted_answered_message_keeps_its_answer(
    start_bot: StartBot,
    fake_telegram: FakeTelegramServer,
    fake_openai: FakeOpenAIServer,
    database_path: Path,
) -> None:
    await start(start_bot, fake_telegram, fake_openai)
    first = says(fake_telegram, "Do you ship to Riga?")
    await next_in(fake_telegram, CUSTOMER, 0)
    message_id = first  # business_message_update: the message id is the update id

    edited = fake_telegram.enqueue_update(
        edited_business_message_update(
            CONNECTION, CUSTOMER, text="Do you ship to Tallinn?", message_id=message_id
        )
    )
    await finished(database_path, edited, "business_edited")
    assert asked(fake_openai, "Do you ship to Tallinn?") == 0
    assert len(fake_telegram.messages_to(CUSTOMER)) == 1

    deleted = fake_telegram.enqueue_update(
        deleted_business_messages_update(CONNECTION, CUSTOMER, [message_id])
    )
    await finished(database_path, deleted, "business_deleted")
    assert history(database_path) == [
        ("user", "Do you ship to Riga?"),
        ("assistant", "Answer to: Do you ship to Riga?"),
    ]


async def test_a_message_deleted_while_its_turn_runs_is_not_answered_and_leaves_the_memory(
    start_bot: StartBot,
    fake_telegram: FakeTelegramServer,
    fake_openai: FakeOpenAIServer,
    database_path: Path,
) -> None:
    _, model = await start(start_bot, fake_telegram, fake_openai)
    says(fake_telegram, "Hi")
    await next_in(fake_telegram, CUSTOMER, 0)

    running = says(fake_telegram, "slow: cancel everything")
    await fake_telegram.wait_until(lambda: asked(fake_openai, "slow: cancel everything") == 1)
    deletion = fake_telegram.enqueue_update(
        deleted_business_messages_update(CONNECTION, CUSTOMER, [running])
    )
    await stored(database_path, deletion)
    model.release.set()
    await finished(database_path, running, "business_deleted_before_answer")
    assert len(fake_telegram.messages_to(CUSTOMER)) == 1
    # the memory keeps what the customer said and read; the records keep the turn
    assert history(database_path) == [("user", "Hi"), ("assistant", "Answer to: Hi")]
    assert query(database_path, "SELECT count(*) FROM turns") == [(2,)]

    says(fake_telegram, "Hello again")
    answer = await next_in(fake_telegram, CUSTOMER, 1)
    assert seen_text(answer.text) == "Answer to: Hello again"


async def test_a_deleted_message_drops_its_waiting_draft(
    start_bot: StartBot,
    fake_telegram: FakeTelegramServer,
    fake_openai: FakeOpenAIServer,
    database_path: Path,
) -> None:
    await start(start_bot, fake_telegram, fake_openai, BUSINESS_APPROVAL="true")
    question = says(fake_telegram, "Can I pay later?")
    draft = await next_in(fake_telegram, OWNER, 1)
    [buttons] = draft.reply_markup["inline_keyboard"]  # type: ignore[index]
    send = next(b["callback_data"] for b in buttons if b["text"] == "Send")

    deleted = fake_telegram.enqueue_update(
        deleted_business_messages_update(CONNECTION, CUSTOMER, [question])
    )
    told = await next_in(fake_telegram, OWNER, 2)
    assert "deleted" in seen_text(told.text) or "удалил" in seen_text(told.text)
    await wait_for_db(
        database_path, "SELECT status FROM updates WHERE update_id = ?", [("delivered",)], deleted
    )
    assert query(database_path, "SELECT status FROM business_drafts") == [("discarded",)]
    assert history(database_path) == []  # question and draft both left the memory

    fake_telegram.enqueue_update(
        callback_update(OWNER, send, message_id=draft.message_id, language_code="en")
    )
    await fake_telegram.wait_for_call(
        "answerCallbackQuery", lambda c: c.params.get("text") == "Already decided.", within=WAIT_S
    )
    assert fake_telegram.messages_to(CUSTOMER) == []


async def test_the_owner_writing_while_a_turn_runs_is_never_answered_over(
    start_bot: StartBot,
    fake_telegram: FakeTelegramServer,
    fake_openai: FakeOpenAIServer,
    database_path: Path,
) -> None:
    bot, model = await start(start_bot, fake_telegram, fake_openai)
    running = says(fake_telegram, "slow: which size fits me?")
    await fake_telegram.wait_until(lambda: asked(fake_openai, "slow: which size fits me?") == 1)
    owners = fake_telegram.enqueue_business_message(
        business_message_update(CONNECTION, CUSTOMER, text="Let me help you", from_id=OWNER)
    )
    await stored(database_path, owners)
    model.release.set()
    await finished(database_path, running, "business_owner_took_over")
    notice = await next_in(fake_telegram, OWNER, 1)  # the owner's pause, told once
    [[give_back]] = notice.reply_markup["inline_keyboard"]  # type: ignore[index]
    assert give_back["callback_data"] == f"bzr:{CUSTOMER}"
    assert fake_telegram.messages_to(CUSTOMER) == []
    await bot.wait_for_line("the owner wrote during the turn; not sent")
    # the customer's question stays in the memory; the answer they never read does not
    assert history(database_path) == [("user", "slow: which size fits me?")]


async def test_the_phone_hint_replaces_the_contact_button_in_the_owners_chats(
    start_bot: StartBot,
    bot_base_env: dict[str, str],
    tmp_path: Path,
    fake_telegram: FakeTelegramServer,
    fake_openai: FakeOpenAIServer,
) -> None:
    await setup(
        start_bot,
        bot_base_env,
        tmp_path,
        fake_openai,
        ADMIN_IDS=str(OWNER),
        BUSINESS_ENABLED="true",
    )
    await connect(fake_telegram)
    fake_telegram.enqueue_business_message(
        business_message_update(CONNECTION, CUSTOMER, text="Где мой заказ 9999?")
    )
    answer = await next_in(fake_telegram, CUSTOMER, 0)
    assert answer.params["business_connection_id"] == CONNECTION
    text = seen_text(answer.text)
    assert f"@{BOT_USER['username']}" in text and "/phone" in text
    assert RU.phone_hint.strip("_") not in text  # the bot chat's words point at a button
    assert answer.reply_markup is None  # no contact button: Telegram has none there


async def test_imported_data_a_request_answered_by_staff_reaches_the_customer_as_the_owner(
    start_bot: StartBot,
    bot_base_env: dict[str, str],
    tmp_path: Path,
    fake_telegram: FakeTelegramServer,
    fake_openai: FakeOpenAIServer,
    database_path: Path,
) -> None:
    staff = 7899
    await setup(
        start_bot,
        bot_base_env,
        tmp_path,
        fake_openai,
        ADMIN_IDS=f"{OWNER},{staff}",
        BUSINESS_OWNER_IDS=str(OWNER),
        BUSINESS_ENABLED="true",
    )
    await connect(fake_telegram)

    async def requested(order: str, seen: int) -> SentMessage:
        fake_telegram.enqueue_business_message(
            business_message_update(CONNECTION, CUSTOMER, text=f"Отмените заказ {order}")
        )
        card = await next_in(fake_telegram, CUSTOMER, seen)
        data = card_buttons(card)[0]["callback_data"]
        fake_telegram.enqueue_update(
            business_callback_update(
                CONNECTION, CUSTOMER, data, message_id=card.message_id, owner_id=OWNER
            )
        )
        told = await next_in(fake_telegram, CUSTOMER, seen + 1)
        assert seen_text(told.text) == ACTION_WORDS["ru"].action_requested  # a person confirms
        assert told.params["business_connection_id"] == CONNECTION

        def request_card() -> SentMessage | None:
            return next(
                (m for m in fake_telegram.messages_to(staff) if f"заказ {order} —" in m.plain_text),
                None,
            )

        await fake_telegram.wait_until(lambda: request_card() is not None, within=WAIT_S)
        found = request_card()
        assert found is not None
        return found

    def staff_presses(card: SentMessage, suffix: str) -> None:
        [data] = [
            str(b["callback_data"])
            for row in (card.reply_markup or {})["inline_keyboard"]
            for b in row
            if str(b["callback_data"]).endswith(suffix)
        ]
        fake_telegram.enqueue_update(
            callback_update(staff, data, message_id=card.message_id, user_id=staff)
        )

    # ✅ Done: the customer hears it in the owner's chat, as the owner
    card = await requested(MINE, 0)
    staff_presses(card, ":d")
    done = await next_in(fake_telegram, CUSTOMER, 2)
    assert seen_text(done.text) == f"Заказ {MINE} отменён."
    assert done.params["business_connection_id"] == CONNECTION

    # ✖ Refuse and the reason: the polite refusal, there too
    card = await requested(MINE_TOO, 3)
    staff_presses(card, ":r")
    await fake_telegram.wait_until(
        lambda: any("причину" in m.plain_text for m in fake_telegram.messages_to(staff)),
        within=WAIT_S,
    )
    fake_telegram.enqueue_update(message_update(staff, text="Заказ уже в пути"))
    refused = await next_in(fake_telegram, CUSTOMER, 5)
    assert seen_text(refused.text).startswith(ACTION_WORDS["ru"].action_refused)
    assert "уже в пути" in seen_text(refused.text)
    assert refused.params["business_connection_id"] == CONNECTION
    assert query(database_path, "SELECT status FROM action_requests ORDER BY created_at") == [
        ("done",),
        ("refused",),
    ]
