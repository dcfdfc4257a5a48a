"""Chat Completions tool schemas in OpenAI *strict* mode, built from the arguments model.

The openai SDK's `pydantic_function_tool` already makes every property required and
closes every object (`additionalProperties: false`), but it keeps pydantic's value
constraints (`minLength`, `maxLength`, `pattern`, `minimum`, ...). Strict mode rejects
some of them and support for the rest varies by model and provider, so the schema sent
to the model keeps only structural keywords. The full constraints stay in the pydantic
model and are enforced again on the host by the executor; descriptions tell the model
what a valid value looks like.
"""

from __future__ import annotations

from typing import Any

import openai
from pydantic import BaseModel

# Keywords that describe *shape*; everything else (value constraints, defaults, titles,
# formats) is removed from the schema sent to the model.
STRUCTURAL_KEYWORDS = frozenset(
    {
        "type",
        "description",
        "properties",
        "required",
        "additionalProperties",
        "items",
        "enum",
        "const",
        "anyOf",
        "$defs",
        "$ref",
    }
)


class StrictSchemaError(ValueError):
    """The generated schema would not be accepted in strict mode."""


def _strip(node: Any) -> Any:
    if isinstance(node, list):
        return [_strip(item) for item in node]
    if not isinstance(node, dict):
        return node
    cleaned: dict[str, Any] = {}
    for key, value in node.items():
        if key not in STRUCTURAL_KEYWORDS:
            continue
        if key in ("properties", "$defs"):
            # keys of these maps are field/definition names, not keywords
            cleaned[key] = {name: _strip(sub) for name, sub in value.items()}
        else:
            cleaned[key] = _strip(value)
    return cleaned


def strict_tool_schema(
    *, name: str, description: str, arguments_model: type[BaseModel]
) -> dict[str, Any]:
    """The `tools` entry for one tool, checked with `check_strict_schema`."""
    generated = openai.pydantic_function_tool(arguments_model, name=name, description=description)
    function = dict(generated["function"])
    function["parameters"] = _strip(function["parameters"])
    function["strict"] = True
    schema: dict[str, Any] = {"type": "function", "function": function}
    check_strict_schema(function["parameters"])
    return schema


def check_strict_schema(node: Any, path: str = "$") -> None:
    """Raise `StrictSchemaError` unless `node` satisfies the strict-mode rules we rely on.

    Every object lists all its properties as required and forbids additional ones; no
    keyword outside `STRUCTURAL_KEYWORDS` appears anywhere.
    """
    if isinstance(node, list):
        for index, item in enumerate(node):
            check_strict_schema(item, f"{path}[{index}]")
        return
    if not isinstance(node, dict):
        return
    unexpected = set(node) - STRUCTURAL_KEYWORDS
    if unexpected:
        raise StrictSchemaError(
            f"{path}: keywords not allowed in strict mode: {sorted(unexpected)}"
        )
    types = node.get("type")
    is_object = types == "object" or (isinstance(types, list) and "object" in types)
    if is_object:
        if node.get("additionalProperties") is not False:
            raise StrictSchemaError(f"{path}: objects must set additionalProperties: false")
        properties = node.get("properties", {})
        if sorted(node.get("required", [])) != sorted(properties):
            raise StrictSchemaError(f"{path}: every property must be required")
    for key in ("properties", "$defs"):
        for name, sub in node.get(key, {}).items():
            check_strict_schema(sub, f"{path}.{key}.{name}")
    for key in ("items", "anyOf"):
        if key in node:
            check_strict_schema(node[key], f"{path}.{key}")
