"""Scenario drafts from the field: conversations whose answer a customer rated 👎.

Each draft replays the customer's messages as scripted turns against the demo shop, with
the answer the customer disliked kept as a comment, and empty expectations for the owner
to fill in (what should have been said or done). The customer's Telegram id is never
copied; their words are, so the owner should read a draft before sharing it.
"""

from __future__ import annotations

import json
from collections.abc import Sequence

from services.gaps import GapGroup
from services.simulation.expectations import language_of
from storage.feedback import DislikedConversation


def _toml_string(text: str) -> str:
    # a JSON string is a valid TOML basic string (same escapes), on one line
    return json.dumps(text, ensure_ascii=False)


def _comment(text: str) -> list[str]:
    return ["#   " + line for line in text.splitlines() or [""]]


def scenario_draft(conversation: DislikedConversation, index: int) -> list[str]:
    customer = [content for role, content in conversation.messages if role == "user"]
    disliked = next(
        (content for role, content in reversed(conversation.messages) if role == "assistant"), ""
    )
    language = language_of(" ".join(customer)) or "ru"
    lines = [
        "[[scenario]]",
        f'id = "feedback-{index:03d}"',
        f'title = "Rated 👎 (turn {conversation.turn_id[:12]}): say what the bot should have done"',
        'shop = "demo"  # or "empty", with [scenario.shop_data] holding the orders this needs',
        "turns = [",
        *[f"  {_toml_string(text)}," for text in customer],
        "]",
        "# The answer the customer rated 👎:",
        *_comment(disliked),
        "[scenario.customer]",
        "telegram_id = 1001",
        f'language = "{language}"',
        "[scenario.expect]",
        "# fill in what a good answer does, e.g.:",
        '# tools = [{name = "get_order_status", args = {order_id = "8041"}}]',
        '# must_contain = ["..."]',
        '# must_not_contain = ["..."]',
        f'language = "{language}"',
        "",
    ]
    return lines


def drafts_document(conversations: Sequence[DislikedConversation]) -> str:
    """A scenario file with one draft per conversation (nothing to draft: a comment)."""
    head = [
        "# Scenario drafts from answers rated 👎 (support-bot simulate --from-feedback).",
        "# They hold customers' own words: read them, fill in the expectations, keep the ones",
        "# worth keeping, and run them with: support-bot simulate THIS_FILE",
        "",
    ]
    if not conversations:
        return "\n".join([*head, "# No answer rated 👎 is stored yet.", ""])
    body: list[str] = []
    for index, conversation in enumerate(conversations, 1):
        body += scenario_draft(conversation, index)
    return "\n".join(head + body)


def gap_scenarios(groups: Sequence[GapGroup], language: str) -> str:
    """`simulate --from-gaps`: one scenario per group of questions the bot could not
    answer (their masked wordings as turns), expecting the shop's knowledge searched and
    no "I don't know" — run it after answering the gap (/gaps → Answer) to see the new
    entry answer it."""
    head = [
        "# Scenarios from the questions the bot could not answer (support-bot simulate",
        "# --from-gaps). Answer the gaps first (/gaps → Answer), then run: support-bot",
        "# simulate THIS_FILE. The wordings are masked; add what the answer must contain.",
        "",
    ]
    if not groups:
        return "\n".join([*head, "# No unanswered question is stored in this period.", ""])
    dont_know = (
        ["не знаю", "нет информации"] if language == "ru" else ["don't know", "no information"]
    )
    body: list[str] = []
    for index, group in enumerate(groups, 1):
        body += [
            "[[scenario]]",
            f'id = "gap-{index:03d}"',
            f'title = "Asked {group.count} times, the bot did not know: {group.key[:12]}"',
            'shop = "own"',
            f"turns = [{_toml_string(group.wordings[0])}]",
            "[scenario.customer]",
            "telegram_id = 1001",
            f'language = "{language}"',
            "[scenario.expect]",
            f"must_not_contain = [{', '.join(_toml_string(w) for w in dont_know)}]",
            '# must_contain = ["..."]  # what the shop\'s answer says',
            f'language = "{language}"',
            "",
        ]
    return "\n".join(head + body)
