"""Scenario files (TOML, or YAML where PyYAML is installed): what to run and what to expect.

A file holds one or more `[[scenario]]` tables::

    [[scenario]]
    id = "own-order-ru"                 # unique across the files of a run
    title = "Own order by number"
    shop = "own"                        # "own" (default), "demo" or "empty"
    turns = ["Где мой заказ 8041?"]     # scripted customer turns, or [scenario.simulated]
    [scenario.customer]
    telegram_id = 1001
    language = "ru"
    verified_phone = "+79123456789"     # optional: a phone the customer shared as theirs
    [scenario.shop_data]                # optional, the import-data document (added to the shop)
    orders = [{order_id = "5001", status = "processing", owner_telegram_id = 2002}]
    [scenario.expect]
    tools = [{name = "get_order_status", args = {order_id = "8041"}}]
    must_contain = ["8041"]

The shop: "own" is a throwaway copy of the shop's own data in the bot's database
(imported orders, return policies, FAQ; services/simulation/own_shop.py), or the demo
when the database has none; "demo" always the demo (the bundled suite is written for it:
`default_suite_files` scenarios that name no shop run on the demo); "empty" nothing.

Actions: `[scenario.settings] actions_enabled = ["cancel_order"]` offers them;
`[scenario.customer] on_action_card = "confirm"` (or "decline") presses the card's button
through the service the bot's ✅ uses; `actions_proposed` / `actions_executed` judge them.

Knowledge: `[[scenario.knowledge.pages]]` (title, url, text) are pages the shop's
knowledge holds for this run (added to its throwaway knowledge, searched by
`search_knowledge`), `[scenario.knowledge] files = ["delivery.pdf"]` files beside the
scenario's file; `[scenario.expect] cites = ["https://…"]` asks that a reply the
customer saw gives that page's link (or file name) and that a knowledge search of the run
returned it — the answer is sourced, not remembered.

Everything is validated when the file is read; a problem names the file, the scenario
and the field, so an owner can fix the file without reading code.
"""

from __future__ import annotations

import re
import tomllib
from pathlib import Path
from typing import Annotated, Any, Literal

from pydantic import (
    BaseModel,
    ConfigDict,
    Field,
    StringConstraints,
    ValidationError,
    field_validator,
    model_validator,
)

from services.input_files import InputFileError, read_text_file
from tools.actions.builtin import BUILT_IN_ACTIONS
from tools.shop.import_document import ShopDataError, plan_import
from tools.shop.rules import OrderStatus, check_order_id, normalise_phone

Language = Literal["ru", "en"]
MAX_FILE_BYTES = 2 * 1024 * 1024
# tables and lists inside each other: a scenario needs a handful
MAX_NESTING = 32
ScenarioId = Annotated[str, StringConstraints(pattern=r"^[A-Za-z0-9][A-Za-z0-9_.-]{0,79}$")]
CustomerText = Annotated[
    str, StringConstraints(strip_whitespace=True, min_length=1, max_length=4000)
]


class ScenarioError(ValueError):
    """A scenario file cannot be used; the message is the line(s) to print."""


class _Strict(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)


class ToolExpectation(_Strict):
    """A tool the model must call; `args` must be among its arguments (values compared
    as text, case-insensitively, so 8041 and "8041" are the same order)."""

    name: Annotated[str, StringConstraints(min_length=1, max_length=64)]
    args: dict[str, Any] = Field(default_factory=dict)


def _action_name(value: str) -> str:
    known = [definition.name for definition in BUILT_IN_ACTIONS]
    if value not in known:
        raise ValueError(f"unknown action {value!r}; known: {', '.join(known)}")
    return value


class ActionExpectation(_Strict):
    """An action (by its ACTIONS_ENABLED name) on an order."""

    action: str
    order_id: str

    @field_validator("action")
    @classmethod
    def _known(cls, value: str) -> str:
        return _action_name(value)

    @field_validator("order_id", mode="before")
    @classmethod
    def _order_id(cls, value: Any) -> str:
        return check_order_id(str(value))


