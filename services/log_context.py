"""Which update, chat and turn the running code works for: ids for structured logs.

The intake's chat worker binds the update and chat it handles, the chat service the turn
it runs; `bot/runtime/logs.py` adds them as fields to every JSON log line written meanwhile
(LOG_FORMAT=json). Context variables, so each chat worker (an asyncio task) sees only its
own ids and a task started inside a turn keeps that turn's. Only ids, never content.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from contextvars import ContextVar

update_id_var: ContextVar[int | None] = ContextVar("update_id", default=None)
chat_id_var: ContextVar[int | None] = ContextVar("chat_id", default=None)
turn_id_var: ContextVar[str | None] = ContextVar("turn_id", default=None)


@contextmanager
def bound_update(update_id: int, chat_id: int | None) -> Iterator[None]:
    """Inside the block, log lines name this update and chat."""
    update_token = update_id_var.set(update_id)
    chat_token = chat_id_var.set(chat_id)
    try:
        yield
    finally:
        chat_id_var.reset(chat_token)
        update_id_var.reset(update_token)


@contextmanager
def bound_turn(turn_id: str) -> Iterator[None]:
    """Inside the block, log lines name this turn."""
    token = turn_id_var.set(turn_id)
    try:
        yield
    finally:
        turn_id_var.reset(token)


def current_ids() -> dict[str, int | str]:
    """The ids bound now (absent ones left out), for a log line's fields."""
    ids: dict[str, int | str] = {}
    update_id = update_id_var.get()
    if update_id is not None:
        ids["update_id"] = update_id
    chat_id = chat_id_var.get()
    if chat_id is not None:
        ids["chat_id"] = chat_id
    turn_id = turn_id_var.get()
    if turn_id is not None:
        ids["turn_id"] = turn_id
    return ids
