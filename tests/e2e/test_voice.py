"""Voice notes through the real process: heard, answered from the tools, refused politely.

The fake Bot API serves the note (getFile and the file download); the fake OpenAI server
transcribes it — the fake reads the "audio" bytes as the words said, unless a test
scripts another text for them.
"""

from __future__ import annotations

import asyncio
from pathlib import Path

import pytest

from bot.telegram.routers.voice import VOICE_WORDS
from bot.telegram.texts import EN, RU
from tests.e2e.chat_helpers import WAIT_S, query, results_for, seen_text, wait_for_db
from tests.e2e.conftest import StartBot
from tests.fakes.openai_server import FakeOpenAIServer, default_script, error
from tests.fakes.telegram_server import (
    FakeTelegramServer,
    message_update,
    video_note_update,
    voice_update,
)

pytestmark = pytest.mark.both_backends

CHAT = 5105
ADMIN = 5199
QUESTION = "Где сейчас находится заказ 8041?"
VOICE_ON = {"TRANSCRIPTION_MODEL": "whisper-1"}


async def send_voice(
    telegram: FakeTelegramServer,
    said: str | bytes,
    *,
    file_id: str = "voice-1",
    duration: int = 4,
    chat_id: int = CHAT,
    **kwargs: object,
) -> int:
    """A customer's voice note whose audio the fake transcribes as `said`."""
    telegram.add_file(file_id, said.encode() if isinstance(said, str) else said)
    return telegram.enqueue_update(
        voice_update(chat_id, file_id=file_id, duration=duration, **kwargs)  # type: ignore[arg-type]
    )


async def next_reply(telegram: FakeTelegramServer, chat_id: int = CHAT) -> str:
    before = len(telegram.messages_to(chat_id))
    messages = await telegram.wait_for_messages(chat_id, before + 1, within=WAIT_S)
    return seen_text(messages[before].text)


async def test_voice_note_about_an_order_is_answered_from_the_tool(
    start_bot: StartBot,
    fake_telegram: FakeTelegramServer,
    fake_openai: FakeOpenAIServer,
    database_path: Path,
) -> None:
    bot = await start_bot(**VOICE_ON)
    await send_voice(fake_telegram, QUESTION)
    [message] = await fake_telegram.wait_for_messages(CHAT, 1, within=WAIT_S)
    answer = message.plain_text

    # the customer sees what was heard, then the answer built from the order tool
    assert answer.startswith(f"{RU.of(VOICE_WORDS).voice_heard} «{QUESTION}»\n\n"), answer
    assert message.text.startswith("<i>")
    [result] = results_for(fake_openai, QUESTION)
    assert result["ok"] is True and result["data"]["order_id"] == "8041"
    assert "8041" in answer.split("\n\n", 1)[1]
    # downloaded once through the Bot API, transcribed with the configured model
    assert [c.params["file_id"] for c in fake_telegram.calls_of("getFile")] == ["voice-1"]
    assert fake_telegram.downloads == ["voice/voice-1.oga"]
    [asked] = fake_openai.transcriptions
    assert asked["model"] == "whisper-1" and asked["filename"] == "voice.ogg"
    # the history holds the transcript as the customer's text, marked as transcribed
    await wait_for_db(
        database_path,
        "SELECT role, content, transcribed FROM messages ORDER BY id",
        [("user", QUESTION, 1), ("assistant", answer.split("\n\n", 1)[1], 0)],
    )
    # the transcript is not kept beside the history once the reply is stored
    await wait_for_db(
        database_path,
        "SELECT status, transcript IS NULL FROM voice_notes",
        [("transcribed", 1)],
    )
    # neither the words nor the token reach the log (the demo's seeding line names its
    # order numbers, and is no customer's words)
    logged = "\n".join(line for line in bot.output.splitlines() if "demo shop data" not in line)
    assert QUESTION not in logged and "8041" not in logged
    assert fake_telegram.token not in bot.output


