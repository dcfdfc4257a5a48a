"""Actions with confirmation through the real process, on the local backend.

The model proposes (`propose_cancel_order`, `propose_request_return`), the application
checks and stores the action pending, the customer gets a card with the exact effect and
✅/✖; a ✅ cancels the order in the shop's table once, the customer is told, and the next
question is answered from the new state with the outcome in the history. Presses twice,
by someone else, after expiry or after the order shipped never act twice; a SIGKILL
between the press being stored and the shop's call, and between the call and the result
being stored, still ends with one cancellation and one result message.
"""

from __future__ import annotations

import asyncio
import json
import re
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest

from bot.telegram.action_words import ACTION_WORDS
from tests.e2e.chat_helpers import (
    WAIT_S,
    StartBot,
    import_shop,
    last_user_text,
    note_of_press,
    query,
    results_for,
    seen_text,
    tool_step,
    wait_for_db,
)
from tests.e2e.harness import BotProcess
from tests.fakes.openai_server import Body, FakeOpenAIServer, fake_call
from tests.fakes.shop_api import TOKEN, FakeShopApi, order
from tests.fakes.telegram_server import (
    FakeTelegramServer,
    SentMessage,
    callback_update,
    message_update,
)

pytestmark = pytest.mark.both_backends

CUSTOMER, STRANGER = 7601, 7602
MINE, MINE_TOO, THEIRS, DELIVERED_LONG_AGO = "4101", "4102", "4103", "4104"
STAFF = 7699  # the shop's person who answers requests (imported data: ADMIN_IDS)
ACTIONS = {"ACTIONS_ENABLED": "cancel_order,request_return", "ADMIN_IDS": str(STAFF)}
ASK_CONFIRM = "Проверьте, пожалуйста, карточку ниже и нажмите кнопку."


def _model(body: Body) -> str:
    """The final words: what the tools said, so a test can read it."""
    results = [m["content"] for m in body["messages"] if m.get("role") == "tool"]
    if results and json.loads(results[-1]).get("data", {}).get("proposed"):
        return ASK_CONFIRM
    return "Результат: " + " | ".join(results)


def _calls(text: str) -> list[Body]:
    numbers = re.findall(r"\d{4}", text)
    if "отмен" in text.lower() and "?" not in text:
        return [fake_call("propose_cancel_order", {"order_id": n}) for n in numbers]
    if "верн" in text.lower():
        return [
            fake_call(
                "propose_request_return",
                {
                    "order_id": n,
                    "items": [{"name": "Наушники", "quantity": 1}],
                    "reason": "SECRET-REASON шумят",
                },
            )
            for n in numbers
        ]
    return [fake_call("get_order_status", {"order_id": n}) for n in numbers]


async def setup(
    start_bot: StartBot,
    env: dict[str, str],
    tmp_path: Path,
    openai: FakeOpenAIServer,
    **extra: str,
) -> BotProcess:
    long_ago = (datetime.now(UTC) - timedelta(days=30)).isoformat(timespec="minutes")
    await import_shop(
        env,
        tmp_path,
        {
            "orders": [
                {"order_id": MINE, "status": "processing", "owner_telegram_id": CUSTOMER},
                {"order_id": MINE_TOO, "status": "processing", "owner_telegram_id": CUSTOMER},
                {"order_id": THEIRS, "status": "processing", "owner_telegram_id": STRANGER},
                {
                    "order_id": DELIVERED_LONG_AGO,
                    "status": "delivered",
                    "owner_telegram_id": CUSTOMER,
                    "updated_at": long_ago,
                },
            ],
            "return_policies": [{"product": "Наушники", "return_days": 7, "conditions": "-"}],
        },
    )
    openai.handler = tool_step(_calls, _model)
    return await start_bot(**{**ACTIONS, **extra})


async def say(telegram: FakeTelegramServer, text: str, chat: int = CUSTOMER) -> SentMessage:
    before = len(telegram.messages_to(chat))
    telegram.enqueue_update(message_update(chat, text=text))
    return (await telegram.wait_for_messages(chat, before + 1, within=WAIT_S))[before]


