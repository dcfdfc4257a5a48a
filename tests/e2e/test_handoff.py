"""Handoff to a person through the real process: `python -m bot` against both fakes.

The fake Bot API plays the operators' forum supergroup (createForumTopic, topics by
`message_thread_id`, copyMessage, topic closed service messages, a deleted topic answering
"Bad Request: message thread not found"). The customer asks for a person, operators
answer in the customer's topic, the AI steps aside and comes back knowing what was said.
"""

from __future__ import annotations

import json
import re
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest

from bot.telegram.handoff_view import HANDOFF_WORDS, OPERATOR_WORDS
from bot.telegram.texts import RU_TEMPLATES
from tests.e2e.chat_helpers import (
    WAIT_S,
    StartBot,
    finished_sql,
    last_user_text,
    query,
    results_for,
    seen_text,
    wait_for_db,
)
from tests.e2e.harness import BotProcess
from tests.fakes.openai_server import (
    Body,
    FakeOpenAIServer,
    FakeReply,
    completion,
    default_script,
    error,
    fake_call,
)
from tests.fakes.telegram_server import (
    FakeTelegramServer,
    SentMessage,
    callback_update,
    message_update,
    photo_update,
    topic_closed_update,
    topic_message_update,
    voice_update,
)

pytestmark = pytest.mark.both_backends

OPERATORS = -1001500
CUSTOMER = 7301
OPERATOR_USER = 9001
ADMIN = 7399
RU_WORDS = OPERATOR_WORDS["ru"]


async def start(start_bot: StartBot, telegram: FakeTelegramServer, **env: str) -> BotProcess:
    telegram.add_forum(OPERATORS)
    return await start_bot(OPERATOR_CHAT_ID=str(OPERATORS), **env)


async def finished(database: Path, update_ids: list[int]) -> None:
    """Bounded wait until every update is handled to the end (delivered, ignored, …)."""
    await wait_for_db(database, finished_sql(update_ids), [(len(update_ids),)], *update_ids)


async def next_message(
    telegram: FakeTelegramServer, chat_id: int, update: dict[str, Any]
) -> SentMessage:
    before = len(telegram.messages_to(chat_id))
    telegram.enqueue_update(update)
    messages = await telegram.wait_for_messages(chat_id, before + 1, within=WAIT_S)
    return messages[before]


async def handed_over(telegram: FakeTelegramServer) -> int:
    """/operator from the customer; returns the topic id (the brief is there)."""
    notice = await next_message(telegram, CUSTOMER, message_update(CUSTOMER, text="/operator"))
    assert seen_text(notice.text) == HANDOFF_WORDS["ru"].handoff_started
    [(_, topic_id)] = [key for key in telegram.topics if key[0] == OPERATORS]
    await telegram.wait_until(lambda: bool(telegram.messages_in_topic(OPERATORS, topic_id)))
    return topic_id