async def test_a_typed_follow_up_sees_the_voice_note_in_history(
    start_bot: StartBot, fake_telegram: FakeTelegramServer, fake_openai: FakeOpenAIServer
) -> None:
    await start_bot(**VOICE_ON)
    await send_voice(fake_telegram, QUESTION)
    await next_reply(fake_telegram)
    fake_telegram.enqueue_update(message_update(CHAT, text="Спасибо!"))
    await fake_telegram.wait_for_messages(CHAT, 2, within=WAIT_S)
    last = fake_openai.chat_requests[-1]
    users = [m["content"] for m in last["messages"] if m["role"] == "user"]
    assert users == [QUESTION, "Спасибо!"]


async def test_round_video_note_is_heard_too(
    start_bot: StartBot, fake_telegram: FakeTelegramServer, fake_openai: FakeOpenAIServer
) -> None:
    await start_bot(**VOICE_ON)
    said = "Where is my order 8041 now?"
    fake_telegram.add_file("round-1", said.encode())
    fake_telegram.enqueue_update(
        video_note_update(CHAT, file_id="round-1", duration=9, language_code="en")
    )
    answer = await next_reply(fake_telegram)
    assert answer.startswith(f"{EN.of(VOICE_WORDS).voice_heard} “{said}”\n\n"), answer
    assert "8041" in answer
    assert fake_openai.transcriptions[0]["filename"] == "video_note.mp4"


async def test_over_long_note_is_refused_without_download(
    start_bot: StartBot,
    fake_telegram: FakeTelegramServer,
    fake_openai: FakeOpenAIServer,
    database_path: Path,
) -> None:
    await start_bot(**VOICE_ON, VOICE_MAX_SECONDS="30")
    await send_voice(fake_telegram, QUESTION, duration=31)
    answer = await next_reply(fake_telegram)
    assert answer == seen_text(RU.of(VOICE_WORDS).voice_too_long_for(30))
    assert fake_telegram.calls_of("getFile") == []
    assert fake_telegram.downloads == []
    assert fake_openai.transcriptions == [] and fake_openai.chat_requests == []
    await wait_for_db(database_path, "SELECT status FROM voice_notes", [("too_long",)])


async def test_failing_transcription_gets_the_polite_reply_and_no_model_turn(
    start_bot: StartBot,
    fake_telegram: FakeTelegramServer,
    fake_openai: FakeOpenAIServer,
    database_path: Path,
) -> None:
    fake_openai.transcription_reply = error(500, "transcriber down")
    await start_bot(**VOICE_ON)
    await send_voice(fake_telegram, QUESTION)
    assert await next_reply(fake_telegram) == seen_text(RU.of(VOICE_WORDS).voice_not_understood)
    assert len(fake_openai.transcriptions) == 1
    assert fake_openai.chat_requests == []
    await wait_for_db(
        database_path, "SELECT status, error_code FROM voice_notes", [("failed", "unavailable")]
    )
    assert query(database_path, "SELECT count(*) FROM messages") == [(0,)]


async def test_nothing_heard_gets_the_polite_reply_and_no_model_turn(
    start_bot: StartBot,
    fake_telegram: FakeTelegramServer,
    fake_openai: FakeOpenAIServer,
    database_path: Path,
) -> None:
    fake_openai.transcripts[b"silence"] = " \u200b "  # only characters that render as nothing
    await start_bot(**VOICE_ON)
    await send_voice(fake_telegram, b"silence")
    assert await next_reply(fake_telegram) == seen_text(RU.of(VOICE_WORDS).voice_not_understood)
    assert fake_openai.chat_requests == []
    await wait_for_db(
        database_path, "SELECT status, error_code FROM voice_notes", [("failed", "empty")]
    )


async def test_a_file_telegram_cannot_serve_gets_the_polite_reply(
    start_bot: StartBot, fake_telegram: FakeTelegramServer, fake_openai: FakeOpenAIServer
) -> None:
    await start_bot(**VOICE_ON)
    fake_telegram.enqueue_update(voice_update(CHAT, file_id="gone", duration=3))
    assert await next_reply(fake_telegram) == seen_text(RU.of(VOICE_WORDS).voice_not_understood)
    assert fake_openai.transcriptions == [] and fake_openai.chat_requests == []