def card_buttons(message: SentMessage) -> list[dict[str, Any]]:
    rows = (message.reply_markup or {}).get("inline_keyboard") or []
    return [b for row in rows for b in row if str(b.get("callback_data", "")).startswith("act:")]


def press_update(card: SentMessage, index: int, *, user: int = CUSTOMER) -> dict[str, Any]:
    data = card_buttons(card)[index]["callback_data"]
    return callback_update(CUSTOMER, data=data, message_id=card.message_id, user_id=user)


async def press(
    telegram: FakeTelegramServer, card: SentMessage, index: int = 0, *, user: int = CUSTOMER
) -> str:
    """Press ✅ (0) or ✖ (1); the note on the button (answerCallbackQuery)."""
    update = press_update(card, index, user=user)
    return await note_of_press(telegram, update)


async def settled(telegram: FakeTelegramServer, expected: int) -> list[SentMessage]:
    """The customer's messages once a /help sent now is answered (so nothing more is due)."""
    telegram.enqueue_update(message_update(CUSTOMER, text="/help"))
    messages = await telegram.wait_for_messages(CUSTOMER, expected + 1, within=WAIT_S)
    assert "/new" in messages[-1].plain_text, [m.plain_text for m in messages]
    assert len(messages) == expected + 1, [m.plain_text for m in messages]
    return messages[:-1]


async def staff_done(
    telegram: FakeTelegramServer, order: str, *, chat: int = STAFF, user: int = STAFF
) -> None:
    """Imported data: the shop's person presses ✅ Done on the request card for `order`."""
    telegram.enqueue_update(await staff_done_update(telegram, order, chat=chat, user=user))


async def staff_done_update(
    telegram: FakeTelegramServer, order: str, *, chat: int = STAFF, user: int = STAFF
) -> dict[str, Any]:
    """The press of ✅ Done on the request card for `order`, once the card arrived."""

    def card() -> SentMessage | None:
        return next(
            (
                m
                for m in telegram.messages_to(chat)
                if f"заказ {order} —" in m.plain_text and m.reply_markup
            ),
            None,
        )

    await telegram.wait_until(lambda: card() is not None, within=WAIT_S)
    found = card()
    assert found is not None and found.reply_markup is not None
    [data] = [
        str(b["callback_data"])
        for row in found.reply_markup["inline_keyboard"]
        for b in row
        if str(b["callback_data"]).startswith("req:") and str(b["callback_data"]).endswith(":d")
    ]
    return callback_update(chat, data=data, message_id=found.message_id, user_id=user)


def status_of(database: Path, order: str) -> str:
    return str(query(database, "SELECT status FROM orders WHERE order_id = ?", order)[0][0])


def cancellations(database: Path) -> int:
    return int(query(database, "SELECT count(*) FROM order_cancellations")[0][0])


