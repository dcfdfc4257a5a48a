"""Builds the tool allow-list of one application instance (no module-level registry)."""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence
from typing import Any

from tools.base import Tool
from tools.my_orders import my_orders_tool
from tools.order_status import order_status_tool
from tools.registry import ToolRegistry
from tools.return_policy import return_policy_tool
from tools.shop.orders import FOUR_DIGITS, OrderNumberRule
from tools.shop_info import shop_info_tool


def build_registry(
    *,
    order_lookups_per_hour: int = 10,
    clock: Callable[[], float] = time.time,
    extra: Sequence[Tool[Any, Any]] = (),
    order_number_rule: OrderNumberRule = FOUR_DIGITS,
    live_orders: bool = False,
) -> ToolRegistry:
    """A fresh registry with the shop's tools: order status, return policy, shop info,
    then `extra`: the tools of the features that are on (e.g. `request_human` with
    handoff to operators, bot/telegram/features/handoff.py). `order_number_rule` is the shop's
    (the directory's): what get_order_status accepts and tells the model. `live_orders`
    (a live SHOP_BACKEND) adds `list_my_orders`."""
    registry = ToolRegistry()
    registry.register(
        order_status_tool(
            lookups_per_hour=order_lookups_per_hour, clock=clock, number_rule=order_number_rule
        )
    )
    if live_orders:
        registry.register(my_orders_tool(lookups_per_hour=order_lookups_per_hour, clock=clock))
    registry.register(return_policy_tool())
    registry.register(shop_info_tool())
    for tool in extra:
        registry.register(tool)
    return registry
