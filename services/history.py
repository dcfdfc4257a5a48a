"""The token estimate and the history window: which stored pairs the model sees.

Estimate (documented, deterministic, provider-agnostic): a message costs
`ceil(len(content) / 4) + 4` tokens — about four characters per token plus a fixed
overhead for the role and framing. It is not the provider's tokenizer; it only has to
be consistent, so that one budget means the same thing on every turn.

Window: the newest COMPLETE user/assistant pairs, contiguous from the newest backwards,
whose estimated cost fits `HISTORY_TOKEN_BUDGET`. A pair is never split, and the window
stops at the first pair that does not fit (it never skips over one, so the conversation
the model sees has no holes). The new user message is not part of the budget: it is
always sent in full and is bounded by MAX_INPUT_CHARS before it gets here.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, replace

from storage.conversations import StoredMessage

CHARS_PER_TOKEN = 4
MESSAGE_OVERHEAD_TOKENS = 4


def estimate_tokens(text: str) -> int:
    """Tokens of a piece of text (no per-message overhead)."""
    return math.ceil(len(text) / CHARS_PER_TOKEN)


def message_tokens(content: str) -> int:
    """Tokens of one chat message with this content."""
    return estimate_tokens(content) + MESSAGE_OVERHEAD_TOKENS


def prompt_tokens(messages: Iterable[dict[str, object]]) -> int:
    """Estimated size of a request's messages (text content only)."""
    total = 0
    for message in messages:
        content = message.get("content")
        total += message_tokens(content if isinstance(content, str) else "")
    return total


def truncate_to_tokens(text: str, max_tokens: int) -> str:
    """Cut text so that `estimate_tokens(result) <= max_tokens`."""
    limit = max(0, max_tokens) * CHARS_PER_TOKEN
    return text if len(text) <= limit else text[:limit]


@dataclass(frozen=True, slots=True)
class HistoryPair:
    """One exchange: the customer's message and the answer they got."""

    user: StoredMessage
    assistant: StoredMessage

    @property
    def tokens(self) -> int:
        return message_tokens(self.user.content) + message_tokens(self.assistant.content)

    @property
    def first_id(self) -> int:
        return self.user.id

    @property
    def last_id(self) -> int:
        return self.assistant.id

    def as_messages(self) -> list[dict[str, str]]:
        return [
            {"role": "user", "content": self.user.content},
            {"role": "assistant", "content": self.assistant.content},
        ]


def to_pairs(messages: Sequence[StoredMessage]) -> list[HistoryPair]:
    """Pair consecutive user→assistant messages (oldest first); orphans are dropped.

    Turns write pairs in one transaction, so orphans only appear at the edge of a
    limited read (an assistant message whose user message was not fetched). During a
    handoff to a person (services/handoff.py) the customer may write several messages
    before an operator answers, or an operator several in a row: consecutive messages
    of one role are joined into one, so nothing said to or by a person is lost.
    """
    pairs: list[HistoryPair] = []
    users: list[StoredMessage] = []
    previous_role = ""
    for message in messages:
        if message.role == "user":
            users.append(message)
        elif message.role == "assistant" and users:
            pairs.append(HistoryPair(user=_joined(users), assistant=message))
            users = []
        elif message.role == "assistant" and pairs and previous_role == "assistant":
            last = pairs[-1]
            pairs[-1] = HistoryPair(user=last.user, assistant=_joined([last.assistant, message]))
        previous_role = message.role
    return pairs


def _joined(messages: list[StoredMessage]) -> StoredMessage:
    """One message standing for consecutive ones of a role: the first's id for a user
    message, the last's for an answer (so a pair's ids still span it), contents joined."""
    if len(messages) == 1:
        return messages[0]
    keep = messages[0] if messages[0].role == "user" else messages[-1]
    return replace(keep, content="\n\n".join(m.content for m in messages))


def select_window(pairs: Sequence[HistoryPair], budget_tokens: int) -> list[HistoryPair]:
    """The newest contiguous pairs whose total estimate fits the budget, oldest first."""
    chosen: list[HistoryPair] = []
    used = 0
    for pair in reversed(pairs):
        if used + pair.tokens > budget_tokens:
            break
        chosen.append(pair)
        used += pair.tokens
    chosen.reverse()
    return chosen


def window_read_limit(budget_tokens: int) -> int:
    """How many newest messages are enough to fill any window of this budget.

    Every message costs at least MESSAGE_OVERHEAD_TOKENS, so no window holds more than
    budget / 4 messages; +2 covers an orphan at the edge. Reading is therefore bounded
    however long the conversation is.
    """
    return budget_tokens // MESSAGE_OVERHEAD_TOKENS + 2
