"""What the welcome (`/start`) may offer as examples, read from the shop's own data: a
product with a return policy and whether the FAQ answers delivery and payment questions.

The demo's data and an imported shop's are read the same way, so after `import-data` the
welcome speaks of that shop (its product, its FAQ) and no longer of the demo's.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from storage.shop import ShopRepository
from tools.shop.faq import faq_key

# FAQ topics or aliases that mean the shop answers delivery / payment questions
DELIVERY_KEYS = tuple(faq_key(w) for w in ("доставка", "delivery", "shipping"))
PAYMENT_KEYS = tuple(faq_key(w) for w in ("оплата", "payment"))
_LATIN = re.compile(r"[a-z][a-z0-9 '&.-]*")


@dataclass(frozen=True, slots=True)
class ShopExamples:
    """`product`: a product's name as the shop wrote it; `product_latin`: its first alias
    in Latin letters (what an English welcome names), else None."""

    product: str | None = None
    product_latin: str | None = None
    delivery: bool = False
    payment: bool = False


class ShopExamplesReader:
    """Reads `ShopExamples` at each welcome: an import while the bot runs shows at once."""

    def __init__(self, shop: ShopRepository) -> None:
        self._shop = shop

    async def read(self) -> ShopExamples:
        policy = await self._shop.first_return_policy()
        found = await self._shop.find_faq_entries([*DELIVERY_KEYS, *PAYMENT_KEYS])
        latin = None
        if policy is not None:
            names = (policy.display_name, *policy.aliases)
            latin = next((name for name in names if _LATIN.fullmatch(name.lower())), None)
        return ShopExamples(
            product=None if policy is None else policy.display_name,
            product_latin=latin,
            delivery=any(key in found for key in DELIVERY_KEYS),
            payment=any(key in found for key in PAYMENT_KEYS),
        )
