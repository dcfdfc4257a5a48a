"""The shop-data import document: its shape, its rules, and the plan it becomes.

`python -m bot import-data FILE.json` must write all of a file or nothing, so the whole
document is validated here first and every problem is reported with the record and
field it concerns. Order numbers, statuses and product names follow `tools.shop.rules`,
the rules `get_return_policy` and `get_order_status` apply to a customer's words, so
what is imported is what is found.

Document (every top-level key optional, unknown keys rejected)::

    {"orders": [{"order_id": "8041", "status": "in_transit",
                 "owner_telegram_id": 123, "updated_at": "2026-11-29T10:00:00+03:00",
                 "pickup_point": "...", "expected_date": "2026-12-01"}],
     "return_policies": [{"product": "Наушники", "return_days": 7,
                          "conditions": "...", "aliases": ["headphones"]}],
     "general_return_policy": "..."}

Update semantics: an order field that is left out keeps its stored value, an explicit
null clears it (so a re-import without `owner_telegram_id` never makes a private order
public by accident). A policy replaces the stored one; its aliases are replaced when
`aliases` is given and kept when it is left out. `general_return_policy: null` removes it.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import date, datetime
from typing import Annotated, Any

from pydantic import (
    BaseModel,
    ConfigDict,
    Field,
    StrictInt,
    StringConstraints,
    ValidationError,
    field_validator,
)

from storage.shop_records import OrderUpsert, ReturnPolicyUpsert
from tools.shop.rules import (
    GENERAL_RETURN_POLICY_KEY,
    OrderStatus,
    check_order_id,
    normalise_product_name,
)

Text = Annotated[str, StringConstraints(strip_whitespace=True, min_length=1)]


class OrderIn(BaseModel):
    model_config = ConfigDict(extra="forbid")

    order_id: str
    status: OrderStatus
    owner_telegram_id: Annotated[StrictInt, Field(gt=0)] | None = None
    updated_at: datetime | None = None
    pickup_point: Annotated[Text, StringConstraints(max_length=300)] | None = None
    expected_date: date | None = None

    @field_validator("order_id")
    @classmethod
    def _order_id(cls, value: str) -> str:
        return check_order_id(value)


class ReturnPolicyIn(BaseModel):
    model_config = ConfigDict(extra="forbid")

    product: Annotated[Text, StringConstraints(min_length=2, max_length=100)]
    return_days: Annotated[StrictInt, Field(ge=0, le=3650)]
    conditions: Annotated[Text, StringConstraints(max_length=2000)]
    aliases: list[Annotated[Text, StringConstraints(min_length=2, max_length=100)]] | None = None


class ShopDataDocument(BaseModel):
    model_config = ConfigDict(extra="forbid")

    orders: list[OrderIn] = Field(default_factory=list)
    return_policies: list[ReturnPolicyIn] = Field(default_factory=list)
    general_return_policy: Annotated[Text, StringConstraints(max_length=4000)] | None = None


@dataclass(slots=True)
class ImportPlan:
    """What to write, already in storage's terms."""

    orders: list[OrderUpsert] = field(default_factory=list)
    policies: list[ReturnPolicyUpsert] = field(default_factory=list)
    texts: dict[str, str | None] = field(default_factory=dict)


class ShopDataError(ValueError):
    """The document is invalid; `problems` has one line per record and field."""

    def __init__(self, problems: list[str]) -> None:
        super().__init__(f"{len(problems)} problem(s) in the shop data")
        self.problems = problems


