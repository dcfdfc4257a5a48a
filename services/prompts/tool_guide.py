"""The tool guide: one line per offered tool at the end of the instruction (TOOL_GUIDE).

Since support_chat@5 the instruction names no tool; each tool's schema says what it is
for. A hosted model reads the schemas; a small local model (Qwen2.5-Coder-1.5B,
docs/simulations.md) called the right tool in 37 of 84 expected calls while the
instruction named the tools and in 14 of 83 once it did not. The guide gives such a
model the names back without writing them twice: each line is the tool's name and the
first sentence of its own description, for the tools offered at that moment (an action
the shop does not carry out is not listed). Off by default: it is ~25 tokens per tool
in every call, and a model that calls tools through the interface does not need it.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping
from typing import Any

from services.prompts.template import RenderedPrompt
from tools.request_human import REQUEST_HUMAN

# @2 added that such questions are the assistant's job: Qwen2.5-Coder-1.5B answered half
# of the suite's questions with "I'm sorry, but I can't assist with that." under @1.
# @3: a request for a person is named only when a tool hands the chat over (request_human,
# the handoff feature), so a model without one is never told to take such requests.
TOOL_GUIDE_REF = "tool_guide@3"
_HEAD = (
    "Questions about orders, returns, delivery, payment, products and the shop{person} are "
    "your job: never refuse them. Call the tool the message needs first, then answer from "
    "its result; never only say that you will call it.\nTools:"
)
_FIRST_SENTENCE = re.compile(r"^(.+?)(?:\.(?:\s|$)|$)", re.DOTALL)
_MAX_CHARS = 200


def first_sentence(description: str) -> str:
    """What a tool is for, as its description's first sentence says it (at most 200
    characters: what a search finds tells a small model which questions it is for)."""
    text = " ".join(description.split())
    found = _FIRST_SENTENCE.match(text)
    sentence = (found.group(1) if found else text).strip()
    if len(sentence) > _MAX_CHARS:
        sentence = sentence[: _MAX_CHARS - 1].rsplit(" ", 1)[0] + "…"
    return sentence[:1].lower() + sentence[1:]


def guide_text(tools: Iterable[tuple[str, str]]) -> str:
    """The guide for `tools` (name, description), in the order given; empty for none."""
    tools = tuple(tools)
    if not tools:
        return ""
    person = ", and a request for a person," if REQUEST_HUMAN in dict(tools) else ""
    head = _HEAD.format(person=person)
    lines = [f"- {name}: {first_sentence(description)}" for name, description in tools]
    return "\n".join([head, *lines])


def schema_entries(schemas: Iterable[Mapping[str, Any]]) -> tuple[tuple[str, str], ...]:
    """(name, description) of each Chat Completions tool schema."""
    return tuple(
        (str(s["function"]["name"]), str(s["function"].get("description") or "")) for s in schemas
    )


class ToolGuide:
    """`instruction` with the guide for the tools offered now, remembered per tool set
    (the text changes only when what is offered does, so the prompt's prefix stays
    stable for providers' caches)."""

    def __init__(self, instruction: RenderedPrompt) -> None:
        self._instruction = instruction
        self._made: dict[tuple[tuple[str, str], ...], RenderedPrompt] = {}

    def apply(self, schemas: Iterable[Mapping[str, Any]]) -> RenderedPrompt:
        """The instruction followed by the guide (its ref gains `+tool_guide@3`)."""
        tools = schema_entries(schemas)
        made = self._made.get(tools)
        if made is None:
            guide = guide_text(tools)
            made = (
                RenderedPrompt(
                    text=f"{self._instruction.text}\n\n{guide}",
                    ref=f"{self._instruction.ref}+{TOOL_GUIDE_REF}",
                )
                if guide
                else self._instruction
            )
            self._made[tools] = made
        return made
