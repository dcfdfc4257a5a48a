"""The shop-data import document: its shape, its rules, and the plan it becomes.

`python -m bot import-data FILE.json` must write all of a file or nothing, so the whole
document is validated here first and every problem is reported with the record and
field it concerns. Order numbers, statuses and product names follow `tools.shop.rules`,
the rules `get_return_policy` and `get_order_status` apply to a customer's words, so
what is imported is what is found.

Document (every top-level key optional, unknown keys rejected)::

    {"orders": [{"order_id": "8041", "status": "in_transit",
                 "owner_telegram_id": 123, "owner_phone": "+79123456789",
                 "updated_at": "2026-11-29T10:00:00+03:00",
                 "pickup_point": "...", "expected_date": "2026-12-01",
                 "items": [{"name": "Наушники", "quantity": 1}],
                 "total": {"amount": "4990.00", "currency": "RUB"},
                 "carrier": "СДЭК", "tracking_number": "1234567890",
                 "tracking_url": "https://..."}],
     "return_policies": [{"product": "Наушники", "return_days": 7,
                          "conditions": "...", "aliases": ["headphones"]}],
     "general_return_policy": "...",
     "faq": [{"topic": "Доставка", "answer": "...", "aliases": ["delivery"]}],
     "products": [{"product_id": "arctic", "title": "Пуховик Arctic",
                   "description": "...", "url": "https://shop.example/arctic",
                   "variants": [{"variant_id": "arctic-m-black",
                                 "options": {"Размер": "M", "Цвет": "чёрный"},
                                 "price": {"amount": "12990", "currency": "RUB"},
                                 "stock": 4, "restock_date": "2026-12-20"}]}]}

An order's `items` (at most 200, a name and a quantity each), `total` (a non-negative
amount, given as a string or a number, and a three-letter ISO 4217 currency code) and
tracking (`carrier`, `tracking_number`, an http(s) `tracking_url`) are what the live
backends read from a shop; the local backend shows them the same way.

`products` is the shop's whole catalogue (docs/shop-data.md): when given it replaces the
stored one (`[]` removes every product). A variant's availability is its `stock` (a count)
or, where the shop keeps no count, `in_stock` (true or false); with neither it is for sale
(in stock). Product ids and a product's variant ids are unique.

Bounds: at most 10,000 orders (with 50,000 items in all) and 10,000 return policies per
file, 50 aliases per policy; at most 1,000 FAQ entries with 50 aliases each; at most
20,000 products with 100 variants each and 50,000 variants in all; at most 100 problem
lines are kept (the total is counted).

`owner_phone` names the order's owner by phone: it is stored in E.164 (see
`tools.shop.rules.normalise_phone`: "+" and 8..15 digits; a Russian "8 (912) 345-67-89"
or "7 912 ..." becomes "+79123456789"); anything else is a listed problem, which never
repeats the number. An order is shown to the customer whose Telegram id is
`owner_telegram_id` or whose verified phone (shared as their own contact) is `owner_phone`.

Update semantics: an order field that is left out keeps its stored value, an explicit
null clears it (so a re-import without `owner_telegram_id` or `owner_phone` never makes
a private order public by accident). A policy replaces the stored one; its aliases are
replaced when `aliases` is given and kept when it is left out. `general_return_policy:
null` removes it.
`faq` is the shop's whole FAQ: when given it replaces the stored one (an entry not in the
list is removed, `[]` removes all); left out, the stored FAQ stays. FAQ topics and
aliases are matched by `tools.shop.faq.faq_key`, so two that have the same key (in any
entries) are a problem, as are ones without a letter or digit.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import date, datetime
from decimal import Decimal
from typing import Annotated, Any, TypeVar
from urllib.parse import urlsplit

from pydantic import (
    AfterValidator,
    BaseModel,
    ConfigDict,
    Field,
    StrictInt,
    StringConstraints,
    ValidationError,
    ValidationInfo,
    field_validator,
)

from storage.shop_records import FaqRecord, OrderUpsert, ProductRecord, ReturnPolicyUpsert
from tools.shop.faq import faq_key
from tools.shop.orders import FOUR_DIGITS, OrderNumberRule
from tools.shop.rules import (
    GENERAL_RETURN_POLICY_KEY,
    OrderStatus,
    normalise_phone,
    normalise_product_name,
)

Text = Annotated[str, StringConstraints(strip_whitespace=True, min_length=1)]

# Bounds of one file, so that validating it takes bounded memory and time (the CLI adds
# the file-size bound): records per list, aliases per policy, problem lines kept.
MAX_ORDERS = 10_000
MAX_RETURN_POLICIES = 10_000
MAX_ALIASES = 50
MAX_FAQ_ENTRIES = 1_000
MAX_ITEMS = 200  # an order's items (as the HTTP contract bounds them)
MAX_FILE_ITEMS = 50_000  # the items of all orders of one file
MAX_PRODUCTS = 20_000
MAX_VARIANTS = 100  # one product's
MAX_FILE_VARIANTS = 50_000  # the variants of all products of one file
MAX_OPTIONS = 10
MAX_PROBLEMS_SHOWN = 100
# Telegram: "user identifiers have at most 52 significant bits"; also keeps every id
# inside SQLite's 64-bit INTEGER.
TELEGRAM_ID_LIMIT = 2**52


class ItemIn(BaseModel):
    model_config = ConfigDict(extra="forbid")

    name: Annotated[Text, StringConstraints(max_length=300)]
    quantity: Annotated[StrictInt, Field(ge=1, le=1_000_000)] = 1


class TotalIn(BaseModel):
    model_config = ConfigDict(extra="forbid")

    amount: Annotated[Decimal, Field(ge=0, lt=10**12, decimal_places=4, allow_inf_nan=False)]
    currency: Annotated[str, StringConstraints(strip_whitespace=True, to_upper=True)]

    @field_validator("currency")
    @classmethod
    def _currency(cls, value: str) -> str:
        if len(value) != 3 or not value.isascii() or not value.isalpha():
            raise ValueError("must be a three-letter ISO 4217 code, e.g. RUB, EUR, USD")
        return value


def _web_address(value: str) -> str:
    parts = urlsplit(value)
    if parts.scheme not in ("http", "https") or not parts.hostname:
        raise ValueError("must be an http:// or https:// address")
    return value


class OrderIn(BaseModel):
    model_config = ConfigDict(extra="forbid")

    order_id: str
    status: OrderStatus
    owner_telegram_id: Annotated[StrictInt, Field(gt=0, lt=TELEGRAM_ID_LIMIT)] | None = None
    owner_phone: Annotated[str, StringConstraints(max_length=40)] | None = None
    updated_at: datetime | None = None
    pickup_point: Annotated[Text, StringConstraints(max_length=300)] | None = None
    expected_date: date | None = None
    items: Annotated[list[ItemIn], Field(max_length=MAX_ITEMS)] | None = None
    total: TotalIn | None = None
    carrier: Annotated[Text, StringConstraints(max_length=100)] | None = None
    tracking_number: Annotated[Text, StringConstraints(max_length=100)] | None = None
    tracking_url: (
        Annotated[Text, StringConstraints(max_length=2000), AfterValidator(_web_address)] | None
    ) = None

    @field_validator("order_id")
    @classmethod
    def _order_id(cls, value: str, info: ValidationInfo) -> str:
        # the shop's rule (ORDER_NUMBER_PATTERN) comes in the validation context
        rule = info.context.get("number_rule") if isinstance(info.context, dict) else None
        return (rule if isinstance(rule, OrderNumberRule) else FOUR_DIGITS).normalise(value)

    @field_validator("owner_phone")
    @classmethod
    def _owner_phone(cls, value: str | None) -> str | None:
        return None if value is None else normalise_phone(value)


Alias = Annotated[Text, StringConstraints(min_length=2, max_length=100)]


class ReturnPolicyIn(BaseModel):
    model_config = ConfigDict(extra="forbid")

    product: Annotated[Text, StringConstraints(min_length=2, max_length=100)]
    return_days: Annotated[StrictInt, Field(ge=0, le=3650)]
    conditions: Annotated[Text, StringConstraints(max_length=2000)]
    aliases: Annotated[list[Alias], Field(max_length=MAX_ALIASES)] | None = None


def _has_words(value: str) -> str:
    if not faq_key(value):
        raise ValueError("must contain a letter or a digit")
    return value


FaqKey = Annotated[
    Text, StringConstraints(min_length=2, max_length=100), AfterValidator(_has_words)
]


class FaqIn(BaseModel):
    model_config = ConfigDict(extra="forbid")

    topic: FaqKey
    answer: Annotated[Text, StringConstraints(max_length=2000)]
    aliases: Annotated[list[FaqKey], Field(max_length=MAX_ALIASES)] | None = None


Id = Annotated[Text, StringConstraints(max_length=100)]
OptionText = Annotated[Text, StringConstraints(max_length=100)]


class VariantIn(BaseModel):
    model_config = ConfigDict(extra="forbid")

    variant_id: Id
    title: Annotated[Text, StringConstraints(max_length=300)] | None = None
    options: Annotated[dict[OptionText, OptionText], Field(max_length=MAX_OPTIONS)] = Field(
        default_factory=dict
    )
    price: TotalIn | None = None
    stock: Annotated[StrictInt, Field(ge=0, le=10**9)] | None = None
    in_stock: bool | None = None
    restock_date: date | None = None


class ProductIn(BaseModel):
    model_config = ConfigDict(extra="forbid")

    product_id: Id
    title: Annotated[Text, StringConstraints(max_length=300)]
    description: Annotated[str, StringConstraints(strip_whitespace=True, max_length=5000)] = ""
    url: (
        Annotated[Text, StringConstraints(max_length=2000), AfterValidator(_web_address)] | None
    ) = None
    variants: Annotated[list[VariantIn], Field(min_length=1, max_length=MAX_VARIANTS)]


_Record = TypeVar("_Record", OrderIn, ReturnPolicyIn, FaqIn, ProductIn)


class _TopLevel(BaseModel):
    """The document's own keys; the records in the lists are validated one at a time."""

    model_config = ConfigDict(extra="forbid")

    orders: list[Any] = Field(default_factory=list)
    return_policies: list[Any] = Field(default_factory=list)
    general_return_policy: Annotated[Text, StringConstraints(max_length=4000)] | None = None
    faq: list[Any] = Field(default_factory=list)  # null is invalid: [] removes every entry
    products: list[Any] = Field(default_factory=list)  # likewise: [] removes every product


