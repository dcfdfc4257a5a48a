"""What every shop backend returns about its catalogue: products with their variants, in
the bot's vocabulary, and the owner's words for how much is left.

A backend (tools/shop/backends/) reads the catalogue wherever the shop keeps it and maps
it onto `Product`; the product tools (tools/products.py) search and show it. Products are
public: nothing here belongs to a customer, so any caller in any chat may read them.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from datetime import date
from enum import StrEnum
from typing import Protocol, runtime_checkable

from tools.shop.orders import Money


class Availability(StrEnum):
    """The owner's words for a variant's stock (never the raw count unless the owner
    chose to show it: `StockWords.show_counts`)."""

    IN_STOCK = "in_stock"
    FEW_LEFT = "few_left"  # "only a few left"
    OUT_OF_STOCK = "out_of_stock"


@dataclass(frozen=True, slots=True)
class Variant:
    """One buyable form of a product (a size, a colour).

    - `options`: (name, value) pairs as the shop writes them: (("Размер", "42"),
      ("Цвет", "чёрный")).
    - `stock`: the count the shop tracks, None when it does not track one;
      `in_stock`: the shop's own yes/no where it gives no count (None with no count:
      for sale and not tracked, i.e. in stock, as the platforms sell such variants).
    - `restock_date`: when it is expected back, where the shop says.
    """

    variant_id: str
    title: str = ""
    options: tuple[tuple[str, str], ...] = ()
    price: Money | None = None
    stock: int | None = None
    in_stock: bool | None = None
    restock_date: date | None = None


@dataclass(frozen=True, slots=True)
class Product:
    """One product as the shop has it now; `url` is its page in the shop (http(s))."""

    product_id: str
    title: str
    description: str = ""
    url: str | None = None
    variants: tuple[Variant, ...] = ()


@dataclass(frozen=True, slots=True)
class StockWords:
    """How availability is told (PRODUCTS_FEW_LEFT, PRODUCTS_SHOW_STOCK_COUNT)."""

    few_left: int = 3  # at most this many left is "only a few left"
    show_counts: bool = False

    def availability(self, variant: Variant) -> Availability:
        if variant.stock is not None:
            if variant.stock <= 0:
                return Availability.OUT_OF_STOCK
            return (
                Availability.FEW_LEFT if variant.stock <= self.few_left else Availability.IN_STOCK
            )
        return Availability.OUT_OF_STOCK if variant.in_stock is False else Availability.IN_STOCK

    def count(self, variant: Variant) -> int | None:
        """The exact count, only when the owner shows counts."""
        if not self.show_counts or variant.stock is None:
            return None
        return max(0, variant.stock)


@runtime_checkable
class ProductSource(Protocol):
    """A backend that reads the shop's catalogue."""

    name: str

    async def catalogue(self) -> Sequence[Product]:
        """Every product the shop sells now (bounded: `MAX_CATALOGUE_VARIANTS`), with
        its variants; raises `ShopUnavailable` like the order reads."""
        ...


# The most variants a catalogue is read with (a bigger shop is cut here, with a WARNING)
MAX_CATALOGUE_VARIANTS = 50_000