async def test_a_file_path_leaving_the_file_folder_is_not_followed(
    start_bot: StartBot, fake_telegram: FakeTelegramServer, fake_openai: FakeOpenAIServer
) -> None:
    """A getFile answer is data from outside: `../` in its path would turn the download
    into a request for another URL of the Bot API server (here a Bot API method)."""
    await start_bot(**VOICE_ON)
    escape = f"voice/../../../bot{fake_telegram.token}/getMe"
    fake_telegram.add_file("escape", b"OggS-not-heard", file_path=escape)
    calls_before = len(fake_telegram.calls)
    fake_telegram.enqueue_update(voice_update(CHAT, file_id="escape", duration=3))
    assert await next_reply(fake_telegram) == seen_text(RU.of(VOICE_WORDS).voice_not_understood)
    made = [call.method for call in fake_telegram.calls[calls_before:]]
    assert "getMe" not in made and fake_telegram.downloads == []
    assert fake_openai.transcriptions == [] and fake_openai.chat_requests == []


async def test_without_a_transcription_model_voice_gets_the_text_only_reply(
    start_bot: StartBot, fake_telegram: FakeTelegramServer, fake_openai: FakeOpenAIServer
) -> None:
    await start_bot()
    await send_voice(fake_telegram, QUESTION)
    assert await next_reply(fake_telegram) == seen_text(RU.text_only)
    assert fake_telegram.calls_of("getFile") == [] and fake_openai.transcriptions == []


async def test_a_model_the_endpoint_lacks_turns_transcription_off(
    start_bot: StartBot, fake_telegram: FakeTelegramServer, fake_openai: FakeOpenAIServer
) -> None:
    bot = await start_bot(TRANSCRIPTION_MODEL="whisper-9")
    await send_voice(fake_telegram, QUESTION, file_id="a")
    assert await next_reply(fake_telegram) == seen_text(RU.text_only)
    await send_voice(fake_telegram, QUESTION, file_id="b")
    assert await next_reply(fake_telegram) == seen_text(RU.text_only)
    # asked once; after "no such model" the bot stops asking, and says so once
    assert len(fake_openai.transcriptions) == 1
    assert fake_openai.chat_requests == []
    warnings = [line for line in bot.lines if "TRANSCRIPTION_MODEL" in line]
    assert len(warnings) == 1 and "whisper-9" in warnings[0]


async def test_killed_mid_transcription_answers_once_after_restart(
    start_bot: StartBot,
    fake_telegram: FakeTelegramServer,
    fake_openai: FakeOpenAIServer,
    database_path: Path,
) -> None:
    hold = asyncio.Event()
    fake_openai.transcription_hold = hold
    bot = await start_bot(**VOICE_ON)
    update_id = await send_voice(fake_telegram, QUESTION)
    await fake_openai.wait_for_transcriptions(1)
    await bot.kill()
    assert fake_telegram.messages_to(CHAT) == []
    assert query(database_path, "SELECT status FROM updates WHERE update_id = ?", update_id) == [
        ("pending",)
    ]

    fake_openai.transcription_hold = None
    hold.set()
    await start_bot(**VOICE_ON)
    # a later /help in the same chat is handled after the note: when its reply is
    # there, any duplicate answer to the note would be there too
    fake_telegram.enqueue_update(message_update(CHAT, text="/help"))
    messages = await fake_telegram.wait_for_messages(CHAT, 2)
    assert len(messages) == 2, [m.text for m in messages]
    assert messages[0].plain_text.startswith(f"{RU.of(VOICE_WORDS).voice_heard} «{QUESTION}»")
    assert "8041" in messages[0].plain_text
    assert "/new" in messages[1].plain_text
    await wait_for_db(
        database_path,
        "SELECT status FROM updates WHERE update_id = ?",
        [("delivered",)],
        update_id,
    )
    assert query(database_path, "SELECT status FROM voice_notes") == [("transcribed",)]
    assert len(fake_openai.chat_requests) >= 1
    assert query(database_path, "SELECT count(*) FROM turns") == [(1,)]