@dataclass(slots=True)
class ImportPlan:
    """What to write, already in storage's terms."""

    orders: list[OrderUpsert] = field(default_factory=list)
    policies: list[ReturnPolicyUpsert] = field(default_factory=list)
    texts: dict[str, str | None] = field(default_factory=dict)
    faq: list[FaqRecord] | None = None  # None: the document has no `faq`, keep the stored one
    products: list[ProductRecord] | None = None  # None: no `products`, keep the stored ones


class ShopDataError(ValueError):
    """The document is invalid; `problems` has one line per record and field.

    At most `MAX_PROBLEMS_SHOWN` lines are kept; `total` counts all of them.
    """

    def __init__(self, problems: list[str], total: int | None = None) -> None:
        self.problems = problems
        self.total = len(problems) if total is None else total
        super().__init__(f"{self.total} problem(s) in the shop data")


@dataclass(slots=True)
class _Problems:
    shown: list[str] = field(default_factory=list)
    total: int = 0

    def add(self, lines: list[str]) -> None:
        self.total += len(lines)
        room = MAX_PROBLEMS_SHOWN - len(self.shown)
        if room > 0:
            self.shown.extend(lines[:room])


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
            for key in ("order_id", "product", "topic", "product_id"):
                if isinstance(record.get(key), str):
                    parts[0] += f" ({key} {record[key][:60]!r})"
                    break
    label = parts[0]
    for part in rest:
        label += f"[{part}]" if isinstance(part, int) else f".{part}"
    return label


