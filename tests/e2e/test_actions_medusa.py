"""A customer cancels a live Medusa order through the real bot process.

SHOP_BACKEND=medusa, ACTIONS_ENABLED=cancel_order: Anna (her verified phone on her Medusa
customer) asks to cancel her order; the model proposes, she gets the card, presses ✅;
the order is cancelled in the engine (read back through its Admin API), she is told, and
her next question "is it cancelled?" is answered from the new state: the model sees the
order tool's result with the cancelled status. A second ✅ does nothing more.
"""

from __future__ import annotations

import re

import pytest

from bot.telegram.action_words import ACTION_WORDS
from tests.e2e.chat_helpers import WAIT_S, StartBot, note_of_press, results_for, tool_step
from tests.e2e.test_actions import ASK_CONFIRM, _model, card_buttons
from tests.e2e.test_live_shop_medusa import ANNA_PHONE, say
from tests.fakes.openai_server import Body, FakeOpenAIServer, fake_call
from tests.fakes.telegram_server import (
    FakeTelegramServer,
    SentMessage,
    callback_update,
    contact_update,
    message_update,
)
from tests.shop_engine.medusa_engine import MedusaEngine

pytestmark = [pytest.mark.medusa, pytest.mark.timeout(900)]

ANNA = 7411


def _calls(text: str) -> list[Body]:
    """Digits after '#': cancel when asked to cancel, else look the order up."""
    numbers = re.findall(r"#(\d+)", text)
    if "отмените" in text.lower():
        return [fake_call("propose_cancel_order", {"order_id": n}) for n in numbers]
    return [fake_call("get_order_status", {"order_id": n}) for n in numbers]


async def press(telegram: FakeTelegramServer, card: SentMessage) -> str:
    """Anna presses ✅ on the card; the note on the button (answerCallbackQuery)."""
    data = card_buttons(card)[0]["callback_data"]
    update = callback_update(ANNA, data=data, message_id=card.message_id, user_id=ANNA)
    return await note_of_press(telegram, update)


async def test_cancel_a_live_medusa_order_confirmed_told_and_the_next_answer_knows(
    start_bot: StartBot,
    fake_telegram: FakeTelegramServer,
    fake_openai: FakeOpenAIServer,
    medusa_engine: MedusaEngine,
) -> None:
    number = medusa_engine.place_order("anna")
    fake_openai.handler = tool_step(_calls, _model)
    bot = await start_bot(
        SHOP_BACKEND="medusa",
        SHOP_API_URL=medusa_engine.url,
        SHOP_API_TOKEN=medusa_engine.api_key,
        SHOP_CACHE_TTL_S="300",  # the action's outcome must not be answered from a stale cache
        SHOP_TIMEOUT_S="4",  # the most the settings allow (inside the tool's 5 s)
        ACTIONS_ENABLED="cancel_order",
    )
    await bot.wait_for_line("shop data: medusa backend at")
    await say(
        fake_telegram, ANNA, contact_update(ANNA, phone_number=ANNA_PHONE, contact_user_id=ANNA)
    )
    before = await say(fake_telegram, ANNA, message_update(ANNA, text=f"Где заказ #{number}?"))
    assert "processing" in before  # cached now, for 5 minutes

    cards_before = len(fake_telegram.messages_to(ANNA))
    fake_telegram.enqueue_update(message_update(ANNA, text=f"Отмените заказ #{number}"))
    card = (await fake_telegram.wait_for_messages(ANNA, cards_before + 1, within=WAIT_S))[-1]
    assert ASK_CONFIRM in card.plain_text
    # the exact effect, from the engine's order: its items and total
    assert f"Отменить заказ {number}: USB-C cable ×1" in card.plain_text
    assert len(card_buttons(card)) == 2
    order_id = medusa_engine.order_id(number)
    status = medusa_engine.admin("GET", f"/admin/orders/{order_id}?fields=id,status")
    assert status["order"]["status"] != "canceled"  # nothing happened before the press

    assert await press(fake_telegram, card) == ACTION_WORDS["ru"].action_working
    result = (await fake_telegram.wait_for_messages(ANNA, cards_before + 2, within=WAIT_S))[-1]
    assert result.plain_text == f"Заказ {number} отменён."
    assert (
        await press(fake_telegram, card) == ACTION_WORDS["ru"].action_already
    )  # a second ✅: nothing more
    after = medusa_engine.admin("GET", f"/admin/orders/{order_id}?fields=id,status")
    assert after["order"]["status"] == "canceled"  # in the engine itself

    question = f"Заказ #{number} отменён?"
    answer = await say(fake_telegram, ANNA, message_update(ANNA, text=question))
    [looked_up] = results_for(fake_openai, question)
    assert looked_up["data"]["status"] == "cancelled"
    assert "cancelled" in answer
    assert len(fake_telegram.messages_to(ANNA)) == cards_before + 3  # one result, no repeat
    assert medusa_engine.api_key not in bot.output and "Traceback" not in bot.output


