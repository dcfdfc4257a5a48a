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


# -- phone numbers ------------------------------------------------------------------
#
# Orders may name their owner by phone (`owner_phone`), and a customer proves a phone is
# theirs by sharing their own Telegram contact; both are stored in E.164 ("+" and 8 to 15
# digits, the first not 0) so the two meet. A small rule of our own instead of the
# `phonenumbers` library: we only need one canonical spelling to compare, not per-country
# validity, formatting or carrier data (phonenumbers ships ~50 MB of metadata tables and
# its country rules change with its releases — a re-import could then reject numbers that
# were accepted before). What this rule accepts:
# - "+" followed by 8..15 digits, with spaces, dashes, dots and parentheses anywhere in
#   between ("+7 (912) 345-67-89", "+44 20 7946 0958");
# - a Russian national number without "+": 11 digits starting with 8 (the trunk prefix,
#   "8 (912) 345-67-89") or 7 ("7 912 345 67 89") → "+7" and the last 10 digits; the
#   shop is Russian-speaking, and such numbers are how its customers write them. Only
#   where the 10 digits can be a number of the +7 plan: its area codes start with 3, 4,
#   8 or 9 (Russia) or 6 or 7 (Kazakhstan). "81312345678" is Tokyo (+81 3…) written
#   without "+", not "+7 131…": 0, 1, 2 and 5 after the 7 or 8 are refused as ambiguous;
# - nothing else: other national formats ("0912...") are ambiguous without a country, so
#   the import lists them as problems and the shop writes them with "+".
# Telegram sends a shared contact's number in international format, usually without the
# "+" ("79123456789"), so `normalise_contact_phone` reads it as international.

E164_MIN_DIGITS = 8
E164_MAX_DIGITS = 15
_PHONE_SEPARATORS = str.maketrans("", "", " -.()\u00a0\t")
PHONE_RULE = (
    "must be an international number like +74951234567 (a '+' and 8 to 15 digits), "
    "or a Russian number starting with 8 or 7 (11 digits, the area code after it "
    "starting with 3, 4, 6, 7, 8 or 9)"
)
# first digits of a national number in the +7 plan (Russia 3, 4, 8, 9; Kazakhstan 6, 7)
_PLAN_7_AREA_STARTS = frozenset("346789")


def _e164(digits: str) -> str | None:
    if (
        digits.isascii()
        and digits.isdigit()
        and E164_MIN_DIGITS <= len(digits) <= E164_MAX_DIGITS
        and digits[0] != "0"
    ):
        return "+" + digits
    return None


def normalise_phone(value: str) -> str:
    """The E.164 spelling of a phone number as a shop writes it; ValueError if not one.

    The message (shown in import problems) never repeats the number.
    """
    compact = value.strip().translate(_PHONE_SEPARATORS)
    if compact.startswith("+"):
        result = _e164(compact[1:])
    elif len(compact) == 11 and compact[:1] in ("7", "8") and compact[1] in _PLAN_7_AREA_STARTS:
        result = _e164("7" + compact[1:])
    else:
        result = None
    if result is None:
        raise ValueError(PHONE_RULE)
    return result


def normalise_phone_or_none(value: str | None) -> str | None:
    """A phone as a shop system wrote it, in E.164, or None when the rule cannot read it
    (such a phone then matches nobody); what every backend hands its phones to."""
    if value is None:
        return None
    try:
        return normalise_phone(value)
    except ValueError:
        return None


def normalise_contact_phone(value: str) -> str | None:
    """The E.164 spelling of a number from a Telegram contact (international, "+"
    optional), or None if it is not a phone number we can store."""
    compact = value.strip().translate(_PHONE_SEPARATORS)
    return _e164(compact.removeprefix("+"))