async def test_propose_confirm_cancelled_told_and_the_next_answer_knows(
    start_bot: StartBot,
    bot_base_env: dict[str, str],
    tmp_path: Path,
    fake_telegram: FakeTelegramServer,
    fake_openai: FakeOpenAIServer,
    database_path: Path,
) -> None:
    bot = await setup(start_bot, bot_base_env, tmp_path, fake_openai)
    card = await say(fake_telegram, f"Отмените заказ {MINE}")
    assert ASK_CONFIRM in card.plain_text
    assert f"Отменить заказ {MINE}?" in card.plain_text  # the exact effect
    assert [b["text"] for b in card_buttons(card)] == [
        ACTION_WORDS["ru"].action_confirm_button,
        ACTION_WORDS["ru"].action_decline_button,
    ]
    assert status_of(database_path, MINE) == "processing"  # nothing happened yet
    assert query(database_path, "SELECT status FROM pending_actions") == [("pending",)]

    assert await press(fake_telegram, card) == ACTION_WORDS["ru"].action_working
    [_, requested] = await fake_telegram.wait_for_messages(CUSTOMER, 2, within=WAIT_S)
    assert (
        seen_text(requested.text) == ACTION_WORDS["ru"].action_requested
    )  # imported data: a person confirms
    assert status_of(database_path, MINE) == "processing"
    await staff_done(fake_telegram, MINE)
    [*_, result] = await fake_telegram.wait_for_messages(CUSTOMER, 3, within=WAIT_S)
    assert seen_text(result.text) == f"Заказ {MINE} отменён."
    assert status_of(database_path, MINE) == "cancelled"
    await fake_telegram.wait_until(lambda: not card_buttons(fake_telegram.messages_to(CUSTOMER)[0]))

    question = f"Заказ {MINE} отменён?"
    answer = await say(fake_telegram, question)
    [looked_up] = results_for(fake_openai, question)
    assert looked_up["data"]["status"] == "cancelled"
    assert "cancelled" in answer.plain_text
    asked = [b for b in fake_openai.chat_requests if question in json.dumps(b, ensure_ascii=False)]
    history = json.dumps(asked[0]["messages"], ensure_ascii=False)
    assert f"Заказ {MINE} отменён." in history  # the outcome is in the conversation
    instruction = asked[0]["messages"][0]["content"]
    assert "propose_* tool" in instruction and "only read data" not in instruction
    assert await settled(fake_telegram, 4)
    assert cancellations(database_path) == 1
    assert "SECRET-REASON" not in bot.output


async def test_presses_twice_by_another_after_expiry_or_after_shipping_act_at_most_once(
    start_bot: StartBot,
    bot_base_env: dict[str, str],
    tmp_path: Path,
    fake_telegram: FakeTelegramServer,
    fake_openai: FakeOpenAIServer,
    database_path: Path,
) -> None:
    await setup(start_bot, bot_base_env, tmp_path, fake_openai)
    card = await say(fake_telegram, f"Отмените заказ {MINE}")
    # someone else presses first: refused, nothing changes
    assert await press(fake_telegram, card, user=STRANGER) == ACTION_WORDS["ru"].action_not_yours
    assert query(database_path, "SELECT status FROM pending_actions") == [("pending",)]
    # ✅ twice
    assert await press(fake_telegram, card) == ACTION_WORDS["ru"].action_working
    assert (
        await press(fake_telegram, card) == ACTION_WORDS["ru"].action_working
    )  # with the staff already
    await staff_done(fake_telegram, MINE)
    await wait_for_db(database_path, "SELECT status FROM pending_actions", [("done",)])
    await fake_telegram.wait_for_messages(CUSTOMER, 3, within=WAIT_S)  # requested, the result

    # after expiry (moved into the past here rather than waited for)
    expired = await say(fake_telegram, f"Отмените заказ {MINE_TOO}")
    query(database_path, "UPDATE pending_actions SET expires_at = 0 WHERE status = 'pending'")
    await press(fake_telegram, expired)
    await fake_telegram.wait_for_messages(CUSTOMER, 5, within=WAIT_S)  # "expired"
    # the order shipped between the card and the press
    card_again = await say(fake_telegram, f"Отмените заказ {MINE_TOO}")
    query(database_path, "UPDATE orders SET status = 'in_transit' WHERE order_id = ?", MINE_TOO)
    assert await press(fake_telegram, card_again) == ACTION_WORDS["ru"].action_working

    messages = await settled(fake_telegram, 7)
    words = [m.plain_text for m in messages]
    assert words[1] == ACTION_WORDS["ru"].action_requested
    assert words[2] == f"Заказ {MINE} отменён."
    assert words[4] == ACTION_WORDS["ru"].action_expired
    assert words[6] == ACTION_WORDS["ru"].action_state_changed
    assert status_of(database_path, MINE) == "cancelled"
    assert status_of(database_path, MINE_TOO) == "in_transit"
    assert cancellations(database_path) == 1