async def test_operator_handoff_end_to_end(
    start_bot: StartBot,
    fake_telegram: FakeTelegramServer,
    fake_openai: FakeOpenAIServer,
    database_path: Path,
) -> None:
    await start(start_bot, fake_telegram, ADMIN_IDS=str(ADMIN))
    # an AI exchange first: it is in the brief operators read
    first = await next_message(
        fake_telegram, CUSTOMER, message_update(CUSTOMER, text="Здравствуйте, есть вопрос")
    )
    assert "Здравствуйте" in first.plain_text

    topic_id = await handed_over(fake_telegram)
    create = fake_telegram.calls_of("createForumTopic")
    assert len(create) == 1 and create[0].params["name"] == f"User{CUSTOMER}"
    [brief] = fake_telegram.messages_in_topic(OPERATORS, topic_id)
    assert "команда /operator" in brief.plain_text
    assert "Здравствуйте, есть вопрос" in brief.plain_text  # the last exchange

    # the customer's message is copied into the topic; the model is not asked
    asked = len(fake_openai.chat_requests)
    question = message_update(CUSTOMER, text="Верните деньги за заказ 8041")
    fake_telegram.enqueue_update(question)
    await fake_telegram.wait_until(
        lambda: len(fake_telegram.messages_in_topic(OPERATORS, topic_id)) == 2
    )
    mirror = fake_telegram.messages_in_topic(OPERATORS, topic_id)[1]
    assert mirror.copied_from == (CUSTOMER, question["message"]["message_id"])
    await finished(database_path, [question["update_id"]])
    assert len(fake_openai.chat_requests) == asked
    assert len(fake_telegram.messages_to(CUSTOMER)) == 2  # no AI answer to it

    # an operator answers in the topic: the customer gets a copy
    reply = topic_message_update(
        OPERATORS, topic_id, text="Вернём 500 рублей до пятницы", user_id=OPERATOR_USER
    )
    relayed = await next_message(fake_telegram, CUSTOMER, reply)
    assert relayed.copied_from == (OPERATORS, reply["message"]["message_id"])

    # /close in the topic: the customer is told, operators see it closed
    closed = await next_message(
        fake_telegram,
        CUSTOMER,
        topic_message_update(OPERATORS, topic_id, text="/close", user_id=OPERATOR_USER),
    )
    assert seen_text(closed.text) == HANDOFF_WORDS["ru"].handoff_closed
    await fake_telegram.wait_for_call("closeForumTopic")
    await fake_telegram.wait_until(
        lambda: any(
            m.plain_text == RU_WORDS.operator_closed
            for m in fake_telegram.messages_in_topic(OPERATORS, topic_id)
        )
    )
    # Telegram's own "topic closed" service message afterwards changes nothing
    fake_telegram.enqueue_update(topic_closed_update(OPERATORS, topic_id))

    # the AI answers again, with the operator's words in the history it is given
    answer = await next_message(
        fake_telegram, CUSTOMER, message_update(CUSTOMER, text="Когда вернут деньги?")
    )
    assert answer.kind == "text"
    body = next(b for b in fake_openai.chat_requests if last_user_text(b) == "Когда вернут деньги?")
    history = body["messages"]
    assert any(
        m["role"] == "assistant" and "Вернём 500 рублей до пятницы" in m["content"] for m in history
    )
    assert any(
        m["role"] == "user" and "Верните деньги за заказ 8041" in m["content"] for m in history
    )
    assert query(database_path, "SELECT count(*) FROM handoffs WHERE closed_at IS NULL") == [(0,)]

    # /stats: the handoff numbers
    stats = await next_message(
        fake_telegram, ADMIN, message_update(ADMIN, text="/stats", language_code="en")
    )
    assert "HANDED TO A PERSON" in stats.plain_text
    block = stats.plain_text.split("HANDED TO A PERSON")[1].split("\n\n")[0]
    section = block.splitlines()
    lines = dict(re.split(r"\s{2,}", line.strip(), maxsplit=1) for line in section[1:])
    assert section[0].strip() == "1"
    assert lines["by /operator"] == "1"
    assert lines["by the AI"] == "0"
    assert lines["open now"] == "0"
    assert lines["closed"] == "1"
    assert lines["first reply, median"] != "—"


async def test_only_the_bots_topics_in_the_operator_chat_are_relayed(
    start_bot: StartBot,
    fake_telegram: FakeTelegramServer,
    fake_openai: FakeOpenAIServer,
    database_path: Path,
) -> None:
    await start(start_bot, fake_telegram)
    topic_id = await handed_over(fake_telegram)
    seen_by_customer = len(fake_telegram.messages_to(CUSTOMER))
    other_group = -1009999
    stranger = 7302
    mimic = {"message_thread_id": topic_id, "is_topic_message": True}
    updates = [
        # the operators' General topic, and a topic the bot did not create
        topic_message_update(OPERATORS, None, text="всем привет", user_id=OPERATOR_USER),
        topic_message_update(OPERATORS, topic_id + 50, text="другая тема", user_id=OPERATOR_USER),
        # another forum, with the id of the customer's topic, answering the bot
        topic_message_update(other_group, topic_id, text="Привет", reply_to_bot=True),
        # a private chat of someone else carrying the topic id
        message_update(stranger, text="Привет", extra=mimic),
    ]
    for update in updates:
        fake_telegram.enqueue_update(update)
    await finished(database_path, [u["update_id"] for u in updates])
    # the stranger and the other group got the AI, the customer nothing, operators no answer
    assert len(fake_telegram.messages_to(CUSTOMER)) == seen_by_customer
    assert fake_telegram.calls_of("copyMessage") == []
    assert len(fake_telegram.messages_to(stranger)) == 1
    assert len(fake_telegram.messages_to(other_group)) == 1
    assert len(fake_telegram.messages_to(OPERATORS)) == 1  # the brief only
    ignored = query(
        database_path,
        "SELECT reason FROM updates WHERE update_id IN (?, ?)",
        updates[0]["update_id"],
        updates[1]["update_id"],
    )
    assert ignored == [("operator_chat_other",), ("operator_chat_other",)]


