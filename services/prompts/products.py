"""The products feature's words in the system instruction (bot/telegram/features/products.py)."""

from __future__ import annotations

from services.prompts.composed import PromptFragment, Slot

# how the model uses the two tools; a new wording is a new version (@1 kept: turns name it)
PRODUCTS_V1 = PromptFragment(
    fragment_id="products",
    version="1",
    slot=Slot.TOOLS,
    body="""\
- For what the shop sells — a product, its price, sizes, colours, whether it is in stock
  or when it is back — call search_products with the customer's own words (and size,
  colour, in stock or price only when they named them); for every variant of one product
  call get_product. Name only products from their results, with the price and currency,
  the availability as given and the product's link. If nothing is found, say the shop
  does not have it; never suggest or price a product the tools did not return.""",
)

# @2: only how to name a product; when to search and
# with which filters is what the tools' descriptions say
PRODUCTS_V2 = PromptFragment(
    fragment_id="products",
    version="2",
    slot=Slot.TOOLS,
    body="""\
- Name only products that search_products or get_product returned, with the price and
  currency, the availability as given and the product's link.""",
)
