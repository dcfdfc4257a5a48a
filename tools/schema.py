"""Chat Completions tool schemas in OpenAI *strict* mode, built from the arguments model.

Strict mode needs every object closed (`additionalProperties: false`) with all its
properties required, so pydantic's schema is closed here the way the openai SDK's
`pydantic_function_tool` did it (same keys, same order: the wire text did not change when
this module stopped importing openai, which only the LLM client may import). Pydantic's
value constraints (`minLength`, `maxLength`, `pattern`, `minimum`, ...) are then dropped:
strict mode rejects some of them and support for the rest varies by model and provider,
so the schema sent to the model keeps only structural keywords. The full constraints stay
in the pydantic model and are enforced again on the host by the executor; descriptions
tell the model what a valid value looks like. One change of form: a union of plain types
(`anyOf: [{"type": "string"}, {"type": "null"}]`, pydantic's optional) is written as the
type list strict mode documents for it (`"type": ["string", "null"]`): the same schema in
fewer tokens, sent with every request.
"""

from __future__ import annotations

import copy
from typing import Any

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
        elif key == "anyOf" and "type" not in node and _plain_types(_strip(value)):
            cleaned["type"] = [variant["type"] for variant in _strip(value)]
        else:
            cleaned[key] = _strip(value)
    return cleaned


def _plain_types(variants: Any) -> bool:
    """Whether an `anyOf` is only plain types (`{"type": "number"}`, ...), each once."""
    if not isinstance(variants, list) or len(variants) < 2:
        return False
    types = [v.get("type") for v in variants if isinstance(v, dict) and set(v) == {"type"}]
    return (
        len(types) == len(variants)
        and all(isinstance(t, str) for t in types)
        and len(set(types)) == len(types)
    )


def _resolve_ref(root: dict[str, Any], ref: str) -> dict[str, Any]:
    """The definition a local `#/...` reference points at."""
    if not ref.startswith("#/"):
        raise StrictSchemaError(f"unexpected $ref {ref!r}: only local #/ references are used")
    node: Any = root
    for key in ref[2:].split("/"):
        node = node[key]
    if not isinstance(node, dict):
        raise StrictSchemaError(f"$ref {ref!r} does not point at a schema object")
    return node


def _close(node: dict[str, Any], root: dict[str, Any]) -> dict[str, Any]:
    """Close every object in `node` (in place): no extra properties, all of them required.

    A `$ref` with sibling keywords (a description on a nested model) is not allowed in
    strict mode, so it is replaced by the definition it points at, the siblings winning.
    """
    for definition in node.get("$defs", {}).values():
        _close(definition, root)
    if node.get("type") == "object":
        node.setdefault("additionalProperties", False)
    properties = node.get("properties")
    if isinstance(properties, dict):
        node["required"] = list(properties)
        node["properties"] = {name: _close(sub, root) for name, sub in properties.items()}
    if isinstance(node.get("items"), dict):
        node["items"] = _close(node["items"], root)
    if isinstance(node.get("anyOf"), list):
        node["anyOf"] = [_close(variant, root) for variant in node["anyOf"]]
    all_of = node.get("allOf")
    if isinstance(all_of, list) and len(all_of) == 1:
        node.update(_close(all_of[0], root))
        node.pop("allOf")
    elif isinstance(all_of, list):
        node["allOf"] = [_close(entry, root) for entry in all_of]
    ref = node.get("$ref")
    if isinstance(ref, str) and len(node) > 1:
        node.update({**_resolve_ref(root, ref), **node})
        node.pop("$ref")
        return _close(node, root)
    return node


def strict_tool_schema(
    *, name: str, description: str, arguments_model: type[BaseModel]
) -> dict[str, Any]:
    """The `tools` entry for one tool, checked with `check_strict_schema`."""
    schema = copy.deepcopy(arguments_model.model_json_schema())  # never pydantic's own copy
    parameters: dict[str, Any] = _strip(_close(schema, root=schema))
    check_strict_schema(parameters)
    function = {"name": name, "strict": True, "parameters": parameters, "description": description}
    return {"type": "function", "function": function}


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