NEW_ADDRESS = {
    "line1": "Lenina 5",
    "line2": "apt. 12",
    "city": "Kazan",
    "postal_code": "420111",
    "country_code": "RU",
}


def _address_calls(text: str) -> list[Body]:
    """Digits after '#': propose the new address (parsed, as a model would)."""
    return [
        fake_call("propose_change_address", {"order_id": n, "address": NEW_ADDRESS})
        for n in re.findall(r"#(\d+)", text)
    ]


async def test_a_new_delivery_address_confirmed_reaches_the_engine_and_a_shipped_order_gets_no_card(
    start_bot: StartBot,
    fake_telegram: FakeTelegramServer,
    fake_openai: FakeOpenAIServer,
    medusa_engine: MedusaEngine,
) -> None:
    number = medusa_engine.place_order("anna")
    shipped = medusa_engine.orders["in_transit"]
    fake_openai.handler = tool_step(_address_calls, _model)
    bot = await start_bot(
        SHOP_BACKEND="medusa",
        SHOP_API_URL=medusa_engine.url,
        SHOP_API_TOKEN=medusa_engine.api_key,
        SHOP_TIMEOUT_S="4",
        ACTIONS_ENABLED="change_address",
    )
    await bot.wait_for_line("shop data: medusa backend at")
    await say(
        fake_telegram, ANNA, contact_update(ANNA, phone_number=ANNA_PHONE, contact_user_id=ANNA)
    )
    seen = len(fake_telegram.messages_to(ANNA))
    fake_telegram.enqueue_update(
        message_update(ANNA, text=f"Доставьте заказ #{number} на Ленина 5, кв. 12, Казань")
    )
    card = (await fake_telegram.wait_for_messages(ANNA, seen + 1, within=WAIT_S))[-1]
    where = "Lenina 5, apt. 12, 420111 Kazan, RU"
    assert f"Изменить адрес доставки заказа {number} на: {where}?" in card.plain_text
    assert len(card_buttons(card)) == 2
    order_id = medusa_engine.order_id(number)
    fields = "id,shipping_address.*"
    before = medusa_engine.admin("GET", f"/admin/orders/{order_id}?fields={fields}")
    assert before["order"]["shipping_address"]["address_1"] == "Tverskaya 1"

    assert await press(fake_telegram, card) == ACTION_WORDS["ru"].action_working
    result = (await fake_telegram.wait_for_messages(ANNA, seen + 2, within=WAIT_S))[-1]
    assert result.plain_text == f"Адрес доставки заказа {number} изменён: {where}."
    after = medusa_engine.admin("GET", f"/admin/orders/{order_id}?fields={fields}")
    address = after["order"]["shipping_address"]  # read back through the engine's API
    assert (address["address_1"], address["address_2"], address["city"]) == (
        "Lenina 5",
        "apt. 12",
        "Kazan",
    )
    assert await press(fake_telegram, card) == ACTION_WORDS["ru"].action_already

    fake_telegram.enqueue_update(
        message_update(ANNA, text=f"Доставьте заказ #{shipped} на Ленина 5")
    )
    answer = (await fake_telegram.wait_for_messages(ANNA, seen + 3, within=WAIT_S))[-1]
    assert card_buttons(answer) == []  # already shipped: no card
    assert "Lenina" not in bot.output and "420111" not in bot.output  # never in the log
