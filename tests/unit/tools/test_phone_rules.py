"""The phone normaliser: one E.164 spelling for what shops write and Telegram sends."""

from __future__ import annotations

import pytest

from tools.shop.rules import normalise_contact_phone, normalise_phone


@pytest.mark.parametrize(
    ("written", "e164"),
    [
        ("+79123456789", "+79123456789"),
        ("+7 (912) 345-67-89", "+79123456789"),
        ("  +7 912 345 67 89 ", "+79123456789"),
        ("8 (912) 345-67-89", "+79123456789"),  # Russian trunk prefix 8 → +7
        ("89123456789", "+79123456789"),
        ("7 912 345-67-89", "+79123456789"),  # 11 digits starting with 7, no "+"
        ("8 (495) 123-45-67", "+74951234567"),  # Moscow
        ("8 (383) 123-45-67", "+73831234567"),  # Novosibirsk
        ("8 800 555-35-35", "+78005553535"),  # toll-free
        ("8 (727) 123-45-67", "+77271234567"),  # Almaty: the same +7 plan
        ("+81 3 1234 5678", "+81312345678"),  # Tokyo, as it must be written
        ("+44 20 7946 0958", "+442079460958"),
        ("+49.30.1234567", "+49301234567"),
        ("+12345678", "+12345678"),  # 8 digits: the shortest accepted
        ("+123456789012345", "+123456789012345"),  # 15: the longest E.164 allows
    ],
)
def test_usual_spellings_become_e164(written: str, e164: str) -> None:
    assert normalise_phone(written) == e164


@pytest.mark.parametrize(
    "written",
    [
        "",
        "+",
        "+1234567",  # too short
        "+1234567890123456",  # 16 digits: longer than E.164
        "+0123456789",  # no country code starts with 0
        "9123456789",  # national without a trunk prefix: which country?
        "09123456789",
        "+7 912 ABC 67 89",
        "+７９１２３４５６７８９",  # full-width digits are not ASCII digits
        "+7 912 345 67 89 доб. 12",
        "99123456789",  # 11 digits, but not 7/8 first
        "81312345678",  # Tokyo (+81 3 1234 5678) without "+", not +7 131…
        "8 (012) 345-67-89",  # no area code of the +7 plan starts with 0, 1, 2 or 5
        "82123456789",
        "75123456789",
    ],
)
def test_anything_else_is_refused_without_repeating_the_number(written: str) -> None:
    with pytest.raises(ValueError) as caught:
        normalise_phone(written)
    assert "912" not in str(caught.value)
    assert len(written.strip()) < 3 or written.strip() not in str(caught.value)


@pytest.mark.parametrize(
    ("sent", "e164"),
    [
        ("79123456789", "+79123456789"),  # Telegram's usual form: international, no "+"
        ("+79123456789", "+79123456789"),
        ("442079460958", "+442079460958"),
        ("12345", None),
        ("", None),
        ("not a number", None),
    ],
)
def test_contact_numbers_are_read_as_international(sent: str, e164: str | None) -> None:
    assert normalise_contact_phone(sent) == e164


def test_both_spellings_of_one_number_meet() -> None:
    assert normalise_phone("8 (912) 345-67-89") == normalise_contact_phone("79123456789")