def _describe(raw: Any, error: ValidationError, prefix: tuple[Any, ...] = ()) -> list[str]:
    lines = []
    for item in error.errors(include_url=False, include_input=False, include_context=False):
        where = _record_label(raw, prefix + tuple(item.get("loc", ())))
        kind = item.get("type")
        if kind == "missing":
            text = "required field is missing"
        elif kind == "extra_forbidden":
            text = "unknown field"
        else:
            text = str(item.get("msg", "invalid value")).removeprefix("Value error, ")
        lines.append(f"{where}: {text}")
    return lines


def _cross_record_problems(orders: list[OrderIn], policies: list[ReturnPolicyIn]) -> list[str]:
    problems: list[str] = []
    seen_orders: dict[str, int] = {}
    for index, order in enumerate(orders):
        if order.order_id in seen_orders:
            problems.append(
                f"orders[{index}] (order_id {order.order_id!r}).order_id: duplicate of "
                f"orders[{seen_orders[order.order_id]}]"
            )
        else:
            seen_orders[order.order_id] = index
    names: dict[str, str] = {}  # normalised name or alias -> where it was first used
    for index, policy in enumerate(policies):
        label = f"return_policies[{index}] (product {policy.product!r})"
        key = normalise_product_name(policy.product)
        if key in names:
            problems.append(f"{label}.product: same name as {names[key]}")
        else:
            names[key] = f"{label}.product"
        aliases = policy.aliases or []
        problems += _alias_clashes(label, key, aliases, normalise_product_name, names)
    return problems