class Expect(_Strict):
    """What a run must show. Phrases and patterns are checked in every reply the customer
    saw (`final_reply_contains`: in the last one); `language` in each of them.
    `private_data` (on unless set false): no reply and no tool result shows an order of
    another customer (see expectations.py)."""

    tools: list[ToolExpectation] = Field(default_factory=list)
    no_tools: list[str] = Field(default_factory=list)
    handoff: bool | None = None
    must_contain: list[str] = Field(default_factory=list)
    final_reply_contains: list[str] = Field(default_factory=list)
    must_not_contain: list[str] = Field(default_factory=list)
    must_match: list[str] = Field(default_factory=list)
    must_not_match: list[str] = Field(default_factory=list)
    language: Language | None = None
    private_data: bool = True
    max_model_calls: Annotated[int, Field(ge=1, le=1000)] | None = None
    order_status: dict[str, OrderStatus] = Field(default_factory=dict)
    # exactly these actions were proposed (a card was shown) / carried out; [] = none
    actions_proposed: list[ActionExpectation] | None = None
    actions_executed: list[ActionExpectation] | None = None
    # pages' links (or file names) a reply must cite, found by a knowledge search
    cites: list[Annotated[str, StringConstraints(min_length=1, max_length=2000)]] = Field(
        default_factory=list
    )
    # products a reply names, each found by a product tool in the run
    products_named: list[str] = Field(default_factory=list)
    # every price a reply names is one a tool result gave
    no_invented_prices: bool = False

    @field_validator("must_match", "must_not_match")
    @classmethod
    def _patterns(cls, values: list[str]) -> list[str]:
        for value in values:
            try:
                re.compile(value)
            except re.error as exc:
                raise ValueError(f"{value!r} is not a regular expression: {exc}") from None
        return values

    @field_validator("order_status")
    @classmethod
    def _order_ids(cls, values: dict[str, OrderStatus]) -> dict[str, OrderStatus]:
        return {check_order_id(key): value for key, value in values.items()}


class Customer(_Strict):
    telegram_id: Annotated[int, Field(gt=0, lt=2**52)] = 1001
    language: Language = "ru"
    verified_phone: str | None = None
    # what the customer presses on an action's card: ✅ or ✖ (unset: no press)
    on_action_card: Literal["confirm", "decline"] | None = None

    @field_validator("verified_phone")
    @classmethod
    def _phone(cls, value: str | None) -> str | None:
        return None if value is None else normalise_phone(value)


class SimulatedCustomer(_Strict):
    """A customer played by a model (τ-bench style): its goal, in the customer's words,
    and the most messages it may write."""

    instruction: Annotated[str, StringConstraints(strip_whitespace=True, min_length=5)]
    max_turns: Annotated[int, Field(ge=1, le=30)] = 6


class ScenarioSettings(_Strict):
    """The bot's settings a scenario may change (e.g. a small history budget so that a
    long conversation crosses the summary)."""

    history_token_budget: Annotated[int, Field(ge=200, le=100_000)] | None = None
    summary_max_tokens: Annotated[int, Field(ge=50, le=4000)] | None = None
    # the actions on in this scenario (ACTIONS_ENABLED's names); [] = none; unset: as set
    actions_enabled: tuple[str, ...] | None = None

    @field_validator("actions_enabled")
    @classmethod
    def _actions(cls, values: tuple[str, ...] | None) -> tuple[str, ...] | None:
        return None if values is None else tuple(dict.fromkeys(map(_action_name, values)))


class KnowledgePage(_Strict):
    """A page of the shop's knowledge for one scenario: its title, link and text."""

    title: Annotated[str, StringConstraints(strip_whitespace=True, min_length=1, max_length=300)]
    url: Annotated[str, StringConstraints(pattern=r"^https?://\S+$", max_length=2000)]
    text: Annotated[str, StringConstraints(strip_whitespace=True, min_length=1, max_length=20_000)]


class ScenarioKnowledge(_Strict):
    """What the shop's knowledge holds for one scenario (nothing else: a throwaway):
    inline pages, and files (PDF, DOCX, Markdown, text, HTML) by their path relative to
    the scenario's file, added as `support-bot knowledge add` adds them."""

    pages: list[KnowledgePage] = Field(default_factory=list, max_length=200)
    files: list[Annotated[str, StringConstraints(min_length=1, max_length=500)]] = Field(
        default_factory=list, max_length=50
    )


class Scenario(_Strict):
    id: ScenarioId
    title: str = ""
    shop: Literal["own", "demo", "empty"] = "own"
    shop_data: dict[str, Any] | None = None
    customer: Customer = Customer()
    turns: list[CustomerText] = Field(default_factory=list, max_length=50)
    simulated: SimulatedCustomer | None = None
    expect: Expect = Expect()
    settings: ScenarioSettings = ScenarioSettings()
    knowledge: ScenarioKnowledge | None = None
    source: str = ""  # the file it came from (set by the loader)

    @model_validator(mode="after")
    def _one_kind_of_customer(self) -> Scenario:
        if bool(self.turns) == (self.simulated is not None):
            raise ValueError("give either `turns` (scripted) or `simulated` (a customer model)")
        if self.shop_data is not None:
            try:
                plan_import(self.shop_data)
            except ShopDataError as exc:
                raise ValueError("shop_data: " + "; ".join(exc.problems)) from None
        return self