async def test_sigkill_during_a_handoff_loses_and_repeats_nothing(
    start_bot: StartBot,
    fake_telegram: FakeTelegramServer,
    fake_openai: FakeOpenAIServer,
    database_path: Path,
) -> None:
    bot = await start(start_bot, fake_telegram)
    topic_id = await handed_over(fake_telegram)
    before = len(fake_telegram.messages_to(CUSTOMER))
    # the relay to the customer is stored, then held on its way: the bot dies there
    hold = fake_telegram.hold_send_message(chat_id=CUSTOMER)
    reply = topic_message_update(OPERATORS, topic_id, text="Проверим и ответим", user_id=9002)
    fake_telegram.enqueue_update(reply)
    await hold.arrived.wait()
    await wait_for_db(
        database_path,
        "SELECT status FROM updates WHERE update_id = ?",
        [("answered",)],
        reply["update_id"],
    )
    await bot.kill()
    await fake_telegram.wait_until(lambda: hold.idle)
    hold.release()
    assert len(fake_telegram.messages_to(CUSTOMER)) == before

    # while the bot is down the customer writes; after the restart: still handed over
    later = message_update(CUSTOMER, text="Жду ответа")
    fake_telegram.enqueue_update(later)
    asked = len(fake_openai.chat_requests)
    await start_bot(OPERATOR_CHAT_ID=str(OPERATORS))
    await finished(database_path, [reply["update_id"], later["update_id"]])
    copies = [m for m in fake_telegram.messages_to(CUSTOMER) if m.kind == "copy"]
    assert [m.copied_from for m in copies] == [(OPERATORS, reply["message"]["message_id"])]
    mirrors = [m for m in fake_telegram.messages_in_topic(OPERATORS, topic_id) if m.kind == "copy"]
    assert [m.copied_from for m in mirrors] == [(CUSTOMER, later["message"]["message_id"])]
    assert len(fake_openai.chat_requests) == asked  # still no AI
    assert query(database_path, "SELECT count(*) FROM handoffs WHERE closed_at IS NULL") == [(1,)]
    operator_lines = query(
        database_path, "SELECT count(*) FROM messages WHERE content LIKE '%Проверим и ответим%'"
    )
    assert operator_lines == [(1,)]
    assert len(fake_telegram.calls_of("createForumTopic")) == 1


def _asks_for_a_person(body: Body) -> FakeReply:
    """The model calls request_human when the customer asks for a person."""
    messages = body.get("messages") or []
    if body.get("tools") and "человек" in last_user_text(body).lower():
        if messages[-1].get("role") != "tool":
            return completion(
                tool_calls=[fake_call("request_human", {"reason": "просит живого человека"})]
            )
        return completion(text="Хорошо, зову сотрудника.")
    return default_script(body)


async def test_the_model_hands_over_with_request_human_through_the_executor(
    start_bot: StartBot,
    fake_telegram: FakeTelegramServer,
    fake_openai: FakeOpenAIServer,
    database_path: Path,
) -> None:
    fake_openai.handler = _asks_for_a_person
    await start(start_bot, fake_telegram)
    answer = await next_message(
        fake_telegram, CUSTOMER, message_update(CUSTOMER, text="Позовите человека")
    )
    tools = [t["function"]["name"] for t in fake_openai.chat_requests[0]["tools"]]
    assert "request_human" in tools
    assert answer.plain_text.startswith("Хорошо, зову сотрудника.")
    assert HANDOFF_WORDS["ru"].handoff_started in seen_text(answer.text)
    assert results_for(fake_openai, "Позовите человека")[0]["ok"] is True
    assert query(
        database_path, "SELECT status FROM tool_calls WHERE tool_name = 'request_human'"
    ) == [("success",)]
    [(_, topic_id)] = list(fake_telegram.topics)
    await fake_telegram.wait_until(
        lambda: bool(fake_telegram.messages_in_topic(OPERATORS, topic_id))
    )
    [brief] = fake_telegram.messages_in_topic(OPERATORS, topic_id)
    assert "решение ИИ" in brief.plain_text and "просит живого человека" in brief.plain_text
    assert query(database_path, "SELECT source, reason FROM handoffs") == [
        ("model", "просит живого человека")
    ]

    # in a group the tool refuses: a person is reached from a private chat only
    group = -4001
    await next_message(
        fake_telegram,
        group,
        message_update(group, text="Нужен человек", user_id=7303, reply_to_bot=True),
    )
    [refusal] = results_for(fake_openai, "Нужен человек")
    assert refusal["error"]["code"] == "private_chat_only"
    assert query(database_path, "SELECT count(*) FROM handoffs") == [(1,)]


