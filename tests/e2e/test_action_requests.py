"""On the local (imported) backend a confirmed action is a request to the shop's people,
through the real process: the customer's ✅ tells them a person will confirm and sends the
admins a request card; ✅ Done there tells the customer once and changes the order in the
bot's data; ✖ Refuse and the admin's next message tell the customer one polite refusal
with that reason and change nothing; a press by anyone else changes nothing."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from bot.telegram.action_words import ACTION_STAFF_WORDS, ACTION_WORDS
from tests.e2e.chat_helpers import (
    WAIT_S,
    StartBot,
    note_of_press,
    query,
    seen_text,
    wait_for_db,
)
from tests.e2e.test_actions import (
    CUSTOMER,
    MINE,
    MINE_TOO,
    STRANGER,
    cancellations,
    press,
    say,
    settled,
    setup,
    status_of,
)
from tests.fakes.openai_server import FakeOpenAIServer
from tests.fakes.telegram_server import (
    FakeTelegramServer,
    SentMessage,
    callback_update,
    message_update,
)

pytestmark = pytest.mark.both_backends

ADMIN, OTHER_ADMIN = 7690, 7691
# the staff read the shop's language (DEFAULT_LANGUAGE, Russian unless set)
STAFF_RU = ACTION_STAFF_WORDS["ru"]


def request_buttons(message: SentMessage) -> list[dict[str, Any]]:
    rows = (message.reply_markup or {}).get("inline_keyboard") or []
    return [b for row in rows for b in row if str(b.get("callback_data", "")).startswith("req:")]


async def staff_press(
    telegram: FakeTelegramServer, card: SentMessage, index: int, *, user: int, chat: int
) -> str:
    """Press ✅ Done (0) or ✖ Refuse (1) on a request card; the note on the button."""
    data = request_buttons(card)[index]["callback_data"]
    update = callback_update(chat, data=data, message_id=card.message_id, user_id=user)
    return await note_of_press(telegram, update)


async def requested(telegram: FakeTelegramServer, order: str) -> tuple[SentMessage, SentMessage]:
    """The customer asks to cancel `order` and presses ✅: their answer, the admin's card."""
    before, staff = len(telegram.messages_to(CUSTOMER)), len(telegram.messages_to(ADMIN))
    card = await say(telegram, f"Отмените заказ {order}")
    await press(telegram, card)
    answer = (await telegram.wait_for_messages(CUSTOMER, before + 2, within=WAIT_S))[before + 1]
    cards = await telegram.wait_for_messages(ADMIN, staff + 1, within=WAIT_S)
    return answer, cards[staff]