async def test_no_card_for_someone_elses_order_or_a_return_outside_the_window(
    start_bot: StartBot,
    bot_base_env: dict[str, str],
    tmp_path: Path,
    fake_telegram: FakeTelegramServer,
    fake_openai: FakeOpenAIServer,
    database_path: Path,
) -> None:
    bot = await setup(start_bot, bot_base_env, tmp_path, fake_openai)
    theirs_q, missing_q = f"Отмените заказ {THEIRS}", "Отмените заказ 4999"
    theirs = await say(fake_telegram, theirs_q)
    missing = await say(fake_telegram, missing_q)
    late_q = f"Хочу вернуть наушники из заказа {DELIVERED_LONG_AGO}"
    late = await say(fake_telegram, late_q)
    for message in (theirs, missing, late):
        assert card_buttons(message) == []
    [r_theirs], [r_missing] = (
        results_for(fake_openai, theirs_q),
        results_for(fake_openai, missing_q),
    )
    r_theirs["data"].pop("order_id"), r_missing["data"].pop("order_id")
    assert r_theirs == r_missing  # someone else's order: the answer of a missing one
    [r_late] = results_for(fake_openai, late_q)
    assert r_late["data"]["refused"] == "outside_return_window"
    assert query(database_path, "SELECT count(*) FROM pending_actions") == [(0,)]
    assert status_of(database_path, THEIRS) == "processing"
    assert "SECRET-REASON" not in bot.output


async def _crash_at(
    method: str,
    start_bot: StartBot,
    bot_base_env: dict[str, str],
    tmp_path: Path,
    telegram: FakeTelegramServer,
    openai: FakeOpenAIServer,
    database: Path,
) -> str:
    """Hold the press's `method` call, SIGKILL there, restart; the action's status at
    the kill."""
    bot = await setup(start_bot, bot_base_env, tmp_path, openai)
    card = await say(telegram, f"Отмените заказ {MINE}")
    hold = telegram.hold_calls(method)
    telegram.enqueue_update(press_update(card, 0))
    await asyncio.wait_for(hold.arrived.wait(), WAIT_S)
    [(status,)] = query(database, "SELECT status FROM pending_actions")
    await bot.kill()
    await telegram.wait_until(lambda: hold.idle)
    hold.release()
    await start_bot(**ACTIONS)
    await staff_done(telegram, MINE)
    await telegram.wait_for_messages(CUSTOMER, 3, within=WAIT_S)
    messages = await settled(telegram, 3)
    assert messages[1].plain_text == ACTION_WORDS["ru"].action_requested
    assert messages[2].plain_text == f"Заказ {MINE} отменён."
    cards = [m for m in telegram.messages_to(STAFF) if m.plain_text.startswith("🛎 Запрос")]
    assert len(cards) == 1
    assert status_of(database, MINE) == "cancelled"
    assert cancellations(database) == 1
    assert query(database, "SELECT status FROM pending_actions") == [("done",)]
    return str(status)


async def test_killed_between_the_press_stored_and_the_shops_call(
    start_bot: StartBot,
    bot_base_env: dict[str, str],
    tmp_path: Path,
    fake_telegram: FakeTelegramServer,
    fake_openai: FakeOpenAIServer,
    database_path: Path,
) -> None:
    at_kill = await _crash_at(
        "answerCallbackQuery",
        start_bot,
        bot_base_env,
        tmp_path,
        fake_telegram,
        fake_openai,
        database_path,
    )
    assert at_kill == "confirmed"  # the press was stored, the shop not asked yet


async def test_killed_between_the_shops_call_and_the_result_stored(
    start_bot: StartBot,
    bot_base_env: dict[str, str],
    tmp_path: Path,
    fake_telegram: FakeTelegramServer,
    fake_openai: FakeOpenAIServer,
    database_path: Path,
) -> None:
    at_kill = await _crash_at(
        "editMessageReplyMarkup",
        start_bot,
        bot_base_env,
        tmp_path,
        fake_telegram,
        fake_openai,
        database_path,
    )
    assert at_kill == "executing"  # the shop acted, the result not stored yet


