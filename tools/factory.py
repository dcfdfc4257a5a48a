"""Builds the tool allow-list of one application instance (no module-level registry)."""

from __future__ import annotations

import time
from collections.abc import Callable

from tools.order_status import order_status_tool
from tools.registry import ToolRegistry
from tools.request_human import HandoffRequests, request_human_tool
from tools.return_policy import return_policy_tool
from tools.shop_info import shop_info_tool


def build_registry(
    *,
    order_lookups_per_hour: int = 10,
    clock: Callable[[], float] = time.time,
    handoffs: HandoffRequests | None = None,
) -> ToolRegistry:
    """A fresh registry with the shop's tools: order status, return policy, shop info,
    and `request_human` only when handoff to operators is on (`handoffs` given)."""
    registry = ToolRegistry()
    registry.register(order_status_tool(lookups_per_hour=order_lookups_per_hour, clock=clock))
    registry.register(return_policy_tool())
    registry.register(shop_info_tool())
    if handoffs is not None:
        registry.register(request_human_tool(handoffs))
    return registry
