"""Strict tool schemas: exactly what the model is sent, pinned byte for byte.

The expected values were captured from the schemas generated through the openai SDK's
`pydantic_function_tool` before `tools.schema` built them itself (the descriptions have
been shortened since: they go with every model request); the wire text (key order
included) must not change unnoticed, so the comparisons are of JSON text, not of dicts.
"""

from __future__ import annotations

import json
from enum import StrEnum
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field

from tools.factory import build_registry
from tools.schema import check_strict_schema, strict_tool_schema

ORDER_STATUS_SCHEMA: dict[str, Any] = {
    "type": "function",
    "function": {
        "name": "get_order_status",
        "strict": True,
        "parameters": {
            "additionalProperties": False,
            "properties": {
                "order_id": {
                    "description": "exactly 4 digits, e.g. 8041, no prefix.",
                    "type": "string",
                }
            },
            "required": ["order_id"],
            "type": "object",
        },
        "description": (
            "The status of one of the customer's orders by its 4-digit number: processing, in "
            "transit, ready for pickup, delivered or cancelled, with the pickup point and the "
            "expected date when known."
        ),
    },
}

RETURN_POLICY_SCHEMA: dict[str, Any] = {
    "type": "function",
    "function": {
        "name": "get_return_policy",
        "strict": True,
        "parameters": {
            "additionalProperties": False,
            "properties": {
                "product": {
                    "description": (
                        "The product or category as the customer named it, without the order "
                        "number, e.g. кофемашина, headphones."
                    ),
                    "type": "string",
                }
            },
            "required": ["product"],
            "type": "object",
        },
        "description": (
            "A product's return period in days and return conditions (or the shop's general "
            "return policy when it has none of its own)."
        ),
    },
}


SHOP_INFO_SCHEMA: dict[str, Any] = {
    "type": "function",
    "function": {
        "name": "get_shop_info",
        "strict": True,
        "parameters": {
            "additionalProperties": False,
            "properties": {
                "topic": {
                    "description": (
                        "A short topic in the customer's language or English, e.g. доставка, "
                        "оплата, контакты, delivery."
                    ),
                    "type": "string",
                }
            },
            "required": ["topic"],
            "type": "object",
        },
        "description": (
            "The shop's own answers on delivery, payment, contacts and other general topics, "
            "matched by the topic's words. On a miss, known_topics lists what it can answer."
        ),
    },
}


def wire(value: Any) -> str:
    """The JSON text the registry keeps and the client sends (key order matters)."""
    return json.dumps(value, ensure_ascii=False)


def test_shop_tool_schemas_are_exactly_what_is_sent_today() -> None:
    assert [wire(s) for s in build_registry().schemas()] == [
        wire(ORDER_STATUS_SCHEMA),
        wire(RETURN_POLICY_SCHEMA),
        wire(SHOP_INFO_SCHEMA),
    ]


# -- richer shapes: nested models, $defs, $ref with siblings, enums, optionals -------------


class Colour(StrEnum):
    RED = "red"
    BLUE = "blue"


class Inner(BaseModel):
    model_config = ConfigDict(extra="forbid")

    colour: Colour = Field(description="which colour")
    tags: list[str] = Field(default_factory=list, max_length=3)


class Deep(BaseModel):
    model_config = ConfigDict(extra="forbid")

    inner: Inner = Field(description="nested with a description")
    maybe_inner: Inner | None = None
    inners: list[Inner]
    colour: Colour
    mode: Literal["a", "b"] = "a"
    count: int = Field(default=1, ge=0)
    ratio: float | None = Field(default=None, description="r")


class LooseOptional(BaseModel):
    """A nested model that neither forbids extras nor requires anything."""

    a: int = 1
    b: str | None = None


class WithLoose(BaseModel):
    model_config = ConfigDict(extra="forbid")

    loose: LooseOptional
    described: LooseOptional = Field(description="inlined")


INNER: dict[str, Any] = {
    "additionalProperties": False,
    "properties": {
        "colour": {"description": "which colour", "enum": ["red", "blue"], "type": "string"},
        "tags": {"items": {"type": "string"}, "type": "array"},
    },
    "required": ["colour", "tags"],
    "type": "object",
}

DEEP_PARAMETERS: dict[str, Any] = {
    "$defs": {"Colour": {"enum": ["red", "blue"], "type": "string"}, "Inner": INNER},
    "additionalProperties": False,
    "properties": {
        # a $ref with a sibling keyword is inlined, the sibling first
        "inner": {"description": "nested with a description", **INNER},
        "maybe_inner": {"anyOf": [{"$ref": "#/$defs/Inner"}, {"type": "null"}]},
        "inners": {"items": {"$ref": "#/$defs/Inner"}, "type": "array"},
        "colour": {"$ref": "#/$defs/Colour"},
        "mode": {"enum": ["a", "b"], "type": "string"},
        "count": {"type": "integer"},
        "ratio": {"type": ["number", "null"], "description": "r"},  # a union of plain types
    },
    "required": ["inner", "maybe_inner", "inners", "colour", "mode", "count", "ratio"],
    "type": "object",
}

LOOSE: dict[str, Any] = {
    "description": "A nested model that neither forbids extras nor requires anything.",
    "properties": {
        "a": {"type": "integer"},
        "b": {"type": ["string", "null"]},
    },
    "type": "object",
    # added where pydantic left them out: after the keys it wrote
    "additionalProperties": False,
    "required": ["a", "b"],
}

WITH_LOOSE_PARAMETERS: dict[str, Any] = {
    "$defs": {"LooseOptional": LOOSE},
    "additionalProperties": False,
    "properties": {
        "loose": {"$ref": "#/$defs/LooseOptional"},
        "described": {**LOOSE, "description": "inlined"},
    },
    "required": ["loose", "described"],
    "type": "object",
}


def test_nested_shapes_match_the_previously_generated_schemas() -> None:
    for model, expected in ((Deep, DEEP_PARAMETERS), (WithLoose, WITH_LOOSE_PARAMETERS)):
        schema = strict_tool_schema(name="t", description="d", arguments_model=model)
        function = {"name": "t", "strict": True, "parameters": expected, "description": "d"}
        assert wire(schema) == wire({"type": "function", "function": function})
        check_strict_schema(schema["function"]["parameters"])


def test_generation_does_not_change_the_model_schema() -> None:
    before = wire(Deep.model_json_schema())
    strict_tool_schema(name="t", description="d", arguments_model=Deep)
    assert wire(Deep.model_json_schema()) == before
