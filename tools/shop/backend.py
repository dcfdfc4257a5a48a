"""The seam between the bot and the shop's own system: what a backend must offer.

`SHOP_BACKEND` chooses one (local, http, medusa, shopify, woocommerce; the modules in
tools/shop/backends/). `ShopBackend` reads orders; `OrderActions` carries out the actions
a customer confirmed (cancel, return). Both raise `ShopUnavailable` for anything that went
wrong on the way to the shop, so the tools answer "temporarily unavailable" and never
show an internal detail; `check` raises `ShopSetupError` with one line for the start-up
check (exit 2). Policies, the FAQ and the shop's texts stay local on every backend.
"""

from __future__ import annotations

import functools
import logging
from collections.abc import Callable, Coroutine, Sequence
from dataclasses import dataclass
from typing import Any, Literal, ParamSpec, Protocol, TypeVar

from tools.shop.orders import LiveOrder, OrderItem, OrderNumberRule

log = logging.getLogger("tools.shop")
P = ParamSpec("P")
R = TypeVar("R")

UnavailableKind = Literal["timeout", "unavailable", "rate_limited", "auth", "malformed"]


class ShopUnavailable(Exception):
    """The shop could not answer (`kind` says how, for logs and metrics; no secrets, no
    customer data in the message)."""

    def __init__(self, kind: UnavailableKind, detail: str = "") -> None:
        super().__init__(f"{kind}: {detail}" if detail else kind)
        self.kind: UnavailableKind = kind
        self.detail = detail


# what a backend's reading of a broken or hostile answer can raise (a wrong shape, a
# nesting too deep): "malformed", never a crash
UNREADABLE = (ValueError, TypeError, KeyError, AttributeError, IndexError, RecursionError)


def unreadable_is_malformed(
    method: Callable[P, Coroutine[Any, Any, R]],
) -> Callable[P, Coroutine[Any, Any, R]]:
    """A backend method whose reading of the shop's answers fails in any `UNREADABLE`
    way raises the ordinary `ShopUnavailable("malformed")` instead, so every caller (a
    lookup, the order updates, a confirmed action asking again with its id) handles it
    as it handles any shop failure. The detail goes to DEBUG; the caller logs the line."""

    @functools.wraps(method)
    async def reading(*args: P.args, **kwargs: P.kwargs) -> R:
        try:
            return await method(*args, **kwargs)
        except UNREADABLE as exc:
            log.debug("shop: an answer could not be read in %s", method.__name__, exc_info=True)
            raise ShopUnavailable("malformed", type(exc).__name__) from None

    return reading


class ShopSetupError(Exception):
    """A set-up mistake found at start: the message is the one line the owner reads."""


class ShopBackend(Protocol):
    """Reads a shop's orders. Implementations return identity unfiltered (phone, email,
    Telegram id as the shop has them) and never decide access."""

    name: str  # "local", "http", ... (a metrics label, the log's name for it)
    number_rule: OrderNumberRule

    async def get_order(self, number: str) -> LiveOrder | None:
        """The order with this (normalised) number, None when the shop has none."""
        ...

    async def orders_for_phone(self, phone: str) -> Sequence[LiveOrder]:
        """Orders whose customer has this E.164 phone, newest first (a bounded page)."""
        ...

    async def check(self) -> None:
        """One cheap request proving the address and the credentials (start-up)."""
        ...

    def order_actions(self) -> OrderActions | None:
        """The backend's own actions (a live shop carries them out itself), or None: the
        local backend's are the bot's (tools/shop/backends/local_actions.py)."""
        ...

    async def aclose(self) -> None: ...


@dataclass(frozen=True, slots=True)
class ReturnLine:
    item: OrderItem
    quantity: int


@dataclass(frozen=True, slots=True)
class ActionDone:
    """Carried out (now, or by an earlier call with the same operation id)."""

    reference: str | None = None  # the platform's id of what was made (a return's id)


@dataclass(frozen=True, slots=True)
class ActionRejected:
    """The shop refused: `reason` is a short code the model and the customer can be told
    about ("not_cancellable", "already_cancelled", ...), never the platform's raw text."""

    reason: str


@dataclass(frozen=True, slots=True)
class ActionUnknown:
    """The request may or may not have taken effect (a timeout after sending): ask again
    with the same operation id before anything else."""

    detail: str = ""


@dataclass(frozen=True, slots=True)
class ActionRequested:
    """Not carried out by the bot: sent as a request to the shop's people, who answer
    Done or Refuse (the local backend: the bot cannot change an imported shop)."""


ActionResult = ActionDone | ActionRejected | ActionUnknown | ActionRequested


@dataclass(frozen=True, slots=True)
class ShippingAddress:
    """A new delivery address as the customer confirmed it on the card (personal data:
    never logged). `country_code`: ISO 3166-1 alpha-2, upper case."""

    line1: str  # street and house
    city: str
    postal_code: str
    country_code: str
    line2: str | None = None  # apartment, floor, entrance
    region: str | None = None  # province, state, oblast

    def words(self) -> str:
        """One line, as the card shows it: "Lenina 5, apt. 3, 101000 Moscow, RU"."""
        parts = [self.line1, self.line2, f"{self.postal_code} {self.city}", self.region]
        return ", ".join([p for p in parts if p] + [self.country_code])


# The built-in actions' names, as a backend declares them (`supported_actions`).
CANCEL_ORDER = "cancel_order"
REQUEST_RETURN = "request_return"
CHANGE_ADDRESS = "change_address"
NOT_SUPPORTED = "not_supported"  # an `ActionRejected` reason: the shop does not do this


class OrderActions(Protocol):
    """Carries out an action the customer confirmed. Idempotent by `operation_id`: a
    second call with the same id never acts twice and answers as the first did (through
    the platform's Idempotency-Key, or by finding the earlier result before acting), so a
    restart after a crash can simply call again."""

    async def supported_actions(self) -> frozenset[str]:
        """The actions this shop carries out (by name: `CANCEL_ORDER`, ...): what the
        backend implements, or what the shop declares (http: `GET /capabilities`).
        `ShopUnavailable` when the shop cannot tell now."""
        ...

    async def cancel_order(self, order: LiveOrder, operation_id: str) -> ActionResult: ...

    async def request_return(
        self, order: LiveOrder, lines: Sequence[ReturnLine], reason: str, operation_id: str
    ) -> ActionResult: ...

    async def change_address(
        self, order: LiveOrder, address: ShippingAddress, operation_id: str
    ) -> ActionResult:
        """The order's delivery address replaced (an order not shipped yet)."""
        ...
