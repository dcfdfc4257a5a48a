"""The demo shop at start-up: seeded once the start goes on, removed where the shop's own
data is.

Called after the token and the model were checked, so a start that stops on a bad
setting (a mistyped model name) leaves the database as it found it.
"""

from __future__ import annotations

import logging

from storage.backend import Database
from storage.shop import ShopRepository
from tools.shop.demo import DemoChange, settle_demo_shop

log = logging.getLogger(__name__)


async def settle_demo_data(db: Database, *, seed: bool) -> None:
    """Seed the demo (SEED_DEMO_DATA) into a database without the shop's own data, or
    remove it from one that has the shop's own data too; one INFO line when either
    happens."""
    change = await settle_demo_shop(ShopRepository(db), seed=seed)
    if change is DemoChange.SEEDED:
        log.info(
            "demo shop data seeded (orders 8041, 7718, 9912, 5530); importing your own data "
            "with import-data removes it"
        )
    elif change is DemoChange.REMOVED:
        log.info("demo shop data removed: the database holds the shop's own data")
