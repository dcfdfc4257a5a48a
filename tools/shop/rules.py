"""The shop's data rules, shared by the tools, the import document and the demo data.

Product names are normalised the same way when stored (import, demo) and when a customer
asks (`get_return_policy`), so whatever was stored is found again.
"""

from __future__ import annotations

from enum import StrEnum

# Key of the shop's general return policy among the shop texts.
GENERAL_RETURN_POLICY_KEY = "general_return_policy"


class OrderStatus(StrEnum):
    PROCESSING = "processing"
    IN_TRANSIT = "in_transit"
    READY_FOR_PICKUP = "ready_for_pickup"
    DELIVERED = "delivered"
    CANCELLED = "cancelled"


def check_order_id(value: str) -> str:
    """Order numbers are exactly 4 ASCII digits (the message is shown to the model)."""
    if len(value) != 4 or not value.isascii() or not value.isdigit():
        raise ValueError("must be exactly 4 digits, e.g. 8041")
    return value


def normalise_product_name(name: str) -> str:
    """Trim, casefold, collapse inner whitespace and treat 'ё' as 'е'."""
    return " ".join(name.casefold().replace("ё", "е").split())
