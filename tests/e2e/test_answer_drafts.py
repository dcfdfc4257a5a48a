"""Drafts from operators' answers through the real process: a closed handoff puts a
question and answer before the admin (masked); ✅ adds it to the knowledge, ✖ discards
it — nothing enters without a person's press."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from tests.e2e.chat_helpers import WAIT_S, StartBot, query, wait_for_db
from tests.e2e.test_handoff import (
    CUSTOMER,
    OPERATOR_USER,
    OPERATORS,
    handed_over,
    next_message,
    start,
)
from tests.fakes.openai_server import Body, FakeOpenAIServer, FakeReply, completion, default_script
from tests.fakes.telegram_server import (
    FakeTelegramServer,
    SentMessage,
    callback_update,
    message_update,
    topic_message_update,
)

ADMIN = 7398
DRAFTS = [
    "QUESTION: Можно забрать заказ самому? (Ольга, +7 912 345-67-89)\n"
    "ANSWER: Да, самовывоз с Ленина 5 по будням 10-19.",
    "QUESTION: Есть доставка в Казань?\nANSWER: Да, курьером за 2 дня.",
]


def drafting(body: Body) -> FakeReply:
    """The default model, and a draft for each request to draft from a handoff."""
    system = str((body.get("messages") or [{}])[0].get("content", ""))
    if system.startswith("You write entries for an online shop's knowledge base"):
        return completion(text=DRAFTS.pop(0))
    return default_script(body)


async def closed_handoff(telegram: FakeTelegramServer, operator_says: str) -> None:
    topic_id = await handed_over(telegram)
    telegram.enqueue_update(message_update(CUSTOMER, text="Можно забрать самому? +7 912 345 67 89"))
    await next_message(
        telegram,
        CUSTOMER,
        topic_message_update(OPERATORS, topic_id, text=operator_says, user_id=OPERATOR_USER),
    )
    await next_message(
        telegram,
        CUSTOMER,
        topic_message_update(OPERATORS, topic_id, text="/close", user_id=OPERATOR_USER),
    )


async def next_draft(telegram: FakeTelegramServer, seen: int) -> SentMessage:
    messages = await telegram.wait_for_messages(ADMIN, seen + 1, within=WAIT_S)
    return messages[seen]


async def press(telegram: FakeTelegramServer, draft: SentMessage, label: str) -> str:
    rows = (draft.reply_markup or {}).get("inline_keyboard") or []
    [data] = [b["callback_data"] for row in rows for b in row if b["text"] == label]
    before = len(telegram.messages_to(ADMIN))
    telegram.enqueue_update(
        callback_update(ADMIN, data=data, message_id=draft.message_id, language_code="en")
    )
    return (await telegram.wait_for_messages(ADMIN, before + 1, within=WAIT_S))[before].text


def entries(database: Path) -> list[tuple[Any, ...]]:
    return query(
        database,
        "SELECT d.title, p.text FROM knowledge_passages AS p"
        " JOIN knowledge_documents AS d ON d.id = p.document_id"
        " WHERE d.location LIKE 'entry:%'",  # the answers added one at a time
    )


async def test_a_closed_handoff_gives_a_draft_that_tick_adds_and_cross_discards(
    start_bot: StartBot,
    fake_telegram: FakeTelegramServer,
    fake_openai: FakeOpenAIServer,
    database_path: Path,
) -> None:
    fake_openai.handler = drafting
    await start(start_bot, fake_telegram, ADMIN_IDS=str(ADMIN), ANSWER_DRAFTS_EVERY_S="0.2")
    await closed_handoff(fake_telegram, "Да, самовывоз с Ленина 5 по будням 10-19.")
    draft = await next_draft(fake_telegram, 0)
    assert "самовывоз с Ленина 5" in draft.text
    assert "Ольга" not in draft.text and "912" not in draft.text  # masked
    assert entries(database_path) == []  # nothing without ✅

    added = await press(fake_telegram, draft, "✅ Добавить")
    assert added.startswith("✅ Added to the shop's answers")
    [(title, text)] = entries(database_path)
    assert "самовывоз" in text and "912" not in title
    assert await press(fake_telegram, draft, "✖ Пропустить") == "This draft was decided already."

    await closed_handoff(fake_telegram, "Да, в Казань курьером за 2 дня.")
    second = await next_draft(fake_telegram, len(fake_telegram.messages_to(ADMIN)))
    assert "Казань" in second.text
    assert await press(fake_telegram, second, "✖ Пропустить") == "✖ Skipped; nothing was added."
    assert len(entries(database_path)) == 1

    # the operators see their topics, never /gaps or another conversation: not even an
    # admin's command in their group is answered there
    in_group = len(fake_telegram.messages_to(OPERATORS))
    asked = [
        message_update(OPERATORS, text=text, user_id=ADMIN)
        for text in ("/gaps", f"/chat {CUSTOMER}")
    ]
    for update in asked:
        fake_telegram.enqueue_update(update)
    ignored = "SELECT reason FROM updates WHERE update_id IN (?, ?)"
    ids = [u["update_id"] for u in asked]
    await wait_for_db(database_path, ignored, [("operator_chat_other",)] * 2, *ids)
    assert len(fake_telegram.messages_to(OPERATORS)) == in_group
    assert query(database_path, "SELECT count(*) FROM conversation_views") == [(0,)]
