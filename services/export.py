"""Conversations as JSON Lines for the owner's own analysis (`support-bot export`).

One object per conversation (a session: from its first message to /new), oldest first:
the chat, when it ran, and its messages in order — the customer's, the bot's, an
operator's (during a handoff) and the tool calls of each turn as short records (name and
how it ended, never their arguments or results) — with each question's outcome
(services/outcomes.py). Masked by default (services/masking.py): the customers' phones,
e-mails, order numbers and names, and the chat id itself becomes a stable pseudonym, so
the file can be shared; `masked=False` writes what was said, as the owner's database
holds it.
"""

from __future__ import annotations

import hashlib
from collections.abc import AsyncIterator
from datetime import UTC, datetime
from typing import Any

from services.handoff import OPERATOR_PREFIX
from services.masking import mask
from storage.outcomes import ConversationLine, OutcomeRepository


def pseudonym(chat_id: int) -> str:
    """A stable stand-in for a chat id: the same chat, the same word, in every export."""
    return "chat-" + hashlib.sha256(f"support-bot:{chat_id}".encode()).hexdigest()[:12]


async def conversations(
    repo: OutcomeRepository, *, since: float, masked: bool = True, language: str = "en"
) -> AsyncIterator[dict[str, Any]]:
    """The conversations with a message at or after `since`, one dict each."""
    for session_id in await repo.sessions_since(since):
        chat_id, lines = await repo.session_lines(session_id)
        if not lines:
            continue
        yield {
            "chat": pseudonym(chat_id) if masked else chat_id,
            "conversation": session_id,
            "started": _iso(lines[0].at),
            "messages": [_message(line, masked, language) for line in lines],
        }


def _message(line: ConversationLine, masked: bool, language: str) -> dict[str, Any]:
    if line.kind == "tool":
        return {"at": _iso(line.at), "role": "tool", "tool": line.text, "status": line.status}
    role = "customer" if line.kind == "user" else "bot"
    text = line.text
    if role == "bot" and text.startswith(OPERATOR_PREFIX):
        role, text = "operator", text[len(OPERATOR_PREFIX) :]
    record: dict[str, Any] = {
        "at": _iso(line.at),
        "role": role,
        "text": mask(text, language) if masked else text,
    }
    if line.outcome is not None:
        record["outcome"] = line.outcome
    return record


def _iso(at: float) -> str:
    return datetime.fromtimestamp(at, UTC).isoformat(timespec="seconds")
