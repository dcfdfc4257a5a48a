"""Who may see an order: decided once here, for every backend.

A backend returns an order with its customer's identity as the shop has it (phone,
email, Telegram id) and never decides; `may_see` does, from the caller's identity that
came from Telegram (never from the model). So a backend can only return less identity,
never a wider view. The semantics are get_order_status's since the demo:

- a public order (only the local backend sets `public`: the demo's orders without an
  owner) is shown to anyone, in any chat;
- in a group, or for a message sent on behalf of a chat, every other number — the
  caller's own order, someone else's, a missing one — gets one and the same answer, "ask
  in a private chat" (an answer in a group is read by every member, and answering the
  owner differently would tell the group the order exists and whose it is);
- in a private chat the owner sees it: their Telegram id is the order's
  `customer_telegram_id`, or their *verified* phone (a contact they shared as their own)
  is its `customer_phone`. The email never grants access (Telegram verifies none);
- anything else is `HIDDEN`, which the tool answers exactly like a missing order.
"""

from __future__ import annotations

from enum import StrEnum

from tools.shop.orders import LiveOrder


class Visibility(StrEnum):
    VISIBLE = "visible"
    ASK_IN_PRIVATE = "ask_in_private"
    HIDDEN = "hidden"  # the same answer as for an order that does not exist


def may_see(
    order: LiveOrder | None,
    *,
    caller_user_id: int,
    verified_phone: str | None,
    private_chat: bool,
    sender_is_chat: bool,
) -> Visibility:
    """What the caller may be told about `order` (None: the shop has no such order)."""
    if order is not None and order.public:
        return Visibility.VISIBLE
    if not private_chat or sender_is_chat:
        return Visibility.ASK_IN_PRIVATE
    if order is None:
        return Visibility.HIDDEN
    if order.customer_telegram_id is not None and order.customer_telegram_id == caller_user_id:
        return Visibility.VISIBLE
    if verified_phone is not None and order.customer_phone == verified_phone:
        return Visibility.VISIBLE
    return Visibility.HIDDEN
