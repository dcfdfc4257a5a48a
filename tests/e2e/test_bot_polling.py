"""The real bot process in polling mode, driven through the fake Bot API and fake model."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.e2e.chat_helpers import query
from tests.e2e.conftest import StartBot
from tests.fakes.openai_server import FakeOpenAIServer
from tests.fakes.telegram_server import (
    FakeTelegramServer,
    edited_message_update,
    message_update,
    sticker_update,
)

pytestmark = pytest.mark.both_backends

CHAT = 1001


def last_user_text(body: dict) -> str:
    users = [m for m in body["messages"] if m["role"] == "user"]
    return str(users[-1]["content"])


async def test_start_up_deletes_webhook_keeping_updates_and_sets_commands(
    start_bot: StartBot, fake_telegram: FakeTelegramServer
) -> None:
    bot = await start_bot(ADMIN_IDS="777")
    delete = await fake_telegram.wait_for_call("deleteWebhook")
    assert delete.params.get("drop_pending_updates") in (None, False)
    poll = await fake_telegram.wait_for_call("getUpdates")
    # messages, the presses of the 👍/👎 buttons under answers, and stop presses of drafts
    assert poll.params["allowed_updates"] == [
        "callback_query",
        "message",
        "stopped_message_generation",
    ]
    # the menu is set in the background (it is optional); the admin's scope comes last
    await fake_telegram.wait_for_call(
        "setMyCommands",
        lambda c: (
            c.params.get("scope", {}).get("chat_id") == 777
            and c.params.get("language_code") == "en"
        ),
    )
    commands = fake_telegram.calls_of("setMyCommands")
    names = [[c["command"] for c in call.params["commands"]] for call in commands]
    assert ["start", "help", "new", "phone", "forget_phone"] in names
    # the admins' commands (the features' too) in the admin's chat only, in each language
    staff = {"stats", "gaps", "chat", "knowledge"}
    admin = [c for c in commands if c.params.get("scope", {}).get("chat_id") == 777]
    assert {c.params.get("language_code") for c in admin} == {None, "en"}
    for call in admin:
        assert staff <= {c["command"] for c in call.params["commands"]}
        assert all(c["description"] for c in call.params["commands"])
    everyone = [c for c in commands if c.params.get("scope", {}).get("type") == "default"]
    assert everyone and all(
        not staff & {c["command"] for c in call.params["commands"]} for call in everyone
    )
    assert all(c.params["scope"]["type"] in ("default", "chat") for c in commands)
    startup = [line for line in bot.lines if "starting:" in line]
    assert len(startup) == 1
    assert "mode=polling" in startup[0] and "fake-model" in startup[0]
    assert "get_order_status" in startup[0]
    assert fake_telegram.token not in bot.output and "sk-test" not in bot.output


async def test_start_help_and_unknown_command(
    start_bot: StartBot, fake_telegram: FakeTelegramServer, fake_openai: FakeOpenAIServer
) -> None:
    await start_bot()
    fake_telegram.enqueue_update(message_update(CHAT, text="/start"))
    [start] = await fake_telegram.wait_for_messages(CHAT, 1)
    assert "/new" in start.plain_text and "/help" in start.plain_text
    assert start.parse_mode == "HTML"

    fake_telegram.enqueue_update(message_update(CHAT, text="/help", language_code="en"))
    fake_telegram.enqueue_update(message_update(CHAT, text="/stats"))
    messages = await fake_telegram.wait_for_messages(CHAT, 3)
    assert "Commands" in messages[1].plain_text  # English for an English-speaking user
    assert "/help" in messages[2].plain_text  # /stats is unknown to a non-admin
    assert fake_openai.requests == []


async def test_order_question_gets_the_status_from_the_shop_data(
    start_bot: StartBot,
    fake_telegram: FakeTelegramServer,
    fake_openai: FakeOpenAIServer,
    database_path: Path,
) -> None:
    release = fake_openai.hold_answers()
    await start_bot(STREAM_ANSWERS="false")  # drafts: tests/e2e/test_streamed_answers.py
    fake_telegram.enqueue_update(
        message_update(CHAT, text="Где сейчас находится заказ 8041?", user_id=CHAT)
    )
    # "typing…" shows while the model is still thinking
    typing = await fake_telegram.wait_for_call("sendChatAction")
    assert typing.params["chat_id"] == CHAT and typing.params["action"] == "typing"
    release.set()
    [answer] = await fake_telegram.wait_for_messages(CHAT, 1)
    [(status,)] = query(database_path, "SELECT status FROM orders WHERE order_id = '8041'")
    assert "8041" in answer.plain_text
    assert status in answer.plain_text


async def test_question_without_number_asks_for_it(
    start_bot: StartBot, fake_telegram: FakeTelegramServer
) -> None:
    await start_bot()
    fake_telegram.enqueue_update(message_update(CHAT, text="Где мой заказ?"))
    [answer] = await fake_telegram.wait_for_messages(CHAT, 1)
    assert "номер заказа" in answer.plain_text


async def test_new_starts_without_earlier_history(
    start_bot: StartBot, fake_telegram: FakeTelegramServer, fake_openai: FakeOpenAIServer
) -> None:
    await start_bot()
    fake_telegram.enqueue_update(message_update(CHAT, text="Привет, меня зовут Анна"))
    await fake_telegram.wait_for_messages(CHAT, 1)
    fake_telegram.enqueue_update(message_update(CHAT, text="/new"))
    messages = await fake_telegram.wait_for_messages(CHAT, 2)
    assert "чистого листа" in messages[1].plain_text
    fake_telegram.enqueue_update(message_update(CHAT, text="Как дела?"))
    await fake_telegram.wait_for_messages(CHAT, 3)
    last = fake_openai.chat_requests[-1]
    contents = " ".join(str(m.get("content")) for m in last["messages"])
    assert "Как дела?" in contents
    assert "Анна" not in contents


async def test_new_during_a_turn_waits_for_its_answer_then_resets(
    start_bot: StartBot,
    fake_telegram: FakeTelegramServer,
    fake_openai: FakeOpenAIServer,
    database_path: Path,
) -> None:
    """/new sent while a turn runs: the running turn's answer arrives and lands in the old
    session, then the session is reset (nothing is cancelled, nothing is mixed)."""
    release = fake_openai.hold_answers()
    await start_bot()
    fake_telegram.enqueue_update(message_update(CHAT, text="Где сейчас находится заказ 8041?"))
    await fake_openai.wait_for_requests(1)  # the turn is running, its answer held
    new_id = fake_telegram.enqueue_update(message_update(CHAT, text="/new"))
    # the offset moves past /new only once the bot has recorded it: it arrived mid-turn
    await fake_telegram.wait_for_call(
        "getUpdates", lambda call: int(call.params.get("offset") or 0) > new_id
    )
    assert fake_telegram.messages_to(CHAT) == []
    release.set()

    answer, notice = await fake_telegram.wait_for_messages(CHAT, 2)
    assert "8041" in answer.plain_text  # the answer to the question asked before /new
    assert "чистого листа" in notice.plain_text  # then the reset was confirmed
    (old, closed_at, reason), (new, still_open, _) = query(
        database_path,
        "SELECT id, closed_at, close_reason FROM sessions WHERE chat_id = ? ORDER BY id",
        CHAT,
    )
    old_messages = query(
        database_path,
        "SELECT role, content, created_at FROM messages WHERE session_id = ? ORDER BY id",
        old,
    )
    [(new_messages,)] = query(
        database_path, "SELECT count(*) FROM messages WHERE session_id = ?", new
    )
    assert (reason, still_open, new_messages) == ("reset", None, 0)
    assert [role for role, _content, _at in old_messages] == ["user", "assistant"]
    assert "8041" in old_messages[0][1]
    # the pair was stored before the session was closed, not written into a closed one
    assert all(created_at <= closed_at for _role, _content, created_at in old_messages)


async def test_sticker_long_text_and_edits_never_reach_the_model(
    start_bot: StartBot, fake_telegram: FakeTelegramServer, fake_openai: FakeOpenAIServer
) -> None:
    await start_bot()
    fake_telegram.enqueue_update(sticker_update(CHAT))
    [sticker_reply] = await fake_telegram.wait_for_messages(CHAT, 1)
    assert "текстов" in sticker_reply.plain_text
    fake_telegram.enqueue_update(message_update(CHAT, text="я" * 5000))
    messages = await fake_telegram.wait_for_messages(CHAT, 2)
    assert "2000" in messages[1].plain_text
    fake_telegram.enqueue_update(edited_message_update(CHAT, "заказ 8041?"))
    fake_telegram.enqueue_update(message_update(CHAT, text="/help"))
    messages = await fake_telegram.wait_for_messages(CHAT, 3)
    assert "/new" in messages[2].plain_text
    assert len(fake_telegram.messages_to(CHAT)) == 3  # the edit got no answer
    assert fake_openai.requests == []


async def test_group_answers_only_messages_meant_for_the_bot(
    start_bot: StartBot, fake_telegram: FakeTelegramServer, fake_openai: FakeOpenAIServer
) -> None:
    await start_bot()
    group = -5005
    fake_telegram.enqueue_update(message_update(group, text="всем привет", user_id=11))
    fake_telegram.enqueue_update(
        message_update(
            group,
            text="@shop_support_test_bot где заказ?",
            user_id=11,
            entities=[{"type": "mention", "offset": 0, "length": 22}],
        )
    )
    [answer] = await fake_telegram.wait_for_messages(group, 1)
    assert "номер заказа" in answer.plain_text
    assert len(fake_openai.chat_requests) == 1
    assert last_user_text(fake_openai.chat_requests[0]) == "где заказ?"


async def test_formatting_rejected_by_telegram_is_sent_as_plain_text(
    start_bot: StartBot, fake_telegram: FakeTelegramServer, fake_openai: FakeOpenAIServer
) -> None:
    from tests.fakes.openai_server import completion

    fake_openai.handler = lambda body: completion(text="**Готово**: заказ <8041> в пути")
    fake_telegram.reject_html = True
    await start_bot()
    fake_telegram.enqueue_update(message_update(CHAT, text="Что с заказом?"))
    [answer] = await fake_telegram.wait_for_messages(CHAT, 1)
    assert answer.parse_mode is None
    assert answer.text == "Готово: заказ <8041> в пути"


async def test_sigterm_during_a_turn_still_sends_the_answer(
    start_bot: StartBot, fake_telegram: FakeTelegramServer, fake_openai: FakeOpenAIServer
) -> None:
    release = fake_openai.hold_answers()
    bot = await start_bot()
    fake_telegram.enqueue_update(message_update(CHAT, text="Где сейчас находится заказ 8041?"))
    await fake_openai.wait_for_requests(1)
    assert bot.proc is not None
    bot.proc.terminate()
    await bot.wait_for_line("stopping")
    release.set()
    assert await bot.wait_exit() == 0
    [answer] = fake_telegram.messages_to(CHAT)
    assert "8041" in answer.plain_text


async def test_with_the_tool_guide_the_model_is_told_the_offered_tools_and_the_turn_names_it(
    start_bot: StartBot,
    fake_telegram: FakeTelegramServer,
    fake_openai: FakeOpenAIServer,
    database_path: Path,
) -> None:
    await start_bot(TOOL_GUIDE="true", STREAM_ANSWERS="false")
    fake_telegram.enqueue_update(message_update(CHAT, text="Где заказ 8041?", user_id=CHAT))
    await fake_telegram.wait_for_messages(CHAT, 1)
    system = next(m for m in fake_openai.chat_requests[0]["messages"] if m["role"] == "system")
    guide = str(system["content"]).split("\nTools:\n", 1)[1]
    offered = [t["function"]["name"] for t in fake_openai.chat_requests[0]["tools"]]
    assert [line.split(":", 1)[0] for line in guide.splitlines()] == [f"- {n}" for n in offered]
    [(prompt,)] = query(database_path, "SELECT prompt FROM turns")
    assert prompt.endswith("+tool_guide@3")