async def test_without_operator_chat_nothing_mentions_handoff(
    start_bot: StartBot, fake_telegram: FakeTelegramServer, fake_openai: FakeOpenAIServer
) -> None:
    await start_bot()
    reply = await next_message(fake_telegram, CUSTOMER, message_update(CUSTOMER, text="/operator"))
    assert seen_text(reply.text) == RU_TEMPLATES.unknown_command
    await next_message(fake_telegram, CUSTOMER, message_update(CUSTOMER, text="Привет"))
    names = [t["function"]["name"] for t in fake_openai.chat_requests[-1]["tools"]]
    assert "request_human" not in names
    await fake_telegram.wait_for_call("setMyCommands")
    for call in fake_telegram.calls_of("setMyCommands"):
        assert "operator" not in json.dumps(call.params["commands"])
    assert fake_telegram.calls_of("getChat") == []


async def test_the_operator_command_is_in_the_menu_when_handoff_is_on(
    start_bot: StartBot, fake_telegram: FakeTelegramServer
) -> None:
    await start(start_bot, fake_telegram)
    call = await fake_telegram.wait_for_call("setMyCommands")
    assert "operator" in [c["command"] for c in call.params["commands"]]


async def test_the_button_starts_a_handoff_from_the_customers_own_private_chat_only(
    start_bot: StartBot,
    fake_telegram: FakeTelegramServer,
    database_path: Path,
) -> None:
    await start(start_bot, fake_telegram)
    group = -4002
    in_group = callback_update(group, "handoff:start", user_id=7304)
    fake_telegram.enqueue_update(in_group)
    await finished(database_path, [in_group["update_id"]])
    assert query(database_path, "SELECT count(*) FROM handoffs") == [(0,)]

    notice = await next_message(
        fake_telegram, CUSTOMER, callback_update(CUSTOMER, "handoff:start", language_code="en")
    )
    assert seen_text(notice.text) == HANDOFF_WORDS["en"].handoff_started
    assert query(database_path, "SELECT source FROM handoffs") == [("button",)]
    await fake_telegram.wait_for_call("answerCallbackQuery")
    # pressed again: already with a person, no second brief
    again = await next_message(
        fake_telegram, CUSTOMER, callback_update(CUSTOMER, "handoff:start", language_code="en")
    )
    assert seen_text(again.text) == HANDOFF_WORDS["en"].handoff_already
    assert len(fake_telegram.messages_to(OPERATORS)) == 1


async def test_a_deleted_topic_is_created_again_on_the_next_message(
    start_bot: StartBot,
    fake_telegram: FakeTelegramServer,
    database_path: Path,
) -> None:
    await start(start_bot, fake_telegram)
    old_topic = await handed_over(fake_telegram)
    fake_telegram.delete_topic(OPERATORS, old_topic)
    photo = photo_update(CUSTOMER, caption="вот чек")
    fake_telegram.enqueue_update(photo)
    await fake_telegram.wait_until(lambda: len(fake_telegram.calls_of("createForumTopic")) == 2)
    [(_, new_topic)] = list(fake_telegram.topics)
    assert new_topic != old_topic
    await fake_telegram.wait_until(
        lambda: any(m.kind == "copy" for m in fake_telegram.messages_in_topic(OPERATORS, new_topic))
    )
    mirror = next(
        m for m in fake_telegram.messages_in_topic(OPERATORS, new_topic) if m.kind == "copy"
    )
    assert mirror.copied_from == (CUSTOMER, photo["message"]["message_id"])
    await wait_for_db(
        database_path,
        "SELECT status FROM updates WHERE update_id = ?",
        [("delivered",)],
        photo["update_id"],
    )
    # operators' replies in the new topic reach the customer
    relayed = await next_message(
        fake_telegram,
        CUSTOMER,
        topic_message_update(OPERATORS, new_topic, text="Спасибо, видим", user_id=OPERATOR_USER),
    )
    assert relayed.kind == "copy"