async def test_stats_count_voice_notes(
    start_bot: StartBot, fake_telegram: FakeTelegramServer, fake_openai: FakeOpenAIServer
) -> None:
    await start_bot(**VOICE_ON, ADMIN_IDS=str(ADMIN))
    await send_voice(fake_telegram, QUESTION, file_id="ok", duration=7)
    await next_reply(fake_telegram)
    await send_voice(fake_telegram, QUESTION, file_id="long", duration=600)
    await next_reply(fake_telegram)
    fake_openai.transcription_reply = error(500)
    await send_voice(fake_telegram, QUESTION, file_id="bad", duration=3)
    await next_reply(fake_telegram)

    fake_telegram.enqueue_update(message_update(ADMIN, text="/stats", language_code="en"))
    [table, *_] = await fake_telegram.wait_for_messages(ADMIN, 1, within=WAIT_S)
    lines = [" ".join(line.split()) for line in table.plain_text.splitlines()]
    assert "VOICE NOTES 3" in lines
    assert "transcribed 1" in lines
    assert "not understood 1" in lines
    assert "too long 1" in lines
    assert "audio transcribed 7 s" in lines


async def _exactly_one_heard_answer(telegram: FakeTelegramServer) -> str:
    """The answer to the note, checked to be the only one (a later /help comes after it)."""
    telegram.enqueue_update(message_update(CHAT, text="/help"))
    messages = await telegram.wait_for_messages(CHAT, 2)
    assert len(messages) == 2, [m.text for m in messages]
    assert "/new" in messages[1].plain_text
    return messages[0].plain_text


async def test_killed_mid_download_answers_once_after_restart(
    start_bot: StartBot,
    fake_telegram: FakeTelegramServer,
    fake_openai: FakeOpenAIServer,
    database_path: Path,
) -> None:
    hold = asyncio.Event()
    fake_telegram.download_hold = hold
    bot = await start_bot(**VOICE_ON)
    await send_voice(fake_telegram, QUESTION)
    await fake_telegram.wait_until(lambda: bool(fake_telegram.downloads))
    await bot.kill()
    assert fake_openai.transcriptions == []

    fake_telegram.download_hold = None
    hold.set()
    await start_bot(**VOICE_ON)
    answer = await _exactly_one_heard_answer(fake_telegram)
    assert answer.startswith(f"{RU.of(VOICE_WORDS).voice_heard} «{QUESTION}»") and "8041" in answer
    assert len(fake_openai.transcriptions) == 1


async def test_killed_after_transcription_does_not_transcribe_again(
    start_bot: StartBot,
    fake_telegram: FakeTelegramServer,
    fake_openai: FakeOpenAIServer,
    database_path: Path,
) -> None:
    release = fake_openai.hold_answers()  # the model turn hangs after the note was heard
    bot = await start_bot(**VOICE_ON)
    await send_voice(fake_telegram, QUESTION)
    await fake_openai.wait_for_requests(1)
    assert query(database_path, "SELECT status, transcript FROM voice_notes") == [
        ("transcribed", QUESTION)
    ]
    await bot.kill()

    fake_openai.handler = default_script
    release.set()
    await start_bot(**VOICE_ON)
    answer = await _exactly_one_heard_answer(fake_telegram)
    assert answer.startswith(f"{RU.of(VOICE_WORDS).voice_heard} «{QUESTION}»") and "8041" in answer
    assert len(fake_openai.transcriptions) == 1  # the stored transcript was used
    assert fake_telegram.downloads == ["voice/voice-1.oga"]
    await wait_for_db(database_path, "SELECT transcript FROM voice_notes", [(None,)])