def _alias_clashes(
    label: str,
    own_key: str,
    aliases: list[str],
    key_of: Callable[[str], str],
    claimed: dict[str, str],
) -> list[str]:
    """Aliases whose key another record already uses; claims the others in `claimed`.

    Repeating the record's own name or alias is harmless: it is skipped, not a problem.
    """
    problems: list[str] = []
    own = {own_key}
    for alias_index, alias in enumerate(aliases):
        alias_key = key_of(alias)
        if alias_key in own:
            continue
        own.add(alias_key)
        where = f"{label}.aliases[{alias_index}]"
        if alias_key in claimed:
            problems.append(f"{where}: {alias!r} is already used by {claimed[alias_key]}")
        else:
            claimed[alias_key] = where
    return problems


def _faq_problems(entries: list[FaqIn]) -> list[str]:
    """Two topics or aliases with the same key, in any entries, are a problem."""
    problems: list[str] = []
    keys: dict[str, str] = {}  # key of a topic or alias -> where it was first used
    for index, entry in enumerate(entries):
        label = f"faq[{index}] (topic {entry.topic[:60]!r})"
        key = faq_key(entry.topic)
        if key in keys:
            problems.append(f"{label}.topic: {entry.topic!r} is already used by {keys[key]}")
        else:
            keys[key] = f"{label}.topic"
        problems += _alias_clashes(label, key, entry.aliases or [], faq_key, keys)
    return problems


def _product_problems(products: list[ProductIn]) -> list[str]:
    """A product id given twice, or a variant id twice within one product."""
    problems: list[str] = []
    seen: dict[str, int] = {}
    for index, product in enumerate(products):
        label = f"products[{index}] (product_id {product.product_id[:60]!r})"
        if product.product_id in seen:
            problems.append(
                f"{label}.product_id: duplicate of products[{seen[product.product_id]}]"
            )
        else:
            seen[product.product_id] = index
        variants: dict[str, int] = {}
        for v_index, variant in enumerate(product.variants):
            if variant.variant_id in variants:
                problems.append(
                    f"{label}.variants[{v_index}].variant_id: duplicate of "
                    f"variants[{variants[variant.variant_id]}]"
                )
            else:
                variants[variant.variant_id] = v_index
    return problems


def _product_record(product: ProductIn) -> ProductRecord:
    document = product.model_dump(mode="json", exclude={"product_id"}, exclude_none=True)
    return ProductRecord(product.product_id, json.dumps(document, ensure_ascii=False))


def _policy_upsert(policy: ReturnPolicyIn) -> ReturnPolicyUpsert:
    key = normalise_product_name(policy.product)
    aliases = None
    if policy.aliases is not None:
        normalised = (normalise_product_name(alias) for alias in policy.aliases)
        aliases = tuple(dict.fromkeys(a for a in normalised if a != key))
    return ReturnPolicyUpsert(
        product=key,
        display_name=" ".join(policy.product.split()),
        return_days=policy.return_days,
        conditions=policy.conditions,
        aliases=aliases,
    )


