"""What one action is: the definition a shop developer writes to add an action.

The mechanism (the proposing tool, the pending row, the card, the press, the exactly-once
execution, the audit, /stats) is shared; a definition supplies only what differs:

- `name` (the proposing tool is `propose_<name>`), `description` for the model and the
  `arguments_model` (a subclass of `ActionArguments`: the order number plus the action's
  own fields);
- `check(order, arguments, policy)`: may it happen to this order now? Run when proposed
  and again on ✅ against the order as the shop has it then;
- `effect(order, arguments)`: the card's exact words per language ("Cancel order 8041:
  USB-C cable ×2, 1 990 ₽?"), `done(order, arguments, reference)`: the result's words;
- `execute(actions, order, arguments, operation_id)`: the backend call, idempotent by the
  operation id.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Mapping
from dataclasses import dataclass
from datetime import datetime
from typing import TYPE_CHECKING, Generic, Protocol, TypeVar

from pydantic import BaseModel, ConfigDict, Field

from tools.shop.backend import ActionResult, OrderActions
from tools.shop.orders import LiveOrder, Money, OrderNumberRule

if TYPE_CHECKING:
    from storage.shop import ShopRepository

Words = dict[str, str]  # language ("ru", "en") -> the words


class ActionArguments(BaseModel):
    """The arguments every proposing tool takes; an action adds its own fields."""

    model_config = ConfigDict(extra="forbid")

    order_id: str = Field(
        min_length=1,
        max_length=64,
        description="The order number as the customer gave it, e.g. 8041, without guessing.",
    )


ArgsT = TypeVar("ArgsT", bound=ActionArguments)


@dataclass(frozen=True, slots=True)
class Allowed:
    """The action may happen to this order now."""


@dataclass(frozen=True, slots=True)
class Refused:
    """It may not: `code` ("not_cancellable", "outside_return_window", ...) and `message`,
    what the model is told so it can explain."""

    code: str
    message: str


Decision = Allowed | Refused


async def _nothing_returning(_order: str) -> Mapping[str, int]:
    return {}


@dataclass(frozen=True, slots=True)
class Policy:
    """What a check may consult besides the order: the shop's policies, the time, and
    what of an order is already being returned (`returning(order number)`: normalised
    product name → quantity, over the returns confirmed — done, running or unknown —
    other than the one being checked)."""

    shop: ShopRepository
    now: datetime
    returning: Callable[[str], Awaitable[Mapping[str, int]]] = _nothing_returning


@dataclass(frozen=True, slots=True)
class ActionDefinition(Generic[ArgsT]):
    name: str
    description: str
    arguments_model: type[ArgsT]
    check: Callable[[LiveOrder, ArgsT, Policy], Awaitable[Decision]]
    effect: Callable[[LiveOrder, ArgsT], Words]
    done: Callable[[LiveOrder, ArgsT, str | None], Words]
    execute: Callable[[OrderActions, LiveOrder, ArgsT, str], Awaitable[ActionResult]]

    @property
    def tool_name(self) -> str:
        return f"propose_{self.name}"


# -- words shared by the definitions ------------------------------------------------

_CURRENCY_SIGNS = {"RUB": "₽", "USD": "$", "EUR": "€"}


NBSP = "\u00a0"
MAX_MONEY_DIGITS = 40  # a total with more digits than this is not shown on a card


def money_words(money: Money) -> str | None:
    """1990 RUB → "1 990 ₽" (a no-break space between thousands); None for an amount no
    card should show (not finite, or beyond `MAX_MONEY_DIGITS` digits). Formatting, not
    arithmetic: any size the shop sends is written without the decimal context's limit."""
    amount = money.amount
    if not amount.is_finite() or amount.adjusted() >= MAX_MONEY_DIGITS:
        return None
    whole = format(amount, ",.0f") if amount == amount.to_integral_value() else f"{amount:,}"
    sign = _CURRENCY_SIGNS.get(money.currency.upper(), money.currency)
    return whole.replace(",", NBSP) + NBSP + sign


def items_words(order: LiveOrder) -> str:
    """ "USB-C cable ×2, Charger ×1, 1 990 ₽" — or "" when the shop gave neither."""
    parts = [f"{item.name} ×{item.quantity}" for item in order.items]
    total = None if order.total is None else money_words(order.total)
    if total is not None:
        parts.append(total)
    return ", ".join(parts)


class ActionShop(OrderActions, Protocol):
    """What the mechanism needs from the shop: its order-number rule, the order as the
    order lookups read it (`get_order`: through the ShopDirectory, its cache included),
    the order read fresh for the re-check on ✅ (`read_fresh`: never a cached copy), and
    the actions (tools/shop/backend.py). Reads raise `ShopUnavailable` when the shop
    cannot answer."""

    @property
    def number_rule(self) -> OrderNumberRule: ...

    async def get_order(self, number: str) -> LiveOrder | None: ...

    async def read_fresh(self, number: str) -> LiveOrder | None: ...