async def test_a_request_is_done_or_refused_by_a_person_and_the_customer_hears_once(
    start_bot: StartBot,
    bot_base_env: dict[str, str],
    tmp_path: Path,
    fake_telegram: FakeTelegramServer,
    fake_openai: FakeOpenAIServer,
    database_path: Path,
) -> None:
    await setup(
        start_bot,
        bot_base_env,
        tmp_path,
        fake_openai,
        ADMIN_IDS=f"{ADMIN},{OTHER_ADMIN}",
    )
    answer, card = await requested(fake_telegram, MINE)
    assert seen_text(answer.text) == ACTION_WORDS["ru"].action_requested  # never "cancelled" yet
    assert f"cancel_order, заказ {MINE}" in card.plain_text
    assert f"Отменить заказ {MINE}?" in card.plain_text  # the action's details
    assert [b["text"] for b in request_buttons(card)] == [
        STAFF_RU.staff_done_button,
        STAFF_RU.staff_refuse_button,
    ]
    [other_card] = await fake_telegram.wait_for_messages(OTHER_ADMIN, 1, within=WAIT_S)
    assert status_of(database_path, MINE) == "processing"  # only a person changes it

    # anyone else's press (a forged one from the customer's own chat) changes nothing
    assert await staff_press(fake_telegram, card, 0, user=STRANGER, chat=STRANGER) == (
        ACTION_WORDS["ru"].action_not_yours
    )
    assert await staff_press(fake_telegram, card, 0, user=CUSTOMER, chat=CUSTOMER) == (
        ACTION_WORDS["ru"].action_not_yours
    )
    assert status_of(database_path, MINE) == "processing"

    # /stats lists the open request
    before = len(fake_telegram.messages_to(ADMIN))
    fake_telegram.enqueue_update(message_update(ADMIN, text="/stats"))
    [*_, table] = await fake_telegram.wait_for_messages(ADMIN, before + 1, within=WAIT_S)
    assert f"запрос ждёт ответа сотрудника: заказ {MINE}" in table.plain_text, table.plain_text

    # two admins press ✅ Done: one "cancelled" to the customer, the new state
    await staff_press(fake_telegram, card, 0, user=ADMIN, chat=ADMIN)
    await staff_press(fake_telegram, other_card, 0, user=OTHER_ADMIN, chat=OTHER_ADMIN)
    await fake_telegram.wait_for_messages(CUSTOMER, 3, within=WAIT_S)
    messages = await settled(fake_telegram, 3)  # and nothing more
    assert seen_text(messages[2].text) == f"Заказ {MINE} отменён."
    assert status_of(database_path, MINE) == "cancelled"
    assert cancellations(database_path) == 1
    await wait_for_db(
        database_path,
        "SELECT status FROM action_requests WHERE order_number = ?",
        [("done",)],
        MINE,
    )

    # ✖ Refuse: the admin is asked the reason; their next message is it
    _, card = await requested(fake_telegram, MINE_TOO)
    before = len(fake_telegram.messages_to(ADMIN))
    await staff_press(fake_telegram, card, 1, user=ADMIN, chat=ADMIN)
    [*_, asked] = await fake_telegram.wait_for_messages(ADMIN, before + 1, within=WAIT_S)
    assert asked.plain_text == STAFF_RU.for_order("staff_ask_reason", MINE_TOO)
    fake_telegram.enqueue_update(message_update(ADMIN, text="Заказ уже передан в доставку"))
    await fake_telegram.wait_for_messages(ADMIN, before + 2, within=WAIT_S)
    await fake_telegram.wait_for_messages(CUSTOMER, 7, within=WAIT_S)
    messages = await settled(fake_telegram, 7)
    refusal = seen_text(messages[6].text)
    assert (
        refusal.startswith(ACTION_WORDS["ru"].action_refused)
        and "уже передан в доставку" in refusal
    )
    assert status_of(database_path, MINE_TOO) == "processing"
    # a Done after the refusal changes nothing and tells the customer nothing more
    assert await staff_press(fake_telegram, card, 0, user=OTHER_ADMIN, chat=OTHER_ADMIN)
    assert status_of(database_path, MINE_TOO) == "processing"
    await settled(fake_telegram, 8)
    assert query(database_path, "SELECT status FROM action_requests ORDER BY created_at") == [
        ("done",),
        ("refused",),
    ]


async def test_a_request_nobody_answers_is_reminded_of_once(
    start_bot: StartBot,
    bot_base_env: dict[str, str],
    tmp_path: Path,
    fake_telegram: FakeTelegramServer,
    fake_openai: FakeOpenAIServer,
    database_path: Path,
) -> None:
    await setup(
        start_bot,
        bot_base_env,
        tmp_path,
        fake_openai,
        ADMIN_IDS=str(ADMIN),
        ACTION_REQUEST_ESCALATE_S="1",
        ACTION_RETRY_FIRST_S="0.5",
    )
    await requested(fake_telegram, MINE)

    def reminders() -> list[SentMessage]:
        return [m for m in fake_telegram.messages_to(ADMIN) if "Напоминание" in m.plain_text]

    await fake_telegram.wait_until(lambda: len(reminders()) >= 1, within=WAIT_S)
    assert f"заказу {MINE}" in reminders()[0].plain_text
    await wait_for_db(
        database_path,
        "SELECT count(*) FROM action_requests WHERE escalated_at IS NOT NULL",
        [(1,)],
    )
    # a second request, reminded of in its turn: by then the first was not reminded again
    await requested(fake_telegram, MINE_TOO)
    await fake_telegram.wait_until(lambda: len(reminders()) >= 2, within=WAIT_S)
    assert [MINE in m.plain_text for m in reminders()] == [True, False]
