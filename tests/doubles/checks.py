"""Assertions about conversations sent to a model, shared by unit and integration tests."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any


def assert_tool_messages_paired(messages: Sequence[dict[str, Any]]) -> None:
    """The Chat Completions contract for tool results, as a provider checks it.

    Every assistant message with `tool_calls` is followed directly by one `tool` message
    per call, in call order, each with that call's id; no `tool` message appears
    anywhere else (no orphan ids).
    """
    i = 0
    while i < len(messages):
        message = messages[i]
        calls = message.get("tool_calls") or []
        if message.get("role") == "assistant" and calls:
            ids = [call["id"] for call in calls]
            following = messages[i + 1 : i + 1 + len(ids)]
            assert [m.get("role") for m in following] == ["tool"] * len(ids), (
                f"calls {ids} at {i} are not all answered"
            )
            assert [m.get("tool_call_id") for m in following] == ids, (
                f"tool results at {i + 1} do not match calls {ids} in order"
            )
            i += 1 + len(ids)
            continue
        assert message.get("role") != "tool", f"orphan tool message at {i}: {message}"
        i += 1
