"""`search_products` and `get_product`: what the shop sells, at what price, in which sizes
and colours, whether it is there, and the product's page.

Both read the catalogue through `ProductCatalog` (tools/shop/catalog.py: the configured
`SHOP_BACKEND`, cached). Products are public: the tools take no customer data and return
none, so they answer anyone in any chat. Availability is told in the owner's words —
in stock, only a few left, out of stock — and the exact count only when the owner
shows counts (PRODUCTS_SHOW_STOCK_COUNT). Results are bounded (`MAX_RESULTS` products,
`MAX_VARIANTS_SHOWN` variants each in a search), and a product the shop does not have is
a plain "not found": the model is told not to name or price anything else.
"""

from __future__ import annotations

import logging
from datetime import date
from decimal import Decimal
from typing import Annotated, Any

from pydantic import (
    BaseModel,
    ConfigDict,
    Field,
    SerializerFunctionWrapHandler,
    StringConstraints,
    field_validator,
    model_serializer,
)

from tools.base import ErrorCode, LookupResult, Tool, ToolBusinessError, ToolContext
from tools.shop.backend import ShopUnavailable
from tools.shop.catalog import ProductCatalog
from tools.shop.product_search import Filters
from tools.shop.products import Availability, Product, StockWords, Variant

log = logging.getLogger("tools.products")

SEARCH_PRODUCTS = "search_products"
GET_PRODUCT = "get_product"
MAX_RESULTS = 5
MAX_VARIANTS_SHOWN = 8  # per product in a search result
MAX_VARIANTS = 50  # in one product's card
MAX_DESCRIPTION = 300  # characters of a product's description the model gets

SEARCH_DESCRIPTION = (
    "Search the shop's catalogue: the best matching products, each with its variants "
    "(options, price, availability, restock date) and url."
)
GET_DESCRIPTION = (
    "One product with all its variants and its url, by a product_id from search_products."
)
FOUND_MESSAGE = (
    "The shop's products; use only what they say (price with its currency, availability "
    "as given). Give the customer the url of the product you mention."
)
NOT_FOUND_MESSAGE = (
    "The shop has no product matching this. Tell the customer it was not found; do not "
    "name, describe or price any other product from general knowledge."
)
OUT_OF_STOCK_MESSAGE = (
    " Products matching the words and options exist but are out of stock in what was "
    "asked (out_of_stock); say so, with the restock date where one is given."
)
UNAVAILABLE_MESSAGE = (
    "The shop's catalogue is temporarily unavailable, so products cannot be checked right "
    "now. Apologise briefly and ask the customer to try again in a few minutes; do not "
    "guess prices or availability."
)

Query = Annotated[str, StringConstraints(strip_whitespace=True, min_length=2, max_length=200)]
OptionValue = Annotated[str, StringConstraints(strip_whitespace=True, min_length=1, max_length=50)]
Amount = Annotated[Decimal, Field(ge=0, lt=10**12, allow_inf_nan=False)]


class SearchProductsArguments(BaseModel):
    model_config = ConfigDict(extra="forbid")

    query: Query = Field(description="What the customer wants, in their own words.")
    size: OptionValue | None = Field(
        default=None, description="Only if the customer named a size, e.g. 42, M."
    )
    colour: OptionValue | None = Field(
        default=None, description="Only if the customer named a colour."
    )
    in_stock_only: bool = Field(
        default=False, description="Only if the customer asked for in stock."
    )
    price_min: Amount | None = Field(
        default=None, description="Only if the customer named a lowest price."
    )
    price_max: Amount | None = Field(
        default=None, description="Only if the customer named a highest price."
    )

    @field_validator("in_stock_only", mode="before")
    @classmethod
    def _unset(cls, value: object) -> object:
        """null means "not asked" (small models write every optional field, as null:
        6 calls of the 1.5B model were refused for it); the schema is unchanged."""
        return False if value is None else value


class GetProductArguments(BaseModel):
    model_config = ConfigDict(extra="forbid")

    product_id: Annotated[
        str, StringConstraints(strip_whitespace=True, min_length=1, max_length=200)
    ] = Field(description="From a search_products result.")


class PriceOut(BaseModel):
    amount: Decimal
    currency: str


class _Compact(BaseModel):
    """Leaves out what the shop did not give (no nulls the model cannot use)."""

    @model_serializer(mode="wrap")
    def _without_empty(self, serialize: SerializerFunctionWrapHandler) -> Any:
        data = serialize(self)
        if isinstance(data, dict):
            return {k: v for k, v in data.items() if v is not None and v != {}}
        return data


class VariantOut(_Compact):
    variant_id: str
    options: dict[str, str]
    price: PriceOut | None = None
    availability: Availability
    stock: int | None = None
    restock_date: date | None = None


