"""Phone-verified ownership through the real process: `python -m bot` against both fakes.

A shop imports an order with the owner's phone (`owner_phone`, any usual spelling). Until
the customer shares their OWN contact with the "share my phone number" button, a lookup
of that order and of a number that does not exist get the same reply, and both offer the
button. After sharing, the order is theirs. Someone else's contact card is refused and
never stored. The phone number never reaches the model, the logs or /stats.
"""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import pytest

from bot.telegram.texts import RU
from tests.e2e.chat_helpers import (
    WAIT_S,
    StartBot,
    import_shop,
    query,
    results_for,
    seen_text,
    tool_messages,
    tool_step,
    wait_for_db,
)
from tests.e2e.harness import BotProcess
from tests.fakes.openai_server import FakeOpenAIServer, fake_call
from tests.fakes.telegram_server import (
    FakeTelegramServer,
    SentMessage,
    contact_update,
    message_update,
)

pytestmark = pytest.mark.both_backends

CUSTOMER, STRANGER = 7201, 7202
OWNED, MISSING = "6101", "6102"
PICKUP = "Пункт выдачи Садовая, 3"
PHONE_AS_SHOP_WROTE_IT = "8 (912) 345-67-89"
PHONE_FROM_TELEGRAM = "79123456789"  # Telegram sends contacts without the "+"
E164 = "+79123456789"
PHONE_DIGITS = re.compile(r"912\D{0,3}345\D{0,3}67\D{0,3}89")


