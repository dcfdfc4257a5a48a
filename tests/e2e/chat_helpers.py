"""Helpers for end-to-end tests that talk to the real bot process through the fakes.

What the fake model was asked and told (`last_user_text`, `results_for`), what the
customer saw (`seen_text`), what the database holds (`query`, a bounded `wait_for_db`),
and shop data loaded the way an owner does it (`import_shop`).
"""

from __future__ import annotations

import asyncio
import html
import json
import re
import sqlite3
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

from tests.e2e.harness import EXIT_WITHIN_S, BotProcess, PgDatabasePath
from tests.e2e.launch import PIPE, start_bot_process
from tests.fakes.openai_server import Body, FakeOpenAIServer, FakeReply, completion
from tests.fakes.telegram_server import FakeTelegramServer, message_update
from tests.pg import pg_query
from tests.waits import OUTER_LIMIT_S

StartBot = Callable[..., Awaitable[BotProcess]]
Script = Callable[[Body], FakeReply]

WAIT_S = OUTER_LIMIT_S


def last_user_text(body: Body) -> str:
    users = [m for m in body.get("messages") or [] if m.get("role") == "user"]
    content = users[-1].get("content") if users else ""
    return content if isinstance(content, str) else ""


def tool_messages(body: Body) -> list[dict[str, Any]]:
    """Tool results given to the model after the last user message, parsed."""
    messages = list(body.get("messages") or [])
    last_user = max(i for i, m in enumerate(messages) if m.get("role") == "user")
    return [json.loads(m["content"]) for m in messages[last_user:] if m.get("role") == "tool"]


def system_text(body: Body) -> str:
    return str(body["messages"][0]["content"])


def results_for(openai: FakeOpenAIServer, user_text: str) -> list[dict[str, Any]]:
    """Every tool result the model received while answering `user_text`."""
    bodies = [b for b in openai.chat_requests if last_user_text(b) == user_text]
    assert bodies, f"the model never saw {user_text!r}"
    return tool_messages(bodies[-1])


def tool_step(calls_for: Callable[[str], list[Body]], answer: Callable[[Body], str]) -> Script:
    """A model that calls tools for the user's text once, then answers from the results."""

    def script(body: Body) -> FakeReply:
        if not body.get("tools"):
            return completion(text="summary")
        messages = body["messages"]
        if messages[-1].get("role") != "tool" and body.get("tool_choice") != "none":
            calls = calls_for(last_user_text(body))
            if calls:
                return completion(tool_calls=calls)
        return completion(text=answer(body))

    return script


def seen_text(message_text: str) -> str:
    """What the customer reads: the HTML the bot sent, without tags and entities."""
    return html.unescape(re.sub(r"<[^>]+>", "", message_text))


def query(database: Path, sql: str, *params: Any) -> list[tuple[Any, ...]]:
    """Rows of `sql` (with `?` parameters) from the bot's database, SQLite or PostgreSQL."""
    if isinstance(database, PgDatabasePath):
        return pg_query(database.url, sql, *params)
    with sqlite3.connect(database) as conn:
        return list(conn.execute(sql, params))


async def wait_for_db(database: Path, sql: str, expected: Any, *params: Any) -> None:
    """Bounded wait until `sql` returns `expected` (the process writes asynchronously)."""
    async with asyncio.timeout(WAIT_S):
        while True:
            try:
                if query(database, sql, *params) == expected:
                    return
            except sqlite3.OperationalError:  # locked for a moment by the bot's writer
                pass
            await asyncio.sleep(0.05)


async def import_shop(env: dict[str, str], cwd: Path, shop: dict[str, Any]) -> None:
    """Load shop data the way an owner does: `python -m bot import-data FILE`."""
    file = cwd / "shop.json"
    file.write_text(json.dumps(shop, ensure_ascii=False), encoding="utf-8")
    proc = await start_bot_process(
        ["import-data", str(file)], env=env, cwd=cwd, stdout=PIPE, stderr=PIPE
    )
    out, err = await asyncio.wait_for(proc.communicate(), EXIT_WITHIN_S)
    assert proc.returncode == 0, (out + err).decode()


async def ask(telegram: FakeTelegramServer, chat_id: int, text: str, **kwargs: Any) -> str:
    """Send one message and return the text of the next reply in that chat."""
    before = len(telegram.messages_to(chat_id))
    telegram.enqueue_update(message_update(chat_id, text=text, **kwargs))
    messages = await telegram.wait_for_messages(chat_id, before + 1, within=WAIT_S)
    return seen_text(messages[before].text)


async def note_of_press(telegram: FakeTelegramServer, update: dict[str, Any]) -> str:
    """Enqueue a button press (a `callback_query` update); the note its button showed
    (the text of the answerCallbackQuery that answered it, "" for none)."""
    query_id = update["callback_query"]["id"]
    telegram.enqueue_update(update)
    call = await telegram.wait_for_call(
        "answerCallbackQuery",
        lambda c: c.params.get("callback_query_id") == query_id,
        within=WAIT_S,
    )
    return str(call.params.get("text") or "")


def finished_sql(update_ids: list[int]) -> str:
    marks = ",".join("?" * len(update_ids))
    return (
        f"SELECT count(*) FROM updates WHERE update_id IN ({marks})"
        " AND status NOT IN ('pending', 'answered')"
    )


async def wait_for_log(bot: BotProcess, fragment: str) -> None:
    """Bounded wait until the bot process has logged a line containing `fragment`."""
    async with asyncio.timeout(WAIT_S):
        while True:
            if any(fragment in line for line in bot.lines):
                return
            await asyncio.sleep(0.05)