class ProductOut(_Compact):
    product_id: str
    title: str
    url: str | None = None
    description: str | None = None
    variants: list[VariantOut]
    more_variants: int | None = None  # variants left out of a search result


class SearchProductsResult(LookupResult):
    found: bool
    products: list[ProductOut] = Field(default_factory=list)
    out_of_stock: list[ProductOut] = Field(default_factory=list)
    message: str


class GetProductResult(LookupResult):
    product_id: str
    found: bool
    product: ProductOut | None = None
    message: str


def variant_out(variant: Variant, stock: StockWords) -> VariantOut:
    options = dict(variant.options) or ({"variant": variant.title} if variant.title else {})
    return VariantOut(
        variant_id=variant.variant_id,
        options=options,
        price=(
            None
            if variant.price is None
            else PriceOut(amount=variant.price.amount, currency=variant.price.currency)
        ),
        availability=stock.availability(variant),
        stock=stock.count(variant),
        restock_date=variant.restock_date,
    )


def product_out(
    product: Product, variants: tuple[Variant, ...], stock: StockWords, *, limit: int
) -> ProductOut:
    description = " ".join(product.description.split())
    if len(description) > MAX_DESCRIPTION:
        description = description[: MAX_DESCRIPTION - 1].rstrip() + "…"
    return ProductOut(
        product_id=product.product_id,
        title=product.title,
        url=product.url,
        description=description or None,
        variants=[variant_out(v, stock) for v in variants[:limit]],
        more_variants=(len(variants) - limit) if len(variants) > limit else None,
    )


class SearchProductsHandler:
    def __init__(self, catalog: ProductCatalog) -> None:
        self._catalog = catalog

    async def __call__(
        self, arguments: SearchProductsArguments, context: ToolContext
    ) -> SearchProductsResult:
        filters = Filters(
            size=arguments.size,
            colour=arguments.colour,
            in_stock_only=arguments.in_stock_only,
            price_min=arguments.price_min,
            price_max=arguments.price_max,
        )
        try:
            found = await self._catalog.search(arguments.query, filters, limit=MAX_RESULTS)
        except ShopUnavailable as exc:
            raise _unavailable(self._catalog, exc) from None
        stock = self._catalog.stock
        products = [
            product_out(hit.product, hit.variants, stock, limit=MAX_VARIANTS_SHOWN)
            for hit in found.hits
        ]
        missing = [
            product_out(p, p.variants, stock, limit=MAX_VARIANTS_SHOWN) for p in found.out_of_stock
        ]
        if products:
            message = FOUND_MESSAGE + (OUT_OF_STOCK_MESSAGE if missing else "")
        else:
            message = (NOT_FOUND_MESSAGE + OUT_OF_STOCK_MESSAGE) if missing else NOT_FOUND_MESSAGE
        return SearchProductsResult(
            found=bool(products), products=products, out_of_stock=missing, message=message
        )


class GetProductHandler:
    def __init__(self, catalog: ProductCatalog) -> None:
        self._catalog = catalog

    async def __call__(
        self, arguments: GetProductArguments, context: ToolContext
    ) -> GetProductResult:
        try:
            product = await self._catalog.get(arguments.product_id)
        except ShopUnavailable as exc:
            raise _unavailable(self._catalog, exc) from None
        if product is None:
            return GetProductResult(
                product_id=arguments.product_id, found=False, message=NOT_FOUND_MESSAGE
            )
        card = product_out(product, product.variants, self._catalog.stock, limit=MAX_VARIANTS)
        return GetProductResult(
            product_id=product.product_id, found=True, product=card, message=FOUND_MESSAGE
        )


def _unavailable(catalog: ProductCatalog, exc: ShopUnavailable) -> ToolBusinessError:
    log.warning("products: shop %s unavailable (%s)", catalog.directory.backend_name, exc.kind)
    return ToolBusinessError(ErrorCode.UNAVAILABLE, UNAVAILABLE_MESSAGE)


def product_tools(catalog: ProductCatalog) -> tuple[Tool[Any, Any], ...]:
    """The two read-only tools over one catalogue."""
    search: Tool[SearchProductsArguments, SearchProductsResult] = Tool(
        name=SEARCH_PRODUCTS,
        description=SEARCH_DESCRIPTION,
        arguments_model=SearchProductsArguments,
        result_model=SearchProductsResult,
        handler=SearchProductsHandler(catalog),
        timeout_s=8.0,
        read_only=True,
    )
    get: Tool[GetProductArguments, GetProductResult] = Tool(
        name=GET_PRODUCT,
        description=GET_DESCRIPTION,
        arguments_model=GetProductArguments,
        result_model=GetProductResult,
        handler=GetProductHandler(catalog),
        timeout_s=8.0,
        read_only=True,
    )
    return search, get
