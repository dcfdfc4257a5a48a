"""The allow-list of tools one application instance offers to the model.

Only registered tools can ever run: the executor looks every model-proposed name up
here. Definitions are checked on registration so a bad tool fails at start-up, not in
the middle of a customer's turn. Build one registry per application (see
`tools.factory.build_registry`); there is no module-level registry.
"""

from __future__ import annotations

import json
import math
import re
from typing import Any

from pydantic import BaseModel

from tools.base import Tool
from tools.schema import strict_tool_schema

TOOL_NAME_RE = re.compile(r"^[a-z][a-z0-9_]{0,63}$")


class ToolRegistryError(ValueError):
    """A tool definition is not acceptable (bad name, duplicate, empty description...)."""


def _offered(tool: Tool[Any, Any]) -> bool:
    return tool.offered is None or tool.offered()


class ToolRegistry:
    """Registered tools by name, plus their strict Chat Completions schemas."""

    def __init__(self) -> None:
        self._tools: dict[str, Tool[Any, Any]] = {}
        self._schema_json: dict[str, str] = {}  # schemas as JSON: cheap fresh copies

    def register(self, tool: Tool[Any, Any]) -> None:
        """Add a tool; raise `ToolRegistryError` if its definition breaks the contract."""
        if not isinstance(tool.name, str) or not TOOL_NAME_RE.fullmatch(tool.name):
            raise ToolRegistryError(f"tool name {tool.name!r} must match {TOOL_NAME_RE.pattern}")
        if tool.name in self._tools:
            raise ToolRegistryError(f"tool {tool.name!r} is already registered")
        if not isinstance(tool.description, str) or not tool.description.strip():
            raise ToolRegistryError(f"tool {tool.name!r} needs a description for the model")
        timeout = tool.timeout_s
        if isinstance(timeout, bool) or not isinstance(timeout, int | float):
            raise ToolRegistryError(f"tool {tool.name!r}: timeout must be a number of seconds")
        if not math.isfinite(timeout) or timeout <= 0:
            raise ToolRegistryError(f"tool {tool.name!r}: timeout must be positive and finite")
        for label, model in (("arguments", tool.arguments_model), ("result", tool.result_model)):
            if not (isinstance(model, type) and issubclass(model, BaseModel)):
                raise ToolRegistryError(f"tool {tool.name!r}: {label} model must be pydantic")
        if tool.arguments_model.model_config.get("extra") != "forbid":
            raise ToolRegistryError(f"tool {tool.name!r}: arguments model must forbid extra fields")
        if not callable(tool.handler):
            raise ToolRegistryError(f"tool {tool.name!r}: handler must be callable")
        schema = strict_tool_schema(
            name=tool.name,
            description=tool.description.strip(),
            arguments_model=tool.arguments_model,
        )
        self._tools[tool.name] = tool
        self._schema_json[tool.name] = json.dumps(schema, ensure_ascii=False)

    def get(self, name: str) -> Tool[Any, Any] | None:
        """The tool with this exact name, or None when it is not on the allow-list (or
        not offered now: `Tool.offered`)."""
        tool = self._tools.get(name)
        return tool if tool is None or _offered(tool) else None

    @property
    def names(self) -> tuple[str, ...]:
        """Registered names in registration order."""
        return tuple(self._tools)

    def schemas(self) -> list[dict[str, Any]]:
        """The Chat Completions `tools` list (strict mode), a fresh copy on every call.

        The copy is decoded from JSON kept at registration: the loop asks for the list on
        every model call, and `copy.deepcopy` of the schemas was ~0.17 ms of it (bench).
        """
        return [
            json.loads(self._schema_json[name])
            for name, tool in self._tools.items()
            if _offered(tool)
        ]

    def __len__(self) -> int:
        return len(self._tools)

    def __contains__(self, name: object) -> bool:
        return name in self._tools
