"""In-process test doubles shared by every package's unit tests."""

from tests.doubles.checks import assert_tool_messages_paired
from tests.doubles.scripted_llm import (
    ScriptedLLM,
    ScriptedRequest,
    text_response,
    tool_call,
    tool_calls_response,
)

__all__ = [
    "ScriptedLLM",
    "ScriptedRequest",
    "assert_tool_messages_paired",
    "text_response",
    "tool_call",
    "tool_calls_response",
]
