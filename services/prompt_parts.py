"""What a model request is made of: its tokens by part, for reports of what a question costs.

The parts, in the order the request sends them (the first two are the prefix every
request of the shop shares, which providers' prompt caches reuse):
- `instruction`: the system instruction;
- `tools`: the tool schemas, as JSON;
- `summary`: the summary of earlier messages, when there is one;
- `history`: the earlier questions and answers sent again;
- `turn`: the new question and this turn's own tool calls and results.

Counted with `count` (the bot's estimate by default, services/history.py, fitted to
OpenAI's cl100k_base; `bench/prompt_tokens.py` passes the real tokenizer), plus 4 per
message for its role and framing. An estimate: the provider's own count of the whole
request is in its usage.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Mapping, Sequence
from typing import Any

from services.chat import SUMMARY_TAG
from services.history import MESSAGE_OVERHEAD_TOKENS, estimate_tokens
from services.llm.types import Message

PARTS = ("instruction", "tools", "summary", "history", "turn")


def prompt_parts(
    messages: Sequence[Message],
    tools: Sequence[Mapping[str, Any]] | None,
    count: Callable[[str], int] = estimate_tokens,
) -> dict[str, int]:
    """One request's tokens by part (every part present, 0 when empty)."""
    parts = dict.fromkeys(PARTS, 0)
    if tools:
        parts["tools"] = count(json.dumps(list(tools), ensure_ascii=False))
    users = [i for i, m in enumerate(messages) if m.get("role") == "user"]
    last_user = users[-1] if users else len(messages)
    for index, message in enumerate(messages):
        content = message.get("content")
        text = content if isinstance(content, str) else ""
        calls = message.get("tool_calls")
        if calls:
            text += json.dumps(calls, ensure_ascii=False)
        if index == 0 and message.get("role") == "system":
            part = "instruction"
        elif message.get("role") == "system" and f"<{SUMMARY_TAG}>" in text:
            part = "summary"
        elif index < last_user:
            part = "history"
        else:
            part = "turn"
        parts[part] += count(text) + MESSAGE_OVERHEAD_TOKENS
    return parts


def add_parts(total: dict[str, int], more: Mapping[str, int]) -> None:
    """`more` added into `total` (in place)."""
    for part in PARTS:
        total[part] = total.get(part, 0) + more.get(part, 0)
