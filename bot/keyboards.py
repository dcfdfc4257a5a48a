"""Keyboards sent with replies, and their stored form.

A reply is stored in the inbox before it is sent (bot/responder.py), keyboard included,
as the Bot API's own JSON object; `markup_from_json` turns it back into aiogram's type
when the reply is delivered (also after a restart).

The "share my phone number" button is a reply-keyboard button with `request_contact`:
Telegram then sends the user's OWN contact (its `user_id` is the sender's), which is what
makes the number verified (services/phones.py). Telegram offers such buttons in private
chats only, so they are never attached in groups.
"""

from __future__ import annotations

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
