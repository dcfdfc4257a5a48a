"""A versioned prompt: id, version, body with `{{variable}}` placeholders, declared variables.

Prompts are code, so they are versioned like code: a turn stores the `id@version` it
used, and changing a prompt means adding a new version rather than editing an old one.
Placeholders are `{{name}}` (not `str.format`), so bodies may contain JSON braces.
Rendering is strict — a missing or unexpected variable is a bug, never silently blank.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any

_PLACEHOLDER = re.compile(r"\{\{\s*([a-z][a-z0-9_]*)\s*\}\}")


class PromptError(ValueError):
    """A prompt definition or a render call does not match the prompt's contract."""


@dataclass(frozen=True, slots=True)
class RenderedPrompt:
    text: str
    ref: str  # "<id>@<version>", stored with every turn that used it


@dataclass(frozen=True, slots=True)
class PromptTemplate:
    prompt_id: str
    version: str
    body: str
    required_variables: frozenset[str] = frozenset()

    def __post_init__(self) -> None:
        if not self.prompt_id or not self.version or "@" in self.prompt_id + self.version:
            raise PromptError("a prompt needs an id and a version without '@'")
        if not self.body.strip():
            raise PromptError(f"prompt {self.ref} has an empty body")
        used = frozenset(_PLACEHOLDER.findall(self.body))
        if used != self.required_variables:
            raise PromptError(
                f"prompt {self.ref}: placeholders {sorted(used)} differ from "
                f"declared variables {sorted(self.required_variables)}"
            )

    @property
    def ref(self) -> str:
        return f"{self.prompt_id}@{self.version}"

    def render(self, **variables: Any) -> RenderedPrompt:
        missing = self.required_variables - variables.keys()
        extra = variables.keys() - self.required_variables
        if missing or extra:
            raise PromptError(
                f"prompt {self.ref}: missing variables {sorted(missing)}, "
                f"unexpected variables {sorted(extra)}"
            )
        for name, value in variables.items():
            if value is None or (isinstance(value, str) and not value.strip()):
                raise PromptError(f"prompt {self.ref}: variable {name!r} is empty")
        text = _PLACEHOLDER.sub(lambda match: str(variables[match.group(1)]), self.body)
        return RenderedPrompt(text=text, ref=self.ref)
