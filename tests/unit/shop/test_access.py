"""Who may see an order: the matrix, once for every backend (tools/shop/access.py)."""

from __future__ import annotations

from datetime import UTC, datetime

import pytest

from tools.shop.access import Visibility, may_see
from tools.shop.orders import LiveOrder
from tools.shop.rules import OrderStatus

OWNER = 501
OTHER = 502
PHONE = "+79123456789"
NOW = datetime(2026, 12, 1, tzinfo=UTC)


def order(**identity: object) -> LiveOrder:
    return LiveOrder(number="100001", status=OrderStatus.IN_TRANSIT, updated_at=NOW, **identity)  # type: ignore[arg-type]


BY_ID = order(customer_telegram_id=OWNER)
BY_PHONE = order(customer_phone=PHONE)
BY_EMAIL_ONLY = order(customer_email="owner@example.com")
NO_IDENTITY = order()
PUBLIC = order(public=True)

V, ASK, HIDDEN = Visibility.VISIBLE, Visibility.ASK_IN_PRIVATE, Visibility.HIDDEN


@pytest.mark.parametrize(
    ("the_order", "caller", "phone", "private", "as_chat", "expected"),
    [
        # private chat: the owner by Telegram id or by verified phone, nobody else
        (BY_ID, OWNER, None, True, False, V),
        (BY_ID, OTHER, None, True, False, HIDDEN),
        (BY_ID, OTHER, PHONE, True, False, HIDDEN),
        (BY_PHONE, OTHER, PHONE, True, False, V),
        (BY_PHONE, OTHER, "+79990000000", True, False, HIDDEN),
        (BY_PHONE, OWNER, None, True, False, HIDDEN),
        # an email never grants access; no identity: nobody (a live order)
        (BY_EMAIL_ONLY, OWNER, PHONE, True, False, HIDDEN),
        (NO_IDENTITY, OWNER, PHONE, True, False, HIDDEN),
        (None, OWNER, PHONE, True, False, HIDDEN),
        # groups and messages on behalf of a chat: one answer for everything not public
        (BY_ID, OWNER, None, False, False, ASK),
        (BY_PHONE, OTHER, PHONE, False, False, ASK),
        (None, OWNER, None, False, False, ASK),
        (NO_IDENTITY, OWNER, None, False, False, ASK),
        (BY_ID, OWNER, None, True, True, ASK),
        # the local demo's public orders: anyone, anywhere
        (PUBLIC, OTHER, None, True, False, V),
        (PUBLIC, OTHER, None, False, False, V),
        (PUBLIC, OTHER, None, False, True, V),
    ],
)
def test_visibility(
    the_order: LiveOrder | None,
    caller: int,
    phone: str | None,
    private: bool,
    as_chat: bool,
    expected: Visibility,
) -> None:
    seen = may_see(
        the_order,
        caller_user_id=caller,
        verified_phone=phone,
        private_chat=private,
        sender_is_chat=as_chat,
    )
    assert seen is expected
