"""A customer's verified phone: accept their own shared contact, tell it, forget it.

Telegram's "share my phone number" button (a reply-keyboard button with
`request_contact`) sends the user's own contact, whose `user_id` is the sender's id. A
contact card of anyone else — forwarded, picked from the address book, or without a
Telegram user id — is refused and never stored: only the account's own number proves
that orders placed with it are the customer's. The bot passes the two ids from the
update (`bot/telegram/routers/phone.py`); nothing here knows Telegram.

Privacy: only the normalised number and the time of the share are stored, per Telegram
user (`verified_phones`); a new share replaces it and `forget` deletes it. Numbers never
appear in logs: lines name the user id and the outcome only.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable
from enum import StrEnum

from storage.database import StorageRetry
from storage.shop import ShopRepository
from tools.shop.rules import normalise_contact_phone

log = logging.getLogger(__name__)


class ContactOutcome(StrEnum):
    STORED = "stored"  # the sender's own number, now their verified phone
    NOT_OWN = "not_own"  # someone else's contact, or one without a Telegram user id
    INVALID = "invalid"  # their own, but not a number we can store (E.164)


class PhoneVerification:
    """Verified phones per Telegram user; every write retried on storage faults."""

    def __init__(
        self,
        shop: ShopRepository,
        *,
        storage_retry: StorageRetry | None = None,
        clock: Callable[[], float] = time.time,
    ) -> None:
        self._shop = shop
        self._retry = storage_retry or StorageRetry()
        self._clock = clock

    async def verified_phone(self, user_id: int) -> str | None:
        return await self._shop.get_verified_phone(user_id)

    async def has_verified_phone(self, user_id: int) -> bool:
        return await self._shop.get_verified_phone(user_id) is not None

    async def accept_contact(
        self, *, sender_id: int, contact_user_id: int | None, phone_number: str
    ) -> ContactOutcome:
        """Store `phone_number` for `sender_id` only if the contact is the sender's own."""
        if contact_user_id is None or contact_user_id != sender_id:
            log.info("user %s shared a contact that is not their own; not stored", sender_id)
            return ContactOutcome.NOT_OWN
        phone = normalise_contact_phone(phone_number)
        if phone is None:
            log.info("user %s shared their contact with an unusable number", sender_id)
            return ContactOutcome.INVALID
        await self._retry.run(
            f"storing the verified phone of user {sender_id}",
            lambda: self._shop.set_verified_phone(sender_id, phone, now=self._clock()),
        )
        log.info("user %s verified their phone", sender_id)
        return ContactOutcome.STORED

    async def forget(self, user_id: int) -> bool:
        """Delete `user_id`'s verified phone; False if none was stored."""
        deleted = await self._retry.run(
            f"forgetting the verified phone of user {user_id}",
            lambda: self._shop.delete_verified_phone(user_id),
        )
        if deleted:
            log.info("user %s removed their verified phone", user_id)
        return deleted