async def test_a_sticker_is_not_passed_on_and_the_customer_is_told(
    start_bot: StartBot, fake_telegram: FakeTelegramServer
) -> None:
    await start(start_bot, fake_telegram)
    topic_id = await handed_over(fake_telegram)
    sticker = {
        "file_id": "s",
        "file_unique_id": "s1",
        "type": "regular",
        "width": 512,
        "height": 512,
        "is_animated": False,
        "is_video": False,
    }
    note = await next_message(
        fake_telegram, CUSTOMER, message_update(CUSTOMER, extra={"sticker": sticker})
    )
    assert seen_text(note.text) == HANDOFF_WORDS["ru"].handoff_not_relayed
    assert [m.kind for m in fake_telegram.messages_in_topic(OPERATORS, topic_id)] == ["text"]


async def _exits_2_naming_operator_chat(
    bot_base_env: dict[str, str], tmp_path: Path, fragment: str
) -> None:
    env = {**bot_base_env, "OPERATOR_CHAT_ID": str(OPERATORS)}
    process = await BotProcess(env, tmp_path).start()
    try:
        code = await process.wait_exit()
    finally:
        await process.kill()  # nothing left running if it did not stop by itself
    assert code == 2
    errors = [line for line in process.lines if line.startswith("error:")]
    assert len(errors) == 1, process.output
    assert f"OPERATOR_CHAT_ID {OPERATORS}" in errors[0] and fragment in errors[0]
    assert "ready" not in process.output


async def test_start_stops_when_the_operator_chat_is_unknown(
    bot_base_env: dict[str, str], fake_telegram: FakeTelegramServer, tmp_path: Path
) -> None:
    await _exits_2_naming_operator_chat(bot_base_env, tmp_path, "does not know this chat")


async def test_start_stops_when_the_operator_chat_is_not_a_forum(
    bot_base_env: dict[str, str], fake_telegram: FakeTelegramServer, tmp_path: Path
) -> None:
    fake_telegram.add_forum(OPERATORS, is_forum=False)
    await _exits_2_naming_operator_chat(bot_base_env, tmp_path, "not a forum")


async def test_start_stops_when_the_bot_may_not_manage_topics(
    bot_base_env: dict[str, str], fake_telegram: FakeTelegramServer, tmp_path: Path
) -> None:
    fake_telegram.add_forum(OPERATORS, can_manage_topics=False)
    await _exits_2_naming_operator_chat(bot_base_env, tmp_path, "Manage topics")
    fake_telegram.add_forum(OPERATORS, bot_status="member")
    await _exits_2_naming_operator_chat(bot_base_env, tmp_path, "Manage topics")


async def test_start_stops_when_the_operator_chat_is_a_public_group(
    bot_base_env: dict[str, str], fake_telegram: FakeTelegramServer, tmp_path: Path
) -> None:
    """Briefs carry order data and every customer message: a group with a username is
    readable by anyone, so it is refused before anything is posted there."""
    fake_telegram.add_forum(OPERATORS, username="shop_operators")
    await _exits_2_naming_operator_chat(bot_base_env, tmp_path, "public")
    assert fake_telegram.messages_to(OPERATORS) == []


async def test_a_failed_turn_offers_the_person_button_and_it_works(
    start_bot: StartBot,
    fake_telegram: FakeTelegramServer,
    fake_openai: FakeOpenAIServer,
    database_path: Path,
) -> None:
    fake_openai.handler = lambda body: error(500)
    await start(start_bot, fake_telegram)
    apology = await next_message(fake_telegram, CUSTOMER, message_update(CUSTOMER, text="Привет"))
    [[button]] = (apology.reply_markup or {})["inline_keyboard"]
    assert button == {"text": HANDOFF_WORDS["ru"].operator_button, "callback_data": "handoff:start"}
    notice = await next_message(
        fake_telegram, CUSTOMER, callback_update(CUSTOMER, button["callback_data"])
    )
    assert seen_text(notice.text) == HANDOFF_WORDS["ru"].handoff_started
    assert query(database_path, "SELECT source FROM handoffs") == [("button",)]