def _order_values(order: OrderIn) -> dict[str, object]:
    """The columns the document gives (a field left out keeps its stored value, null
    clears it), in storage's terms: ISO dates, items as JSON, the total in two columns."""
    values: dict[str, object] = {}
    for name in order.model_fields_set - {"order_id"}:
        value = getattr(order, name)
        if name == "items":
            items = None if value is None else [i.model_dump() for i in value]
            values[name] = None if items is None else json.dumps(items, ensure_ascii=False)
        elif name == "total":
            values["total_amount"] = None if value is None else format(value.amount, "f")
            values["total_currency"] = None if value is None else value.currency
        elif isinstance(value, OrderStatus):
            values[name] = value.value
        elif isinstance(value, datetime | date):
            values[name] = value.isoformat()
        else:
            values[name] = value
    return values


def _faq_record(entry: FaqIn) -> FaqRecord:
    key = faq_key(entry.topic)
    aliases = (faq_key(alias) for alias in entry.aliases or [])
    return FaqRecord(
        key=key,
        topic=" ".join(entry.topic.split()),
        answer=entry.answer,
        aliases=tuple(dict.fromkeys(a for a in aliases if a != key)),
    )


def _records(
    raw: dict[str, Any],
    key: str,
    model: type[_Record],
    limit: int,
    problems: _Problems,
    context: dict[str, Any] | None = None,
) -> list[_Record]:
    """Validate the records of one list one at a time (bounded memory for the errors)."""
    items = raw.get(key)
    if not isinstance(items, list):
        return []  # reported by the top-level validation
    if len(items) > limit:
        problems.add([f"{key}: {len(items)} records, at most {limit} per file; split the file"])
        return []
    valid: list[_Record] = []
    for index, item in enumerate(items):
        try:
            valid.append(model.model_validate(item, context=context))
        except ValidationError as exc:
            problems.add(_describe(raw, exc, prefix=(key, index)))
    return valid


def plan_import(raw: Any, number_rule: OrderNumberRule = FOUR_DIGITS) -> ImportPlan:
    """Validate the whole decoded JSON document; raise `ShopDataError` listing problems.

    Order numbers must follow `number_rule` (the shop's, ORDER_NUMBER_PATTERN; the
    demo's four digits by default) and are stored as the rule normalises them, which is
    how `get_order_status` looks them up."""
    if not isinstance(raw, dict):
        raise ShopDataError(
            [
                "document: expected a JSON object with orders, return_policies, "
                "general_return_policy, faq, products"
            ]
        )
    problems = _Problems()
    top: _TopLevel | None = None
    try:
        top = _TopLevel.model_validate(raw)
    except ValidationError as exc:
        problems.add(_describe(raw, exc))
    orders = _records(raw, "orders", OrderIn, MAX_ORDERS, problems, {"number_rule": number_rule})
    policies = _records(raw, "return_policies", ReturnPolicyIn, MAX_RETURN_POLICIES, problems)
    faq = _records(raw, "faq", FaqIn, MAX_FAQ_ENTRIES, problems)
    products = _records(raw, "products", ProductIn, MAX_PRODUCTS, problems)
    items = sum(len(order.items or ()) for order in orders)
    if items > MAX_FILE_ITEMS:
        problems.add(
            [f"orders: {items} items in all, at most {MAX_FILE_ITEMS} per file; split the file"]
        )
    variants = sum(len(product.variants) for product in products)
    if variants > MAX_FILE_VARIANTS:
        problems.add([f"products: {variants} variants in all, at most {MAX_FILE_VARIANTS}"])
    if not problems.total:
        problems.add(_cross_record_problems(orders, policies))
        problems.add(_faq_problems(faq))
        problems.add(_product_problems(products))
    if problems.total or top is None:
        raise ShopDataError(problems.shown, problems.total)

    plan = ImportPlan()
    plan.orders = [
        OrderUpsert(order_id=order.order_id, values=_order_values(order)) for order in orders
    ]
    plan.policies = [_policy_upsert(policy) for policy in policies]
    if "general_return_policy" in top.model_fields_set:
        plan.texts[GENERAL_RETURN_POLICY_KEY] = top.general_return_policy
    if "faq" in top.model_fields_set:
        plan.faq = [_faq_record(entry) for entry in faq]
    if "products" in top.model_fields_set:
        plan.products = [_product_record(product) for product in products]
    return plan
