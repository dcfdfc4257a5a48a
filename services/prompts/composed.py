"""The customer chat's system instruction, composed from the enabled features' fragments.

One frame (`SUPPORT_CHAT_FRAME`, versioned like any prompt) holds what every
configuration says: who the assistant is, the shop's own tools, facts only, the data and
secrecy rules, the language. It has named places (`Slot`) where a feature's fragment goes;
a slot may have the frame's default words, which a feature's fragment replaces (the
read-only rule gives way to the actions feature's "propose, never do"). A feature
declares its fragments next to its tools (`PromptFragment.tools`: the tools its words
name), so a new feature adds a fragment, not another whole-prompt variant.

The ref names what the model saw: the frame's ref, then each fragment's, in order
("support_chat@4" alone, "support_chat@4+order_actions@1" with actions on); it is stored
with every turn. A fragment's new wording is a new version, as with whole prompts.
"""

from __future__ import annotations

import fnmatch
import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from enum import StrEnum
from typing import Any

from services.prompts.template import PromptError, PromptTemplate, RenderedPrompt

_TOOL_NAME = re.compile(
    r"(?<![A-Za-z0-9_])[a-z][a-z0-9]*(?:_[a-z0-9]+)*_(?:[a-z0-9]+|\*)(?![A-Za-z0-9_])"
)
_NOT_TOOLS = re.compile(r"</?[a-z_]+>|\{\{\s*[a-z_]+\s*\}\}")  # tags, placeholders


class Slot(StrEnum):
    """Where in the frame a fragment goes."""

    TOOLS = "tools"  # how to use a feature's tools, after the shop's own tools' rules
    ORDER_CHANGES = "order_changes"  # what may be done to an order (default: read only)


@dataclass(frozen=True, slots=True)
class PromptFragment:
    """A feature's words in the system instruction: one or more rule lines for `slot`.

    Every snake_case word of `body` is a tool it names (`propose_*`: a family);
    `make check` fails when a feature's fragment names a tool the feature does not
    register (tools/lint_prompts.py)."""

    fragment_id: str
    version: str
    slot: Slot
    body: str

    def __post_init__(self) -> None:
        if not self.fragment_id or not self.version or "@" in self.fragment_id + self.version:
            raise PromptError("a prompt fragment needs an id and a version without '@'")
        if not self.body.strip() or "{{" in self.body:
            raise PromptError(f"fragment {self.ref}: empty, or a placeholder (none allowed)")

    @property
    def ref(self) -> str:
        return f"{self.fragment_id}@{self.version}"


@dataclass(frozen=True, slots=True)
class PromptFrame:
    """The part every configuration shares: `parts` are text and slots, in order;
    `defaults` the frame's own words for a slot no fragment fills (the tools their words
    name are the shop's own, always registered)."""

    prompt_id: str
    version: str
    parts: tuple[str | Slot, ...]
    defaults: Mapping[Slot, str] = field(default_factory=dict)

    @property
    def ref(self) -> str:
        return f"{self.prompt_id}@{self.version}"

    @property
    def words(self) -> str:
        """All its own words (text parts and slot defaults)."""
        texts = [p for p in self.parts if not isinstance(p, Slot)]
        return "\n".join([*texts, *self.defaults.values()])


@dataclass(frozen=True, slots=True)
class SystemPrompt:
    """A composed instruction, not yet rendered (its only variable is the shop's name)."""

    template: PromptTemplate
    ref: str
    fragments: tuple[PromptFragment, ...]

    def render(self, **variables: Any) -> RenderedPrompt:
        return RenderedPrompt(text=self.template.render(**variables).text, ref=self.ref)


def compose(frame: PromptFrame, fragments: Iterable[PromptFragment]) -> SystemPrompt:
    """The frame with each slot filled by its fragments (in the order given) or, when
    none fills it, by the frame's default."""
    chosen = tuple(fragments)
    ids = [f.fragment_id for f in chosen]
    if len(set(ids)) != len(ids):
        raise PromptError(f"a fragment is given twice: {ids}")
    placed = {slot for slot in frame.parts if isinstance(slot, Slot)}
    stray = [f.ref for f in chosen if f.slot not in placed]
    if stray:
        raise PromptError(f"the frame {frame.ref} has no place for {stray}")
    pieces: list[str] = []
    for part in frame.parts:
        if not isinstance(part, Slot):
            pieces.append(part)
            continue
        filled = [f.body.strip("\n") for f in chosen if f.slot is part]
        if not filled and part in frame.defaults:
            filled = [frame.defaults[part].strip("\n")]
        pieces.extend(f"{text}\n" for text in filled)
    body = "".join(pieces).rstrip("\n")
    variables = frozenset({"shop_name"}) if "{{shop_name}}" in body else frozenset()
    ref = "+".join([frame.ref, *(f.ref for f in chosen)])
    template = PromptTemplate(
        prompt_id=frame.prompt_id, version=frame.version, body=body, required_variables=variables
    )
    return SystemPrompt(template=template, ref=ref, fragments=chosen)


def tool_references(text: str) -> frozenset[str]:
    """The tools `text` names: its snake_case words (`propose_*` for a family), tags
    such as <conversation_summary> and {{placeholders}} aside."""
    return frozenset(_TOOL_NAME.findall(_NOT_TOOLS.sub(" ", text)))


def unregistered(text: str, registered: Iterable[str]) -> list[str]:
    """The tools `text` names that no name in `registered` is (or, for a pattern, matches)."""
    names = tuple(registered)
    return sorted(ref for ref in tool_references(text) if not fnmatch.filter(names, ref))