def without_order_id(results: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """The tool results with the order number taken out, so two lookups compare."""
    return [
        {**r, "data": {k: v for k, v in r["data"].items() if k != "order_id"}}
        if isinstance(r.get("data"), dict)
        else r
        for r in results
    ]


def share_button(message: SentMessage) -> dict[str, Any] | None:
    """The request_contact button of the message's reply keyboard, if it has one."""
    markup = message.reply_markup or {}
    for row in markup.get("keyboard") or []:
        for button in row:
            if isinstance(button, dict) and button.get("request_contact"):
                return button
    return None


async def send(telegram: FakeTelegramServer, chat_id: int, update: dict[str, Any]) -> SentMessage:
    before = len(telegram.messages_to(chat_id))
    telegram.enqueue_update(update)
    messages = await telegram.wait_for_messages(chat_id, before + 1, within=WAIT_S)
    return messages[before]


async def setup(
    start_bot: StartBot,
    env: dict[str, str],
    tmp_path: Path,
    openai: FakeOpenAIServer,
) -> BotProcess:
    await import_shop(
        env,
        tmp_path,
        {
            "orders": [
                {
                    "order_id": OWNED,
                    "status": "ready_for_pickup",
                    "owner_phone": PHONE_AS_SHOP_WROTE_IT,
                    "pickup_point": PICKUP,
                }
            ]
        },
    )
    # the model looks up every 4-digit number, then repeats what the tool said (without
    # the number itself, so the replies to two numbers can be compared)
    openai.handler = tool_step(
        lambda text: [
            fake_call("get_order_status", {"order_id": n}) for n in re.findall(r"\d{4}", text)
        ],
        lambda body: (
            "Результат: " + json.dumps(without_order_id(tool_messages(body)), ensure_ascii=False)
        ),
    )
    return await start_bot()


async def test_sharing_their_own_contact_shows_the_customer_their_phone_owned_order(
    start_bot: StartBot,
    bot_base_env: dict[str, str],
    tmp_path: Path,
    fake_telegram: FakeTelegramServer,
    fake_openai: FakeOpenAIServer,
    database_path: Path,
) -> None:
    bot = await setup(start_bot, bot_base_env, tmp_path, fake_openai)
    assert query(database_path, "SELECT owner_phone FROM orders WHERE order_id = ?", OWNED) == [
        (E164,)
    ]

    welcome = await send(fake_telegram, CUSTOMER, message_update(CUSTOMER, text="/start"))
    assert share_button(welcome) == {"text": RU.share_phone_button, "request_contact": True}

    # before sharing: an existing phone-owned order and a missing number look the same
    owned_q, missing_q = f"Где мой заказ {OWNED}?", f"Где мой заказ {MISSING}?"
    owned = await send(fake_telegram, CUSTOMER, message_update(CUSTOMER, text=owned_q))
    missing = await send(fake_telegram, CUSTOMER, message_update(CUSTOMER, text=missing_q))
    assert owned.text == missing.text
    assert owned.reply_markup == missing.reply_markup
    assert share_button(owned) is not None
    assert RU.phone_hint.strip("_") in seen_text(owned.text)  # the bot's own line, every miss
    assert PICKUP not in seen_text(owned.text)
    assert results_for(fake_openai, owned_q)[0]["data"]["found"] is False

    # the customer shares their own contact (the button): stored, keyboard removed
    saved = await send(
        fake_telegram,
        CUSTOMER,
        contact_update(CUSTOMER, phone_number=PHONE_FROM_TELEGRAM, contact_user_id=CUSTOMER),
    )
    assert seen_text(saved.text) == RU.phone_saved
    assert saved.reply_markup == {"remove_keyboard": True}
    await wait_for_db(
        database_path, "SELECT count(*) FROM updates WHERE payload LIKE '%9123456789%'", [(0,)]
    )
    assert query(
        database_path, "SELECT phone FROM verified_phones WHERE user_id = ?", CUSTOMER
    ) == [(E164,)]

    # now the order is theirs; the tool result never carries the phone
    again_q = f"А теперь где заказ {OWNED}?"
    found = await send(fake_telegram, CUSTOMER, message_update(CUSTOMER, text=again_q))
    results = results_for(fake_openai, again_q)
    assert results[0]["data"]["found"] is True
    assert results[0]["data"]["pickup_point"] == PICKUP
    assert not PHONE_DIGITS.search(json.dumps(results))
    assert PICKUP in seen_text(found.text)
    assert share_button(found) is None
    assert RU.phone_hint.strip("_") not in seen_text(found.text)
    # a miss by a customer WITH a verified phone offers nothing more
    other = await send(fake_telegram, CUSTOMER, message_update(CUSTOMER, text="Заказ 6109?"))
    assert share_button(other) is None  # only the answer's 👍/👎 buttons
    assert set(other.reply_markup or {}) <= {"inline_keyboard"}

    # the model never saw the number; nor did the logs
    for body in fake_openai.chat_requests:
        assert not PHONE_DIGITS.search(json.dumps(body, ensure_ascii=False))
    assert not PHONE_DIGITS.search(bot.output)
    # /forget_phone deletes it, and the order is hidden again
    forgot = await send(fake_telegram, CUSTOMER, message_update(CUSTOMER, text="/forget_phone"))
    assert seen_text(forgot.text) == RU.phone_forgotten
    assert query(database_path, "SELECT count(*) FROM verified_phones") == [(0,)]
    last_q = f"Ещё раз: заказ {OWNED}?"
    hidden = await send(fake_telegram, CUSTOMER, message_update(CUSTOMER, text=last_q))
    assert results_for(fake_openai, last_q)[0]["data"]["found"] is False
    assert share_button(hidden) is not None


async def test_someone_elses_contact_card_is_refused_and_never_stored(
    start_bot: StartBot,
    bot_base_env: dict[str, str],
    tmp_path: Path,
    fake_telegram: FakeTelegramServer,
    fake_openai: FakeOpenAIServer,
    database_path: Path,
) -> None:
    await setup(start_bot, bot_base_env, tmp_path, fake_openai)
    offer = await send(fake_telegram, STRANGER, message_update(STRANGER, text="/phone"))
    assert seen_text(offer.text) == RU.phone_offer
    assert share_button(offer) is not None

    # the owner's card, forwarded by someone else (its user_id is the owner's, not theirs)
    forwarded = await send(
        fake_telegram,
        STRANGER,
        contact_update(STRANGER, phone_number=PHONE_FROM_TELEGRAM, contact_user_id=CUSTOMER),
    )
    # a card from the address book of someone without Telegram (no user_id)
    no_user = await send(
        fake_telegram,
        STRANGER,
        contact_update(STRANGER, phone_number=PHONE_FROM_TELEGRAM, contact_user_id=None),
    )
    for reply in (forwarded, no_user):
        assert seen_text(reply.text) == RU.contact_not_own
        assert share_button(reply) is not None  # the right way is offered again
    assert query(database_path, "SELECT count(*) FROM verified_phones") == [(0,)]
    # nor is the card kept in the inbox copy of the update once it was answered
    await wait_for_db(
        database_path,
        "SELECT count(*) FROM updates WHERE payload LIKE '%9123456789%'",
        [(0,)],
    )

    question = f"Где заказ {OWNED}?"
    hidden = await send(fake_telegram, STRANGER, message_update(STRANGER, text=question))
    assert results_for(fake_openai, question)[0]["data"]["found"] is False
    assert PICKUP not in seen_text(hidden.text)
