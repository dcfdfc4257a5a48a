"""Verified phones: only the sender's own contact is stored; a new share replaces it;
/forget_phone deletes it; the number never appears in the logs."""

from __future__ import annotations

import logging

import pytest

from services.phones import ContactOutcome, PhoneVerification
from storage.database import Database
from storage.shop import ShopRepository

USER, OTHER = 6001, 6002


@pytest.fixture
def phones(db: Database) -> PhoneVerification:
    return PhoneVerification(ShopRepository(db), clock=lambda: 1_800_000_000.0)


async def test_own_contact_is_stored_in_e164(phones: PhoneVerification) -> None:
    outcome = await phones.accept_contact(
        sender_id=USER, contact_user_id=USER, phone_number="79123456789"
    )
    assert outcome is ContactOutcome.STORED
    assert await phones.verified_phone(USER) == "+79123456789"


@pytest.mark.parametrize("contact_user_id", [OTHER, None])
async def test_someone_elses_contact_is_refused_and_not_stored(
    phones: PhoneVerification, contact_user_id: int | None
) -> None:
    outcome = await phones.accept_contact(
        sender_id=USER, contact_user_id=contact_user_id, phone_number="79123456789"
    )
    assert outcome is ContactOutcome.NOT_OWN
    assert await phones.verified_phone(USER) is None
    assert await phones.verified_phone(OTHER) is None


async def test_an_unusable_number_is_not_stored(phones: PhoneVerification) -> None:
    outcome = await phones.accept_contact(sender_id=USER, contact_user_id=USER, phone_number="12")
    assert outcome is ContactOutcome.INVALID
    assert await phones.verified_phone(USER) is None


async def test_a_new_share_replaces_and_forget_deletes(
    phones: PhoneVerification, db: Database
) -> None:
    await phones.accept_contact(sender_id=USER, contact_user_id=USER, phone_number="79123456789")
    await phones.accept_contact(sender_id=USER, contact_user_id=USER, phone_number="+442079460958")
    assert await phones.verified_phone(USER) == "+442079460958"
    assert await phones.forget(USER) is True
    assert await phones.verified_phone(USER) is None
    assert await phones.forget(USER) is False
    assert await db.fetch_one("SELECT 1 FROM verified_phones") is None


async def test_the_number_never_appears_in_the_logs(
    phones: PhoneVerification, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.INFO)  # aiosqlite is kept at INFO by the bot (bot/telegram/app.py)
    await phones.accept_contact(sender_id=USER, contact_user_id=USER, phone_number="79123456789")
    await phones.accept_contact(sender_id=USER, contact_user_id=OTHER, phone_number="79123456789")
    await phones.forget(USER)
    assert caplog.records
    assert "912" not in caplog.text