def _record_label(raw: Any, loc: tuple[Any, ...]) -> str:
    """`orders[2] (order_id 8041).status` — where exactly in the file the problem is."""
    if not loc:
        return "document"
    parts: list[str] = [str(loc[0])]
    rest = list(loc[1:])
    if rest and isinstance(rest[0], int):
        index = rest.pop(0)
        parts[0] += f"[{index}]"
        record = None
        if isinstance(raw, dict) and isinstance(raw.get(loc[0]), list):
            items = raw[loc[0]]
            record = items[index] if index < len(items) else None
        if isinstance(record, dict):
            for key in ("order_id", "product"):
                if isinstance(record.get(key), str):
                    parts[0] += f" ({key} {record[key][:60]!r})"
                    break
    label = parts[0]
    for part in rest:
        label += f"[{part}]" if isinstance(part, int) else f".{part}"
    return label


def _describe(raw: Any, error: ValidationError) -> list[str]:
    lines = []
    for item in error.errors(include_url=False, include_input=False, include_context=False):
        where = _record_label(raw, tuple(item.get("loc", ())))
        kind = item.get("type")
        if kind == "missing":
            text = "required field is missing"
        elif kind == "extra_forbidden":
            text = "unknown field"
        else:
            text = str(item.get("msg", "invalid value")).removeprefix("Value error, ")
        lines.append(f"{where}: {text}")
    return lines


def _cross_record_problems(document: ShopDataDocument) -> list[str]:
    problems: list[str] = []
    seen_orders: dict[str, int] = {}
    for index, order in enumerate(document.orders):
        if order.order_id in seen_orders:
            problems.append(
                f"orders[{index}] (order_id {order.order_id!r}).order_id: duplicate of "
                f"orders[{seen_orders[order.order_id]}]"
            )
        else:
            seen_orders[order.order_id] = index
    names: dict[str, str] = {}  # normalised name or alias -> where it was first used
    for index, policy in enumerate(document.return_policies):
        label = f"return_policies[{index}] (product {policy.product!r})"
        key = normalise_product_name(policy.product)
        if key in names:
            problems.append(f"{label}.product: same name as {names[key]}")
        else:
            names[key] = f"{label}.product"
        own = {key}
        for alias_index, alias in enumerate(policy.aliases or []):
            alias_key = normalise_product_name(alias)
            if alias_key in own:
                continue  # repeating the product's own name or alias is harmless; dropped
            own.add(alias_key)
            if alias_key in names:
                problems.append(
                    f"{label}.aliases[{alias_index}]: {alias!r} is already used by "
                    f"{names[alias_key]}"
                )
            else:
                names[alias_key] = f"{label}.aliases[{alias_index}]"
    return problems


def plan_import(raw: Any) -> ImportPlan:
    """Validate the whole decoded JSON document; raise `ShopDataError` listing problems."""
    if not isinstance(raw, dict):
        raise ShopDataError(
            ["document: expected a JSON object with orders, return_policies, general_return_policy"]
        )
    try:
        document = ShopDataDocument.model_validate(raw)
    except ValidationError as exc:
        raise ShopDataError(_describe(raw, exc)) from None
    problems = _cross_record_problems(document)
    if problems:
        raise ShopDataError(problems)

    plan = ImportPlan()
    for order in document.orders:
        values: dict[str, object] = {}
        for name in order.model_fields_set - {"order_id"}:
            value = getattr(order, name)
            if isinstance(value, OrderStatus):
                value = value.value
            elif isinstance(value, datetime | date):
                value = value.isoformat()
            values[name] = value
        plan.orders.append(OrderUpsert(order_id=order.order_id, values=values))
    for policy in document.return_policies:
        key = normalise_product_name(policy.product)
        aliases = None
        if policy.aliases is not None:
            normalised = (normalise_product_name(alias) for alias in policy.aliases)
            aliases = tuple(dict.fromkeys(a for a in normalised if a != key))
        plan.policies.append(
            ReturnPolicyUpsert(
                product=key,
                display_name=" ".join(policy.product.split()),
                return_days=policy.return_days,
                conditions=policy.conditions,
                aliases=aliases,
            )
        )
    if "general_return_policy" in document.model_fields_set:
        plan.texts[GENERAL_RETURN_POLICY_KEY] = document.general_return_policy
    return plan
