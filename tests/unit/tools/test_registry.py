"""Registry: the allow-list rules and strict-mode schemas sent to the model."""

from __future__ import annotations

import json
import math
from typing import Any

import pytest
from pydantic import BaseModel, ConfigDict, Field

from tools.base import Tool, ToolContext
from tools.factory import build_registry
from tools.registry import ToolRegistry, ToolRegistryError
from tools.schema import StrictSchemaError, check_strict_schema


class Args(BaseModel):
    model_config = ConfigDict(extra="forbid")

    query: str = Field(min_length=2, max_length=10, pattern=r"^\w+$", description="what")


class Nested(BaseModel):
    model_config = ConfigDict(extra="forbid")

    sku: str = Field(min_length=1)
    quantity: int = Field(ge=1, le=5)


class RichArgs(BaseModel):
    model_config = ConfigDict(extra="forbid")

    items: list[Nested] = Field(min_length=1, max_length=3)
    note: str | None = Field(default=None, max_length=20)
    title: str = "x"  # a property named like a schema keyword


class Result(BaseModel):
    value: str


async def handler(arguments: Any, context: ToolContext) -> Result:
    return Result(value="ok")


def make_tool(**overrides: Any) -> Tool[Any, Any]:
    fields: dict[str, Any] = {
        "name": "lookup_thing",
        "description": "Use it when the customer asks about a thing.",
        "arguments_model": Args,
        "result_model": Result,
        "handler": handler,
        "timeout_s": 1.0,
    }
    fields.update(overrides)
    return Tool(**fields)


def walk_keys(node: Any) -> set[str]:
    """All keys of every dict in the schema (property names included)."""
    found: set[str] = set()
    if isinstance(node, dict):
        for key, value in node.items():
            found.add(key)
            found |= walk_keys(value)
    elif isinstance(node, list):
        for item in node:
            found |= walk_keys(item)
    return found


def assert_strict(tool_schema: dict[str, Any]) -> None:
    assert tool_schema["type"] == "function"
    function = tool_schema["function"]
    assert function["strict"] is True
    assert function["description"].strip()
    parameters = function["parameters"]

    def check_objects(node: Any) -> None:
        if isinstance(node, dict):
            if node.get("type") == "object":
                assert node["additionalProperties"] is False
                assert sorted(node["required"]) == sorted(node["properties"])
            for value in node.values():
                check_objects(value)
        elif isinstance(node, list):
            for item in node:
                check_objects(item)

    check_objects(parameters)
    rejected = {
        "minLength",
        "maxLength",
        "pattern",
        "minimum",
        "maximum",
        "minItems",
        "maxItems",
        "format",
        "default",
    }
    text = json.dumps(parameters)
    for keyword in rejected:
        assert f'"{keyword}"' not in text, keyword
    check_strict_schema(parameters)


def test_shop_registry_has_its_three_tools_with_strict_schemas() -> None:
    registry = build_registry()
    assert registry.names == ("get_order_status", "get_return_policy", "get_shop_info")
    schemas = registry.schemas()
    assert [s["function"]["name"] for s in schemas] == list(registry.names)
    for schema in schemas:
        assert_strict(schema)
    order = schemas[0]["function"]["parameters"]
    assert order["properties"]["order_id"]["type"] == "string"
    assert "4 digits" in order["properties"]["order_id"]["description"]
    json.dumps(schemas)  # what goes over the wire


def test_constraints_are_left_out_of_nested_and_optional_schemas() -> None:
    registry = ToolRegistry()
    registry.register(make_tool(arguments_model=RichArgs))
    schema = registry.schemas()[0]
    assert_strict(schema)
    properties = schema["function"]["parameters"]["properties"]
    assert set(properties) == {"items", "note", "title"}  # a field named "title" survives
    assert {"minLength", "maxLength", "minimum", "maximum"}.isdisjoint(walk_keys(schema))


def test_registry_finds_registered_tools_only() -> None:
    registry = ToolRegistry()
    tool = make_tool()
    registry.register(tool)
    assert registry.get("lookup_thing") is tool
    assert registry.get("lookup_other") is None
    assert registry.get("LOOKUP_THING") is None
    assert "lookup_thing" in registry and len(registry) == 1


def test_duplicate_name_is_rejected() -> None:
    registry = ToolRegistry()
    registry.register(make_tool())
    with pytest.raises(ToolRegistryError, match="already registered"):
        registry.register(make_tool(description="another"))
    assert len(registry) == 1


@pytest.mark.parametrize(
    "name", ["", "Get_order", "1tool", "_tool", "get-order", "get order", "a" * 65, "получить"]
)
def test_bad_names_are_rejected(name: str) -> None:
    with pytest.raises(ToolRegistryError, match="name"):
        ToolRegistry().register(make_tool(name=name))


@pytest.mark.parametrize("name", ["a", "get_order_status", "t2", "a" * 64])
def test_good_names_are_accepted(name: str) -> None:
    registry = ToolRegistry()
    registry.register(make_tool(name=name))
    assert registry.names == (name,)


@pytest.mark.parametrize("description", ["", "   \n"])
def test_empty_description_is_rejected(description: str) -> None:
    with pytest.raises(ToolRegistryError, match="description"):
        ToolRegistry().register(make_tool(description=description))


@pytest.mark.parametrize("timeout", [0, -1.0, math.nan, math.inf, True])
def test_non_positive_or_odd_timeouts_are_rejected(timeout: float) -> None:
    with pytest.raises(ToolRegistryError, match="timeout"):
        ToolRegistry().register(make_tool(timeout_s=timeout))


def test_arguments_model_must_forbid_extra_fields() -> None:
    class Loose(BaseModel):
        query: str

    with pytest.raises(ToolRegistryError, match="forbid"):
        ToolRegistry().register(make_tool(arguments_model=Loose))


def test_schemas_are_copies_and_registries_are_independent() -> None:
    first, second = build_registry(), build_registry()
    schemas = first.schemas()
    schemas[0]["function"]["name"] = "tampered"
    schemas[0]["function"]["parameters"]["properties"].clear()
    assert first.schemas()[0]["function"]["name"] == "get_order_status"
    assert first.schemas()[0]["function"]["parameters"]["properties"]
    first.register(make_tool())
    assert "lookup_thing" not in second


def test_strict_checker_catches_what_strict_mode_rejects() -> None:
    with pytest.raises(StrictSchemaError, match="additionalProperties"):
        check_strict_schema({"type": "object", "properties": {}, "required": []})
    with pytest.raises(StrictSchemaError, match="required"):
        check_strict_schema(
            {
                "type": "object",
                "properties": {"a": {"type": "string"}},
                "required": [],
                "additionalProperties": False,
            }
        )
    with pytest.raises(StrictSchemaError, match="minLength"):
        check_strict_schema({"type": "string", "minLength": 2})