async def test_with_handoff_the_operators_get_one_line_per_executed_action(
    start_bot: StartBot,
    bot_base_env: dict[str, str],
    tmp_path: Path,
    fake_telegram: FakeTelegramServer,
    fake_openai: FakeOpenAIServer,
    database_path: Path,
) -> None:
    operators = -1001777
    fake_telegram.add_forum(operators)
    bot = await setup(
        start_bot, bot_base_env, tmp_path, fake_openai, OPERATOR_CHAT_ID=str(operators)
    )
    declined = await say(fake_telegram, f"Отмените заказ {MINE_TOO}")
    await press(fake_telegram, declined, 1)  # ✖: nothing executed, no line
    await fake_telegram.wait_for_messages(CUSTOMER, 2, within=WAIT_S)
    card = await say(fake_telegram, f"Отмените заказ {MINE}")
    await press(fake_telegram, card)
    # imported data: the request goes to the operators' group, where anyone answers it
    await staff_done(fake_telegram, MINE, chat=operators, user=7801)
    await fake_telegram.wait_for_messages(CUSTOMER, 5, within=WAIT_S)
    messages = await settled(fake_telegram, 5)
    assert messages[1].plain_text == ACTION_WORDS["ru"].action_declined
    assert messages[3].plain_text == ACTION_WORDS["ru"].action_requested
    assert messages[4].plain_text == f"Заказ {MINE} отменён."
    await fake_telegram.wait_for_messages(operators, 2, within=WAIT_S)
    [request, line] = fake_telegram.messages_to(operators)
    assert f"cancel_order, заказ {MINE}" in request.plain_text
    assert str(CUSTOMER) in request.plain_text
    assert f"Заказ {MINE}: отмечено как сделанное" in line.plain_text
    assert status_of(database_path, MINE_TOO) == "processing"
    assert "SECRET-REASON" not in bot.output


async def test_http_backend_cancel_once_despite_a_lost_answer_and_the_cache_knows(
    start_bot: StartBot,
    fake_telegram: FakeTelegramServer,
    fake_openai: FakeOpenAIServer,
    fake_shop_api: FakeShopApi,
) -> None:
    """SHOP_BACKEND=http: the contract's POST /orders/{n}/cancel with the operation id as
    Idempotency-Key; the shop's first answer is lost (504), the bot asks again with the
    same key: one cancellation, one result; the next question is answered from the new
    state although the directory caches orders for 5 minutes."""
    fake_shop_api.put(order(MINE, "processing", telegram_id=CUSTOMER))
    fake_openai.handler = tool_step(_calls, _model)
    await start_bot(
        **ACTIONS,
        SHOP_BACKEND="http",
        SHOP_API_URL=fake_shop_api.base_url,
        SHOP_API_TOKEN=TOKEN,
        SHOP_CACHE_TTL_S="300",
    )
    card = await say(fake_telegram, f"Отмените заказ {MINE}")
    assert f"Отменить заказ {MINE}?" in card.plain_text
    fake_shop_api.lose_answers = 1
    await press(fake_telegram, card)
    [_, result] = await fake_telegram.wait_for_messages(CUSTOMER, 2, within=WAIT_S)
    assert result.plain_text == f"Заказ {MINE} отменён."
    assert fake_shop_api.cancellations == [MINE]
    keys = [p for p, _ in fake_shop_api.requests if p.endswith("/cancel")]
    assert len(keys) == 2  # asked again after the lost answer ...
    question = f"Заказ {MINE} отменён?"
    await say(fake_telegram, question)
    [looked_up] = results_for(fake_openai, question)
    assert looked_up["data"]["status"] == "cancelled"  # ... and not from a stale cache
    assert await settled(fake_telegram, 3)


