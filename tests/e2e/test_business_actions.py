"""Actions with confirmation in the owner's own chats (Business mode), through the real
process, the fake Bot API (Bot API 10.3's business shapes, tests/fakes/telegram_server.py)
and the fake shop API (SHOP_BACKEND=http, so a ✅ carries the action out).

The customer's ✅ under a card posted as the owner takes the bot chat's path: it executes
once, a second press changes nothing, ✖ declines, someone else's press (the owner's, who
sees the card in their own chat) is not theirs. In approval mode the proposed action goes
to the owner with the draft: Send posts the card with the answer, the owner's rewrite is
followed by the card, Discard withdraws it so it can never run.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from bot.telegram.action_words import ACTION_WORDS
from tests.e2e.chat_helpers import (
    WAIT_S,
    StartBot,
    note_of_press,
    query,
    seen_text,
    tool_step,
    wait_for_db,
)
from tests.e2e.test_actions import ASK_CONFIRM, _calls, _model, card_buttons
from tests.fakes.openai_server import FakeOpenAIServer
from tests.fakes.shop_api import TOKEN, FakeShopApi, order
from tests.fakes.telegram_server import (
    FakeTelegramServer,
    SentMessage,
    business_callback_update,
    business_message_update,
    callback_update,
    message_update,
)

pytestmark = pytest.mark.both_backends

OWNER, CUSTOMER = 7701, 7702
CONNECTION = "bc-shop-1"
FIRST, SECOND = "4201", "4202"


async def start(
    start_bot: StartBot,
    telegram: FakeTelegramServer,
    openai: FakeOpenAIServer,
    shop: FakeShopApi,
    **extra: str,
) -> None:
    shop.put(order(FIRST, "processing", telegram_id=CUSTOMER))
    shop.put(order(SECOND, "processing", telegram_id=CUSTOMER))
    openai.handler = tool_step(_calls, _model)
    await start_bot(
        ADMIN_IDS=str(OWNER),
        BUSINESS_ENABLED="true",
        ACTIONS_ENABLED="cancel_order,request_return",
        SHOP_BACKEND="http",
        SHOP_API_URL=shop.base_url,
        SHOP_API_TOKEN=TOKEN,
        **extra,
    )
    telegram.enqueue_update(telegram.connect_business(CONNECTION, OWNER))
    await telegram.wait_for_messages(OWNER, 1, within=WAIT_S)  # "Connected"


def customer_says(telegram: FakeTelegramServer, text: str) -> int:
    return telegram.enqueue_business_message(
        business_message_update(CONNECTION, CUSTOMER, text=text)
    )


async def next_in(telegram: FakeTelegramServer, chat_id: int, before: int) -> SentMessage:
    return (await telegram.wait_for_messages(chat_id, before + 1, within=WAIT_S))[before]


async def press(
    telegram: FakeTelegramServer, card: SentMessage, index: int, *, user: int = CUSTOMER
) -> str:
    """A press of ✅ (0) or ✖ (1) under a card in the business chat; the button's note."""
    data = card_buttons(card)[index]["callback_data"]
    update = business_callback_update(
        CONNECTION, CUSTOMER, data, message_id=card.message_id, owner_id=OWNER, user_id=user
    )
    return await note_of_press(telegram, update)


def actions(database: Path) -> list[tuple[Any, ...]]:
    return query(
        database, "SELECT order_number, status, reason FROM pending_actions ORDER BY created_at"
    )