async def test_outside_working_hours_the_customer_is_told_when_people_answer(
    start_bot: StartBot, fake_telegram: FakeTelegramServer
) -> None:
    now = datetime.now(UTC)
    later = now + timedelta(hours=3)  # a one-hour window that starts in three hours
    hours = f"{later:%H}:00-{(later + timedelta(hours=1)):%H}:00"
    await start(start_bot, fake_telegram, OPERATOR_HOURS=hours, OPERATOR_UTC_OFFSET="0")
    notice = await next_message(
        fake_telegram, CUSTOMER, message_update(CUSTOMER, text="/operator", language_code="en")
    )
    label = f"{later:%H}:00–{(later + timedelta(hours=1)):%H}:00 (UTC)"
    assert seen_text(notice.text) == HANDOFF_WORDS["en"].off_hours_for(label)


async def test_closing_the_topic_ends_the_handoff_and_reopening_it_changes_nothing(
    start_bot: StartBot,
    fake_telegram: FakeTelegramServer,
    fake_openai: FakeOpenAIServer,
    database_path: Path,
) -> None:
    await start(start_bot, fake_telegram)
    topic_id = await handed_over(fake_telegram)
    closed = await next_message(
        fake_telegram, CUSTOMER, topic_closed_update(OPERATORS, topic_id, user_id=OPERATOR_USER)
    )
    assert seen_text(closed.text) == HANDOFF_WORDS["ru"].handoff_closed
    assert query(database_path, "SELECT close_reason FROM handoffs") == [("topic_closed",)]
    again = topic_closed_update(OPERATORS, topic_id, user_id=OPERATOR_USER)
    reopened = topic_message_update(
        OPERATORS, topic_id, user_id=OPERATOR_USER, extra={"forum_topic_reopened": {}}
    )
    fake_telegram.enqueue_update(again)
    fake_telegram.enqueue_update(reopened)
    await finished(database_path, [again["update_id"], reopened["update_id"]])
    reasons = query(
        database_path,
        "SELECT reason FROM updates WHERE update_id IN (?, ?) ORDER BY update_id",
        again["update_id"],
        reopened["update_id"],
    )
    assert reasons == [("handoff_not_open",), ("handoff_service_message",)]
    assert len(fake_telegram.messages_to(CUSTOMER)) == 2  # the notice and the close
    assert len(fake_telegram.messages_to(OPERATORS)) == 1  # the brief only
    # the AI answers the customer again
    answer = await next_message(fake_telegram, CUSTOMER, message_update(CUSTOMER, text="Привет"))
    assert answer.kind == "text" and "Здравствуйте" in answer.plain_text


async def test_a_voice_note_during_a_handoff_goes_to_the_operators_untranscribed(
    start_bot: StartBot,
    fake_telegram: FakeTelegramServer,
    fake_openai: FakeOpenAIServer,
    database_path: Path,
) -> None:
    # transcription is on, yet an open handoff sends the note itself to the operators
    await start(start_bot, fake_telegram, TRANSCRIPTION_MODEL="whisper-1")
    topic_id = await handed_over(fake_telegram)
    fake_telegram.add_file("voice-h1", b"Where is my order 8041?")
    note = voice_update(CUSTOMER, file_id="voice-h1", duration=5)
    fake_telegram.enqueue_update(note)
    await fake_telegram.wait_until(
        lambda: len(fake_telegram.messages_in_topic(OPERATORS, topic_id)) == 2
    )
    await finished(database_path, [note["update_id"]])
    mirror = fake_telegram.messages_in_topic(OPERATORS, topic_id)[1]
    assert mirror.copied_from == (CUSTOMER, note["message"]["message_id"])
    assert fake_openai.transcriptions == [] and fake_openai.chat_requests == []
    assert fake_telegram.calls_of("getFile") == []
    assert len(fake_telegram.messages_to(CUSTOMER)) == 1  # only the handoff notice