async def test_stats_count_the_questions_an_action_resolved_in_both_languages(
    start_bot: StartBot,
    bot_base_env: dict[str, str],
    tmp_path: Path,
    fake_telegram: FakeTelegramServer,
    fake_openai: FakeOpenAIServer,
    database_path: Path,
) -> None:
    admins = {"ru": 7690, "en": 7691}
    await setup(
        start_bot,
        bot_base_env,
        tmp_path,
        fake_openai,
        ADMIN_IDS=",".join(map(str, admins.values())),
    )
    declined = await say(fake_telegram, f"Отмените заказ {MINE_TOO}")
    await press(fake_telegram, declined, 1)
    await fake_telegram.wait_for_messages(CUSTOMER, 2, within=WAIT_S)  # "nothing changed"
    card = await say(fake_telegram, f"Отмените заказ {MINE}")
    await press(fake_telegram, card)
    await staff_done(fake_telegram, MINE, chat=admins["ru"], user=admins["ru"])
    await fake_telegram.wait_for_messages(CUSTOMER, 5, within=WAIT_S)
    await settled(fake_telegram, 5)
    await wait_for_db(
        database_path,
        "SELECT status, count(*) FROM pending_actions GROUP BY status ORDER BY status",
        [("declined", 1), ("done", 1)],
    )
    for language, words in (
        ("ru", "вопросов решено действием"),
        ("en", "questions resolved by an action"),
    ):
        admin = admins[language]
        before = len(fake_telegram.messages_to(admin))  # the request card, the Done note
        fake_telegram.enqueue_update(message_update(admin, text="/stats", language_code=language))
        table = (await fake_telegram.wait_for_messages(admin, before + 1, within=WAIT_S))[before]
        assert re.search(rf"{words}\s+1\b", table.plain_text), table.plain_text


def _offered_tools(openai: FakeOpenAIServer, user_text: str) -> set[str]:
    bodies = [b for b in openai.chat_requests if b.get("tools") and last_user_text(b) == user_text]
    assert bodies, f"the model never saw {user_text!r} with tools"
    return {t["function"]["name"] for t in bodies[0]["tools"]}


async def test_http_shop_that_declares_no_actions_is_offered_none_and_a_501_ends_politely(
    start_bot: StartBot,
    fake_telegram: FakeTelegramServer,
    fake_openai: FakeOpenAIServer,
    fake_shop_api: FakeShopApi,
) -> None:
    """SHOP_BACKEND=http. A shop that serves no `GET /capabilities` (like the README's
    example server) declares no action: the model is never offered one, no card, and a
    WARNING at start says so. A shop that declares cancelling but answers 501 when asked:
    one polite answer, the action ends failed (nothing stuck), and it is offered no more."""
    fake_shop_api.put(order(MINE, "processing", telegram_id=CUSTOMER))
    fake_shop_api.capabilities = None
    fake_openai.handler = tool_step(_calls, _model)
    env = {"SHOP_BACKEND": "http", "SHOP_API_URL": fake_shop_api.base_url, "SHOP_API_TOKEN": TOKEN}
    bot = await start_bot(**ACTIONS, **env)
    first = f"Отмените заказ {MINE}"
    answer = await say(fake_telegram, first)
    assert card_buttons(answer) == [] and "propose_cancel_order" not in _offered_tools(
        fake_openai, first
    )
    await bot.wait_for_line("carries out none of cancel_order, request_return")
    assert fake_shop_api.cancellations == []
    await bot.terminate()

    fake_shop_api.capabilities = ["cancel_order"]
    fake_shop_api.not_supported = {"cancel"}
    await start_bot(**ACTIONS, **env)
    second = f"Пожалуйста, отмените заказ {MINE}"
    card = await say(fake_telegram, second)
    offered = _offered_tools(fake_openai, second)
    assert "propose_cancel_order" in offered and "propose_request_return" not in offered
    await press(fake_telegram, card)
    messages = await fake_telegram.wait_for_messages(CUSTOMER, 3, within=WAIT_S)
    assert messages[-1].plain_text == ACTION_WORDS["ru"].action_not_supported
    assert fake_shop_api.cancellations == []
    third = f"А всё-таки отмените заказ {MINE}"
    again = await say(fake_telegram, third)  # no longer offered: no card
    assert card_buttons(again) == [] and "propose_cancel_order" not in _offered_tools(
        fake_openai, third
    )