async def test_a_card_in_the_owners_chat_executes_once_and_declines(
    start_bot: StartBot,
    fake_telegram: FakeTelegramServer,
    fake_openai: FakeOpenAIServer,
    fake_shop_api: FakeShopApi,
    database_path: Path,
) -> None:
    await start(start_bot, fake_telegram, fake_openai, fake_shop_api)

    customer_says(fake_telegram, f"Отмените заказ {FIRST}")
    card = await next_in(fake_telegram, CUSTOMER, 0)
    assert card.params["business_connection_id"] == CONNECTION
    assert ASK_CONFIRM in card.plain_text and f"Отменить заказ {FIRST}?" in card.plain_text
    assert [b["text"] for b in card_buttons(card)] == [
        ACTION_WORDS["ru"].action_confirm_button,
        ACTION_WORDS["ru"].action_decline_button,
    ]

    # the owner sees the card in their own chat too: it is not theirs to press
    assert await press(fake_telegram, card, 0, user=OWNER) == ACTION_WORDS["ru"].action_not_yours
    assert fake_shop_api.cancellations == []

    # the customer's ✅: carried out once, told through the connection, buttons gone
    assert await press(fake_telegram, card, 0) == ACTION_WORDS["ru"].action_working
    result = await next_in(fake_telegram, CUSTOMER, 1)
    assert seen_text(result.text) == f"Заказ {FIRST} отменён."
    assert result.params["business_connection_id"] == CONNECTION
    assert fake_shop_api.cancellations == [FIRST]
    edits = [
        c
        for c in fake_telegram.calls_of("editMessageReplyMarkup")
        if c.params.get("message_id") == card.message_id
    ]
    assert edits and edits[0].params.get("business_connection_id") == CONNECTION
    await fake_telegram.wait_until(lambda: not card_buttons(fake_telegram.messages_to(CUSTOMER)[0]))

    # a second press of the same card changes nothing
    assert await press(fake_telegram, card, 0) == ACTION_WORDS["ru"].action_already
    assert fake_shop_api.cancellations == [FIRST]

    # ✖ on another card declines: nothing changes in the shop
    customer_says(fake_telegram, f"Отмените заказ {SECOND}")
    other = await next_in(fake_telegram, CUSTOMER, 2)
    await press(fake_telegram, other, 1)
    declined = await next_in(fake_telegram, CUSTOMER, 3)
    assert seen_text(declined.text) == ACTION_WORDS["ru"].action_declined
    assert declined.params["business_connection_id"] == CONNECTION
    assert fake_shop_api.cancellations == [FIRST]
    assert actions(database_path) == [(FIRST, "done", None), (SECOND, "declined", None)]
    # the actions are the owner's chat's conversation's, apart from any bot chat
    [(chat_id,)] = query(database_path, "SELECT DISTINCT chat_id FROM pending_actions")
    assert chat_id < -(2**62)