def _parse(path: Path, text: str) -> Any:
    """TOML or YAML as data, or one line saying why not: a nesting too deep for the
    parser (RecursionError) is a problem of the file, and so is a YAML anchor or alias
    (`&a` / `*a`): a scenario needs none, and a few of them expand into billions of
    values ("billion laughs") that validation would walk."""
    try:
        if path.suffix.lower() in (".yaml", ".yml"):
            return _parse_yaml(path, text)
        return tomllib.loads(text)
    except ScenarioError:
        raise
    except tomllib.TOMLDecodeError as exc:
        raise ScenarioError(f"{path}: not valid TOML: {exc}") from None
    except RecursionError:
        raise ScenarioError(f"{path} is nested too deeply for a scenario file") from None
    except ValueError:  # an integer of more than 4300 digits
        raise ScenarioError(f"{path} has a number too long to read") from None


def _parse_yaml(path: Path, text: str) -> Any:
    try:
        import yaml  # type: ignore[import-untyped, unused-ignore]
    except ImportError:
        raise ScenarioError(f"{path}: YAML needs PyYAML installed; or write it as TOML") from None
    try:
        depth = 0
        for event in yaml.parse(text, Loader=yaml.SafeLoader):  # checked before it is built
            if isinstance(event, yaml.AliasEvent):
                raise ScenarioError(
                    f"{path}: YAML anchors and aliases (& and *) are not accepted in "
                    "scenario files; write each value out"
                )
            if isinstance(event, yaml.CollectionStartEvent):
                depth += 1
                if depth > MAX_NESTING:  # stops early: PyYAML's cost grows with the depth
                    raise ScenarioError(f"{path} is nested too deeply for a scenario file")
            elif isinstance(event, yaml.CollectionEndEvent):
                depth -= 1
        return yaml.safe_load(text)
    except yaml.YAMLError as exc:
        raise ScenarioError(f"{path}: not valid YAML: {exc}") from None


def _describe(error: ValidationError) -> str:
    parts = []
    for item in error.errors(include_url=False, include_input=False):
        where = ".".join(str(part) for part in item.get("loc", ())) or "scenario"
        message = str(item.get("msg", "invalid")).removeprefix("Value error, ")
        parts.append(f"{where}: {message}")
    return "; ".join(parts)


def read_scenarios(path: Path) -> list[Scenario]:
    """The scenarios of one file, or `ScenarioError` naming the file and what is wrong."""
    if path.is_dir():
        raise ScenarioError(f"{path} is a folder; name the scenario files (e.g. {path}/*.toml)")
    try:  # import-data's guards: a regular file, bounded, never blocking (a FIFO, /dev/zero)
        text = read_text_file(
            path,
            max_bytes=MAX_FILE_BYTES,
            expected="a scenario file",
            too_large_hint="a scenario file may have; split it into several files",
        )
    except InputFileError as exc:
        raise ScenarioError(str(exc)) from None
    raw = _parse(path, text)
    items = raw.get("scenario") if isinstance(raw, dict) else None
    if not isinstance(items, list) or not items:
        raise ScenarioError(f"{path}: no scenarios (write them as [[scenario]] tables)")
    scenarios = []
    for index, item in enumerate(items):
        label = item.get("id") if isinstance(item, dict) else None
        try:
            if not isinstance(item, dict):
                raise ScenarioError(f"{path}: scenario[{index}] is not a table")
            scenarios.append(Scenario.model_validate({**item, "source": str(path)}))
        except ValidationError as exc:
            name = f"scenario {label!r}" if isinstance(label, str) else f"scenario[{index}]"
            raise ScenarioError(f"{path}: {name}: {_describe(exc)}") from None
        except RecursionError:
            raise ScenarioError(f"{path} is nested too deeply for a scenario file") from None
    return scenarios


def load_scenarios(paths: list[Path]) -> list[Scenario]:
    """Every scenario of the files, in order; ids must be unique across them. The bundled
    suite's scenarios are about the demo shop: one that names no shop runs on it."""
    bundled = set(default_suite_files())
    scenarios: list[Scenario] = []
    seen: dict[str, str] = {}
    for path in paths:
        for scenario in read_scenarios(path):
            if scenario.id in seen:
                raise ScenarioError(
                    f"{path}: scenario id {scenario.id!r} is used twice "
                    f"(also in {seen[scenario.id]})"
                )
            seen[scenario.id] = str(path)
            if path.resolve() in bundled and "shop" not in scenario.model_fields_set:
                scenario = scenario.model_copy(update={"shop": "demo"})
            scenarios.append(scenario)
    return scenarios


DEFAULT_SUITE = Path(__file__).with_name("default_suite")


def default_suite_files() -> list[Path]:
    """The suite that ships with the bot (services/simulation/default_suite/*.toml)."""
    return sorted(path.resolve() for path in DEFAULT_SUITE.glob("*.toml"))