async def _pressed_on_a_shop_that_never_answers(
    start_bot: StartBot,
    fake_telegram: FakeTelegramServer,
    fake_openai: FakeOpenAIServer,
    fake_shop_api: FakeShopApi,
    admin: int,
) -> None:
    """The bot on an http shop that stops answering actions once the card is shown
    (the sweeper's bound short: 2 asks, 0.5 s); the customer has pressed ✅."""
    fake_shop_api.put(order(MINE, "processing", telegram_id=CUSTOMER))
    fake_openai.handler = tool_step(_calls, _model)
    await start_bot(
        **{**ACTIONS, "ADMIN_IDS": str(admin)},
        SHOP_BACKEND="http",
        SHOP_API_URL=fake_shop_api.base_url,
        SHOP_API_TOKEN=TOKEN,
        SHOP_TIMEOUT_S="0.5",
        ACTION_RETRY_ATTEMPTS="2",
        ACTION_RETRY_FIRST_S="0.5",
    )
    card = await say(fake_telegram, f"Отмените заказ {MINE}")
    fake_shop_api.actions_hang = True
    await press(fake_telegram, card)


async def test_a_shop_that_never_answers_ends_needing_attention_told_once(
    start_bot: StartBot,
    fake_telegram: FakeTelegramServer,
    fake_openai: FakeOpenAIServer,
    fake_shop_api: FakeShopApi,
    database_path: Path,
) -> None:
    """The shop dies for good after the card was shown: its action requests are never
    answered. The press says the shop has not confirmed yet; the bot asks again in the
    background within its bound, then the action needs attention: the customer hears
    once that a person will check, the admin gets one line with the order and the
    shop's last answer, /stats lists it, and nothing stays `executing`."""
    admin = 7695
    await _pressed_on_a_shop_that_never_answers(
        start_bot, fake_telegram, fake_openai, fake_shop_api, admin
    )
    await wait_for_db(
        database_path,
        "SELECT status, last_answer FROM pending_actions",
        [("needs_attention", "timeout")],
    )
    messages = await fake_telegram.wait_for_messages(CUSTOMER, 3, within=WAIT_S)
    assert [m.plain_text for m in messages[1:]] == [
        ACTION_WORDS["ru"].action_checking,
        ACTION_WORDS["ru"].action_needs_attention,
    ]
    [line] = await fake_telegram.wait_for_messages(admin, 1, within=WAIT_S)
    assert f"заказ {MINE} требует проверки" in line.plain_text
    assert "timeout" in line.plain_text
    fake_telegram.enqueue_update(message_update(admin, text="/stats", language_code="ru"))
    table = (await fake_telegram.wait_for_messages(admin, 2, within=WAIT_S))[1]
    assert re.search(rf"сейчас ждёт проверки: заказ {MINE}\s+cancel_order", table.plain_text)
    assert await settled(fake_telegram, 3)  # nothing more to the customer
    told = [m for m in fake_telegram.messages_to(admin) if "требует проверки" in m.plain_text]
    assert len(told) == 1  # told once
    assert fake_shop_api.cancellations == []


async def test_telegram_down_when_the_sweeper_tells_delays_its_messages_never_loses_them(
    start_bot: StartBot,
    fake_telegram: FakeTelegramServer,
    fake_openai: FakeOpenAIServer,
    fake_shop_api: FakeShopApi,
    database_path: Path,
) -> None:
    """The moment the sweeper ends an action, Telegram refuses every message (flood
    control beyond the bot's bound: certainly not sent). The customer's "a person will
    check" and the admin's line were stored with the outcome; they arrive once Telegram
    takes messages again — each exactly once."""
    admin = 7696
    await _pressed_on_a_shop_that_never_answers(
        start_bot, fake_telegram, fake_openai, fake_shop_api, admin
    )
    await fake_telegram.wait_for_messages(CUSTOMER, 2, within=WAIT_S)  # "checking"
    hold = fake_telegram.hold_send_message(CUSTOMER)
    await asyncio.wait_for(hold.arrived.wait(), WAIT_S)  # the sweeper's message, in flight
    fake_telegram.fail_next_sends_with_retry_after(retry_after=100_000, times=2)
    hold.release()  # it and the admin's line are refused
    await wait_for_db(
        database_path,
        "SELECT count(*) FROM outgoing_messages WHERE status = 'delivered'",
        [(2,)],
    )
    messages = await fake_telegram.wait_for_messages(CUSTOMER, 3, within=WAIT_S)
    assert messages[2].plain_text == ACTION_WORDS["ru"].action_needs_attention
    assert await settled(fake_telegram, 3)  # once
    told = [m for m in fake_telegram.messages_to(admin) if "требует проверки" in m.plain_text]
    assert len(told) == 1
    tries = [
        c
        for c in fake_telegram.calls_of("sendMessage")
        if c.params.get("chat_id") == CUSTOMER and "проверит" in str(c.params.get("text"))
    ]
    assert len(tries) == 2  # refused once, then sent