async def test_in_approval_mode_the_card_goes_with_the_draft_and_discard_withdraws_it(
    start_bot: StartBot,
    fake_telegram: FakeTelegramServer,
    fake_openai: FakeOpenAIServer,
    fake_shop_api: FakeShopApi,
    database_path: Path,
) -> None:
    await start(start_bot, fake_telegram, fake_openai, fake_shop_api, BUSINESS_APPROVAL="true")

    async def draft_for(text: str, seen: int) -> tuple[SentMessage, dict[str, str]]:
        customer_says(fake_telegram, text)
        draft = await next_in(fake_telegram, OWNER, seen)
        [buttons] = draft.reply_markup["inline_keyboard"]  # type: ignore[index]
        return draft, {b["text"]: b["callback_data"] for b in buttons}

    def owner_presses(draft: SentMessage, data: str) -> None:
        fake_telegram.enqueue_update(callback_update(OWNER, data, message_id=draft.message_id))

    # the owner's draft shows the proposed action; the customer sees nothing yet
    draft, buttons = await draft_for(f"Отмените заказ {FIRST}", 1)
    assert f"Отменить заказ {FIRST}?" in draft.plain_text
    assert "карточка действия" in draft.plain_text  # what Send / Discard do with it
    assert list(buttons) == ["Отправить", "Изменить", "Удалить"]
    assert fake_telegram.messages_to(CUSTOMER) == []
    assert actions(database_path) == [(FIRST, "pending", None)]

    # Send: the answer and the card, as the owner; the customer's ✅ runs it once
    owner_presses(draft, buttons["Отправить"])
    card = await next_in(fake_telegram, CUSTOMER, 0)
    assert card.params["business_connection_id"] == CONNECTION
    assert ASK_CONFIRM in card.plain_text and f"Отменить заказ {FIRST}?" in card.plain_text
    assert await press(fake_telegram, card, 0) == ACTION_WORDS["ru"].action_working
    result = await next_in(fake_telegram, CUSTOMER, 1)
    assert seen_text(result.text) == f"Заказ {FIRST} отменён."
    assert await press(fake_telegram, card, 0) == ACTION_WORDS["ru"].action_already
    assert fake_shop_api.cancellations == [FIRST]

    # Discard: the card is withdrawn; a forged press of its buttons runs nothing
    draft, buttons = await draft_for(f"Отмените заказ {SECOND}", 2)
    owner_presses(draft, buttons["Удалить"])
    await wait_for_db(
        database_path,
        "SELECT status, reason FROM pending_actions WHERE order_number = ?",
        [("expired", "discarded")],
        SECOND,
    )
    [operation_id] = [
        r[0]
        for r in query(
            database_path,
            "SELECT operation_id FROM pending_actions WHERE order_number = ?",
            SECOND,
        )
    ]
    forged = SentMessage(
        card.message_id,
        CUSTOMER,
        card.text,
        card.parse_mode,
        {
            **card.params,
            "reply_markup": {
                "inline_keyboard": [[{"text": "✅", "callback_data": f"act:{operation_id}:y"}]]
            },
        },
        card.kind,
    )
    await press(fake_telegram, forged, 0)
    expired = await next_in(fake_telegram, CUSTOMER, 2)
    assert seen_text(expired.text) == ACTION_WORDS["ru"].action_expired
    assert fake_shop_api.cancellations == [FIRST]

    # Edit: the owner's words, then the card as its own message; ✖ declines it
    draft, buttons = await draft_for(f"Отмените заказ {SECOND}", 3)
    owner_presses(draft, buttons["Изменить"])
    await next_in(fake_telegram, OWNER, 4)  # "send the corrected text"
    fake_telegram.enqueue_update(
        message_update(OWNER, text="Могу отменить, подтвердите ниже", language_code="ru")
    )
    words = await next_in(fake_telegram, CUSTOMER, 3)
    assert seen_text(words.text) == "Могу отменить, подтвердите ниже"
    assert card_buttons(words) == []
    rewritten_card = await next_in(fake_telegram, CUSTOMER, 4)
    assert f"Отменить заказ {SECOND}" in seen_text(rewritten_card.text)
    assert rewritten_card.params["business_connection_id"] == CONNECTION
    await press(fake_telegram, rewritten_card, 1)
    declined = await next_in(fake_telegram, CUSTOMER, 5)
    assert seen_text(declined.text) == ACTION_WORDS["ru"].action_declined
    assert fake_shop_api.cancellations == [FIRST]
    assert [r[:2] for r in actions(database_path)] == [
        (FIRST, "done"),
        (SECOND, "expired"),
        (SECOND, "declined"),
    ]


async def test_an_outcome_the_background_sweep_finds_reaches_the_customer_as_the_owner(
    start_bot: StartBot,
    fake_telegram: FakeTelegramServer,
    fake_openai: FakeOpenAIServer,
    fake_shop_api: FakeShopApi,
    database_path: Path,
) -> None:
    """The shop stops answering once the card is shown: the press says it is being
    checked; the sweeper's asks end the action needing a person's check, and that message
    — stored in the durable outbox with the outcome — goes to the customer through the
    owner's connection, once."""
    await start(
        start_bot,
        fake_telegram,
        fake_openai,
        fake_shop_api,
        SHOP_TIMEOUT_S="0.5",
        ACTION_RETRY_ATTEMPTS="2",
        ACTION_RETRY_FIRST_S="0.5",
    )
    customer_says(fake_telegram, f"Отмените заказ {FIRST}")
    card = await next_in(fake_telegram, CUSTOMER, 0)
    fake_shop_api.actions_hang = True
    await press(fake_telegram, card, 0)
    checking = await next_in(fake_telegram, CUSTOMER, 1)
    assert seen_text(checking.text) == ACTION_WORDS["ru"].action_checking
    assert checking.params["business_connection_id"] == CONNECTION

    told = await next_in(fake_telegram, CUSTOMER, 2)
    assert seen_text(told.text) == ACTION_WORDS["ru"].action_needs_attention
    assert told.params["business_connection_id"] == CONNECTION
    await wait_for_db(
        database_path,
        "SELECT chat_id, business_connection_id, status FROM outgoing_messages"
        " WHERE message_key LIKE '%:customer'",
        [(CUSTOMER, CONNECTION, "delivered")],
    )
    # nothing more: a question answered now is the next message
    customer_says(fake_telegram, "Спасибо")
    after = await next_in(fake_telegram, CUSTOMER, 3)
    assert "Результат" in seen_text(after.text)
    assert fake_shop_api.cancellations == []