def _faithful_summaries(body: Body) -> FakeReply:
    """Chat turns as usual; a summary carries the previous one forward and keeps the
    opening words of every folded message, as a careful summary keeps every promise and
    question (short enough for SUMMARY_MAX_TOKENS)."""
    if body.get("tools"):
        return default_script(body)
    data = str(body["messages"][-1]["content"])
    previous = data.split("<previous_summary>", 1)[1].split("</previous_summary>", 1)[0]
    kept = [previous.strip().removeprefix("Кратко:").strip()] if previous.strip() else []
    kept += [
        line.split(":", 1)[1].split("]")[-1].strip()[:28]
        for line in data.splitlines()
        if line.startswith(("customer:", "assistant:"))
    ]
    return completion(text="Кратко: " + " | ".join(kept))


async def test_a_long_handoff_reaches_the_first_answer_after_close(
    start_bot: StartBot,
    fake_telegram: FakeTelegramServer,
    fake_openai: FakeOpenAIServer,
    database_path: Path,
) -> None:
    """Twelve long operator replies are more than the history window holds: the first AI
    answer after /close still sees every promise, the conversation before the handoff and
    the customer's message after the last reply (the newest in the window, the rest in
    the summary the turn waited for)."""
    fake_openai.handler = _faithful_summaries
    await start(start_bot, fake_telegram)
    await next_message(
        fake_telegram, CUSTOMER, message_update(CUSTOMER, text="Нужна подарочная упаковка")
    )
    topic_id = await handed_over(fake_telegram)
    question = message_update(CUSTOMER, text="Верните деньги за заказ 8041")
    fake_telegram.enqueue_update(question)
    await finished(database_path, [question["update_id"]])
    for number in range(1, 13):
        promise = f"Обещание {number}: вернём часть суммы. " + "подробности " * 55
        await next_message(
            fake_telegram,
            CUSTOMER,
            topic_message_update(OPERATORS, topic_id, text=promise, user_id=OPERATOR_USER),
        )
    after = message_update(CUSTOMER, text="И упакуйте в синюю бумагу")
    fake_telegram.enqueue_update(after)
    await finished(database_path, [after["update_id"]])
    await next_message(
        fake_telegram,
        CUSTOMER,
        topic_message_update(OPERATORS, topic_id, text="/close", user_id=OPERATOR_USER),
    )

    await next_message(fake_telegram, CUSTOMER, message_update(CUSTOMER, text="Что мне обещали?"))
    body = next(b for b in fake_openai.chat_requests if last_user_text(b) == "Что мне обещали?")
    seen = "\n".join(str(m.get("content")) for m in body["messages"])
    for number in range(1, 13):
        assert f"Обещание {number}:" in seen
    assert "Нужна подарочная упаковка" in seen
    assert "Верните деньги за заказ 8041" in seen
    assert "И упакуйте в синюю бумагу" in seen


async def test_during_a_handoff_invisible_and_too_long_messages_are_refused_as_in_chat(
    start_bot: StartBot,
    fake_telegram: FakeTelegramServer,
    fake_openai: FakeOpenAIServer,
    database_path: Path,
) -> None:
    limit = 40
    await start(start_bot, fake_telegram, MAX_INPUT_CHARS=str(limit))
    topic_id = await handed_over(fake_telegram)
    in_topic = len(fake_telegram.messages_in_topic(OPERATORS, topic_id))
    invisible = "\u200b\u2060\u3164"  # zero-width space, word joiner, Hangul filler
    too_long = "Верните деньги " + "а" * limit
    empty = await next_message(fake_telegram, CUSTOMER, message_update(CUSTOMER, text=invisible))
    assert seen_text(empty.text) == RU_TEMPLATES.empty_message
    long_ = await next_message(fake_telegram, CUSTOMER, message_update(CUSTOMER, text=too_long))
    assert seen_text(long_.text) == RU_TEMPLATES.too_long_for(limit)
    # neither reached the operators, nor the history the model reads after /close
    assert len(fake_telegram.messages_in_topic(OPERATORS, topic_id)) == in_topic
    closed = await next_message(
        fake_telegram,
        CUSTOMER,
        topic_message_update(OPERATORS, topic_id, text="/close", user_id=OPERATOR_USER),
    )
    assert seen_text(closed.text) == HANDOFF_WORDS["ru"].handoff_closed
    await next_message(fake_telegram, CUSTOMER, message_update(CUSTOMER, text="Что с заказом?"))
    body = next(b for b in fake_openai.chat_requests if last_user_text(b) == "Что с заказом?")
    said = [str(m.get("content")) for m in body["messages"] if m["role"] == "user"]
    assert not any(invisible in text or "Верните деньги" in text for text in said)
