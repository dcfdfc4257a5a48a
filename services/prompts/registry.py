"""Which version of each prompt is active; one registry per application instance."""

from __future__ import annotations

from typing import Any

from services.prompts.template import PromptError, PromptTemplate, RenderedPrompt


class PromptRegistry:
    """All known versions of each prompt, and the one `render` uses by default."""

    def __init__(self) -> None:
        self._versions: dict[str, dict[str, PromptTemplate]] = {}
        self._active: dict[str, str] = {}

    def register(self, template: PromptTemplate, *, active: bool = False) -> None:
        versions = self._versions.setdefault(template.prompt_id, {})
        if template.version in versions:
            raise PromptError(f"prompt {template.ref} is already registered")
        versions[template.version] = template
        if active or template.prompt_id not in self._active:
            self._active[template.prompt_id] = template.version

    def get(self, prompt_id: str, version: str | None = None) -> PromptTemplate:
        versions = self._versions.get(prompt_id)
        if not versions:
            raise PromptError(f"unknown prompt {prompt_id!r}")
        chosen = version or self._active[prompt_id]
        if chosen not in versions:
            raise PromptError(f"unknown prompt {prompt_id}@{chosen}")
        return versions[chosen]

    def render(self, prompt_id: str, /, **variables: Any) -> RenderedPrompt:
        """The active version of `prompt_id` with its variables filled in (strictly)."""
        return self.get(prompt_id).render(**variables)
