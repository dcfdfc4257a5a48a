"""The token estimate and the history window: which stored pairs the model sees.

Estimate (documented, deterministic, no tokenizer needed): text is counted by what it is
made of, with weights fitted to OpenAI's `cl100k_base` on the texts the bot really sends
(Russian and English messages, tool results as JSON, the instruction): a Cyrillic letter
0.48 and a Cyrillic word 0.45 more; a Latin word 1.1 plus 0.3 per letter beyond six; a
digit 0.85; any other symbol 0.65; a line break 0.8; then 4 per message for the role and
framing. On that corpus (312 texts) it is 8 % over for Russian, 12 % over in all, and
under by more than 10 % for 6 short texts (tests/unit/services/test_token_estimate.py);
four characters a token was 42 % under for Russian and 24 % for JSON. Newer tokenizers
(`o200k_base`, Qwen's) need fewer tokens for Russian, so the budget errs on the
safe side.

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
import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from functools import lru_cache

from storage.conversations import StoredMessage

MESSAGE_OVERHEAD_TOKENS = 4

_CYRILLIC_WORD = re.compile(r"[\u0400-\u04FF]+")
_LATIN_WORD = re.compile(r"[A-Za-z]+")
_DIGIT = re.compile(r"[0-9]")
_SYMBOL = re.compile(r"[^\sA-Za-z0-9\u0400-\u04FF]")
# the weights named in the module's docstring, fitted to cl100k_base
_CYRILLIC_LETTER, _CYRILLIC_WORD_EXTRA = 0.48, 0.45
_LATIN_WORD_COST, _LATIN_LONG_LETTER, _LATIN_SHORT_WORD = 1.1, 0.3, 6
_DIGIT_COST, _SYMBOL_COST, _LINE_BREAK_COST = 0.85, 0.65, 0.8


def estimate_tokens(text: str) -> int:
    """Tokens of a piece of text (no per-message overhead), never under by much."""
    if not text:
        return 0
    cyrillic = _CYRILLIC_WORD.findall(text)
    latin = _LATIN_WORD.findall(text)
    cost = (
        _CYRILLIC_LETTER * sum(map(len, cyrillic))
        + _CYRILLIC_WORD_EXTRA * len(cyrillic)
        + _LATIN_WORD_COST * len(latin)
        + _LATIN_LONG_LETTER * sum(max(0, len(w) - _LATIN_SHORT_WORD) for w in latin)
        + _DIGIT_COST * len(_DIGIT.findall(text))
        + _SYMBOL_COST * len(_SYMBOL.findall(text))
        + _LINE_BREAK_COST * text.count("\n")
    )
    return max(1, math.ceil(cost))


@lru_cache(maxsize=4096)  # a few MB of text at most
def message_tokens(content: str) -> int:
    """Tokens of one chat message with this content. Remembered: a conversation's window
    is estimated again on every turn (and by the summary), and counting by script costs
    ~17 us for a 260-character message where a cache hit costs well under 1 us."""
    return estimate_tokens(content) + MESSAGE_OVERHEAD_TOKENS


def prompt_tokens(messages: Iterable[dict[str, object]]) -> int:
    """Estimated size of a request's messages (text content only)."""
    total = 0
    for message in messages:
        content = message.get("content")
        total += message_tokens(content if isinstance(content, str) else "")
    return total


def truncate_to_tokens(text: str, max_tokens: int) -> str:
    """The longest start of `text` with `estimate_tokens(result) <= max_tokens`."""
    if estimate_tokens(text) <= max_tokens:
        return text
    if max_tokens <= 0:
        return ""
    low, high = 0, len(text)  # estimate(text[:low]) fits, text[:high] does not
    while high - low > 1:
        middle = (low + high) // 2
        if estimate_tokens(text[:middle]) <= max_tokens:
            low = middle
        else:
            high = middle
    return text[:low]


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