async def test_presses_get_an_honest_note_even_once_actions_are_off(
    start_bot: StartBot,
    bot_base_env: dict[str, str],
    tmp_path: Path,
    fake_telegram: FakeTelegramServer,
    fake_openai: FakeOpenAIServer,
    database_path: Path,
) -> None:
    """A press in another chat is "not for you"; after ACTIONS_ENABLED is emptied and the
    bot restarted, a press on the old card is answered "no longer offered" (the client
    stops waiting) and nothing is done."""
    bot = await setup(start_bot, bot_base_env, tmp_path, fake_openai)
    card = await say(fake_telegram, f"Отмените заказ {MINE}")
    data = card_buttons(card)[0]["callback_data"]
    group = callback_update(-100777, data=data, message_id=card.message_id, user_id=CUSTOMER)
    fake_telegram.enqueue_update(group)
    note = await fake_telegram.wait_for_call(
        "answerCallbackQuery",
        lambda c: c.params.get("callback_query_id") == group["callback_query"]["id"],
        within=WAIT_S,
    )
    assert note.params.get("text") == ACTION_WORDS["ru"].action_not_yours
    await bot.terminate()
    await start_bot()  # ACTIONS_ENABLED unset: actions off
    assert await press(fake_telegram, card) == ACTION_WORDS["ru"].action_no_longer_offered
    assert status_of(database_path, MINE) == "processing"
    assert await settled(fake_telegram, 1)


async def test_an_answer_no_parser_can_read_leaves_nothing_stranded(
    start_bot: StartBot,
    fake_telegram: FakeTelegramServer,
    fake_openai: FakeOpenAIServer,
    fake_shop_api: FakeShopApi,
    database_path: Path,
) -> None:
    """The shop cancels but answers with JSON nested deeper than any parser goes (a
    RecursionError in the body's parsing). The press ends in a defined state (the shop's
    answer unknown), the customer is told it is being checked, and — across a restart —
    the background asks again with the same operation id: one cancellation, one result."""
    fake_shop_api.put(order(MINE, "processing", telegram_id=CUSTOMER))
    fake_openai.handler = tool_step(_calls, _model)
    env = {
        **ACTIONS,
        "SHOP_BACKEND": "http",
        "SHOP_API_URL": fake_shop_api.base_url,
        "SHOP_API_TOKEN": TOKEN,
    }
    bot = await start_bot(**env, ACTION_RETRY_FIRST_S="3600")  # no background ask yet
    card = await say(fake_telegram, f"Отмените заказ {MINE}")
    fake_shop_api.nested_answers = 1_000_000
    await press(fake_telegram, card)
    messages = await fake_telegram.wait_for_messages(CUSTOMER, 2, within=WAIT_S)
    assert messages[1].plain_text == ACTION_WORDS["ru"].action_checking
    assert query(database_path, "SELECT status FROM pending_actions") == [("executing",)]
    await bot.terminate()
    fake_shop_api.nested_answers = 0  # the shop's answers readable again
    await start_bot(**env, ACTION_RETRY_FIRST_S="0.5")
    await wait_for_db(database_path, "SELECT status FROM pending_actions", [("done",)])
    result = await fake_telegram.wait_for_messages(CUSTOMER, 3, within=WAIT_S)
    assert result[2].plain_text == f"Заказ {MINE} отменён."
    assert fake_shop_api.cancellations == [MINE]
    assert await settled(fake_telegram, 3)
