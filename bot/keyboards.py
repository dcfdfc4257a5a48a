"""Keyboards sent with replies, and their stored form.

A reply is stored in the inbox before it is sent (bot/responder.py), keyboard included,
as the Bot API's own JSON object; `markup_from_json` turns it back into aiogram's type
when the reply is delivered (also after a restart), so a redelivery sends the same one.

The "share my phone number" button is a reply-keyboard button with `request_contact`:
Telegram then sends the user's OWN contact (its `user_id` is the sender's), which is what
makes the number verified (services/phones.py). Telegram offers such buttons in private
chats only, so they are never attached in groups.

The 👍/👎 buttons under an AI answer are inline buttons whose callback data names the
answer: `fb:<turn id>:u` or `fb:<turn id>:d` (38 bytes; Telegram allows 64). Telegram
returns whatever data a client sends, so `parse_feedback` accepts only exactly this form
and the feedback service checks that the answer belongs to the chat of the press.
"""

from __future__ import annotations

import re
from typing import Any

from aiogram.types import (
    InlineKeyboardButton,
    InlineKeyboardMarkup,
    KeyboardButton,
    ReplyKeyboardMarkup,
    ReplyKeyboardRemove,
)

from bot.sender import ReplyMarkup
from bot.texts import Texts
from services.feedback import Rating

FEEDBACK_PREFIX = "fb:"
# the one form a feedback button's data may have: a turn id (uuid4 hex) and u/d
_FEEDBACK_DATA = re.compile(r"fb:([0-9a-f]{32}):([ud])")
_RATING_CODES = {Rating.UP: "u", Rating.DOWN: "d"}
_RATING_EMOJI = {Rating.UP: "👍", Rating.DOWN: "👎"}
CHOSEN_MARK = "✓"
# issue 16's handoff router answers this button ("talk to a person")
HANDOFF_START = "handoff:start"


def share_phone_keyboard(texts: Texts) -> ReplyKeyboardMarkup:
    return ReplyKeyboardMarkup(
        keyboard=[[KeyboardButton(text=texts.share_phone_button, request_contact=True)]],
        resize_keyboard=True,
        one_time_keyboard=True,
    )


# The callback data of the "talk to a person" button (also offered by issue 18's feedback)
HANDOFF_START = "handoff:start"


def operator_keyboard(texts: Texts) -> InlineKeyboardMarkup:
    """One inline button that starts a handoff to a person (bot/routers/handoff.py)."""
    return InlineKeyboardMarkup(
        inline_keyboard=[
            [InlineKeyboardButton(text=texts.operator_button, callback_data=HANDOFF_START)]
        ]
    )


def remove_keyboard() -> ReplyKeyboardRemove:
    return ReplyKeyboardRemove(remove_keyboard=True)


def feedback_keyboard(
    turn_id: str, *, chosen: Rating | None = None, operator_label: str | None = None
) -> InlineKeyboardMarkup:
    """👍 / 👎 for answer `turn_id`; the `chosen` one marked (both stay pressable, so a
    rating can be changed); `operator_label` adds the "talk to a person" button."""
    buttons = [
        InlineKeyboardButton(
            text=f"{CHOSEN_MARK} {_RATING_EMOJI[r]}" if r is chosen else _RATING_EMOJI[r],
            callback_data=f"{FEEDBACK_PREFIX}{turn_id}:{_RATING_CODES[r]}",
        )
        for r in (Rating.UP, Rating.DOWN)
    ]
    rows = [buttons]
    if operator_label is not None:
        rows.append([InlineKeyboardButton(text=operator_label, callback_data=HANDOFF_START)])
    return InlineKeyboardMarkup(inline_keyboard=rows)


def parse_feedback(data: str | None) -> tuple[str, Rating] | None:
    """(turn id, rating) from a feedback button's data; None for anything else."""
    match = _FEEDBACK_DATA.fullmatch(data or "")
    if match is None:
        return None
    return match[1], Rating.UP if match[2] == "u" else Rating.DOWN


def markup_to_json(markup: ReplyMarkup) -> dict[str, Any]:
    return markup.model_dump(mode="json", exclude_none=True)


def markup_from_json(data: dict[str, Any] | None) -> ReplyMarkup | None:
    """The stored keyboard back as aiogram's type (None if none or not one we send)."""
    if not data:
        return None
    if "keyboard" in data:
        return ReplyKeyboardMarkup.model_validate(data)
    if "inline_keyboard" in data:
        return InlineKeyboardMarkup.model_validate(data)
    if data.get("remove_keyboard"):
        return ReplyKeyboardRemove.model_validate(data)
    return None
