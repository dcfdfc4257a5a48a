"""The token estimate and the history window: which stored pairs the model sees.

Estimate (documented, deterministic, provider-agnostic): a message costs
`ceil(len(content) / 4) + 4` tokens — about four characters per token plus a fixed
overhead for the role and framing. It is not the provider's tokenizer; it only has to
be consistent, so that one budget means the same thing on every turn.

Window: the newest history units (user/assistant pairs; around a handoff to a person
also single messages, see `to_pairs`), contiguous from the newest backwards, whose
estimated cost fits `HISTORY_TOKEN_BUDGET`. A pair is never split, and the window stops
at the first unit that does not fit (it never skips over one, so the conversation the
model sees has no holes). What the window leaves out must be in the running summary
(`leaves_out` tells; services/summarizer.py folds it). The new user message is not part
of the budget: it is always sent in full and is bounded by MAX_INPUT_CHARS before it
gets here.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Sequence
from dataclasses import dataclass

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
    """One exchange: the customer's message and the answer they got.

    Around a handoff to a person one side may be missing: a customer's message nobody
    answered yet, or an operator's second reply in a row, is a unit of its own (see
    `to_pairs`), so the window can hold a long handoff message by message.
    """

    user: StoredMessage | None
    assistant: StoredMessage | None

    @property
    def tokens(self) -> int:
        return sum(message_tokens(m.content) for m in self._present())

    @property
    def first_id(self) -> int:
        return self._present()[0].id

    @property
    def last_id(self) -> int:
        return self._present()[-1].id

    @property
    def complete(self) -> bool:
        return self.user is not None and self.assistant is not None

    def as_messages(self) -> list[dict[str, str]]:
        return [{"role": m.role, "content": m.content} for m in self._present()]

    def _present(self) -> list[StoredMessage]:
        return [m for m in (self.user, self.assistant) if m is not None]


def to_pairs(messages: Sequence[StoredMessage]) -> list[HistoryPair]:
    """The history units of stored messages, oldest first.

    A user message directly followed by an answer is a pair: a turn writes both in one
    transaction, and the window never splits them. Every other message is a unit alone:
    during a handoff to a person (services/handoff.py) the customer may write several
    messages before an operator answers, an operator may write several in a row, and the
    customer's last messages may have no reply yet. Kept one by one, nothing said to or by
    a person is lost and no unit grows beyond the budget because a handoff was long.

    A lone answer at the old edge of a limited read (its question was not read) is kept
    too; the window never reaches that far back (see `window_read_limit`).
    """
    units: list[HistoryPair] = []
    index = 0
    while index < len(messages):
        message = messages[index]
        following = messages[index + 1] if index + 1 < len(messages) else None
        if message.role == "user" and following is not None and following.role == "assistant":
            units.append(HistoryPair(user=message, assistant=following))
            index += 2
            continue
        if message.role == "user":
            units.append(HistoryPair(user=message, assistant=None))
        elif message.role == "assistant":
            units.append(HistoryPair(user=None, assistant=message))
        index += 1
    return units


def leaves_out(
    read: Sequence[StoredMessage], window: Sequence[HistoryPair], *, read_limit: int
) -> bool:
    """True when messages after the summary are not all in the window.

    They are then in neither (the summary has not folded them yet): the caller must let
    the summary catch up before the model reads the prompt, or say it could not.
    """
    if not read:
        return False
    return not window or window[0].first_id != read[0].id or len(read) >= read_limit


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
