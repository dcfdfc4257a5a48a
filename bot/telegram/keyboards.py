"""Keyboards sent with replies, and their stored form.

A reply is stored in the inbox before it is sent (bot/runtime/responder.py), keyboard included,
as the Bot API's own JSON object; `markup_from_json` turns it back into aiogram's type
when the reply is delivered (also after a restart), so a redelivery sends the same one.

The "share my phone number" button is a reply-keyboard button with `request_contact`:
Telegram then sends the user's OWN contact (its `user_id` is the sender's), which is what
makes the number verified (services/phones.py). Telegram offers such buttons in private
chats only, so they are never attached in groups.

Every inline button's data is an aiogram `CallbackData` class: `FeedbackButton`
(👍/👎 under an AI answer, `fb:<turn id>:u` or `fb:<turn id>:d`, 38 bytes; Telegram
allows 64) and `HandoffButton` ("talk to a person", `handoff:start`). The wire forms are
the ones earlier versions wrote, so the buttons under answers already in customers'
chats (and in stored replies, `StoredReply.reply_markup`) keep working after an upgrade.
Telegram returns whatever data a client sends, so `FeedbackButton.read` accepts only
exactly this form and the feedback service checks that the answer belongs to the chat of
the press.
"""

from __future__ import annotations

import re
from enum import StrEnum
from typing import Any, Literal, Self, TypeVar

from aiogram.filters.callback_data import CallbackData
from aiogram.types import (
    InlineKeyboardButton,
    InlineKeyboardMarkup,
    KeyboardButton,
    ReplyKeyboardMarkup,
    ReplyKeyboardRemove,
)

from bot.telegram.action_words import ACTION_WORDS, ActionStaffWords
from bot.telegram.handoff_view import HANDOFF_WORDS
from bot.telegram.sender import ReplyMarkup
from bot.telegram.texts import Texts
from services.feedback import Rating

_RATING_EMOJI = {Rating.UP: "👍", Rating.DOWN: "👎"}
_TURN_ID = re.compile(r"[0-9a-f]{32}")  # services/chat.py: uuid4().hex
CHOSEN_MARK = "✓"


class Vote(StrEnum):
    """A rating as the button writes it (one letter, to keep the data short)."""

    UP = "u"
    DOWN = "d"

    @property
    def rating(self) -> Rating:
        return Rating.UP if self is Vote.UP else Rating.DOWN

    @classmethod
    def of(cls, rating: Rating) -> Vote:
        return cls.UP if rating is Rating.UP else cls.DOWN


class FeedbackButton(CallbackData, prefix="fb"):
    """👍/👎 under answer `turn_id` (a uuid4 hex): `fb:<turn id>:u|d`."""

    turn_id: str
    vote: Vote

    @classmethod
    def read(cls, data: str | None) -> Self | None:
        """The button's data exactly as we write it, naming a turn id (uuid4 hex); None
        for anything else."""
        try:
            button = cls.unpack(data or "")
        except (TypeError, ValueError):  # pydantic's ValidationError is a ValueError
            return None
        if not _TURN_ID.fullmatch(button.turn_id) or button.pack() != data:
            return None
        return button


class HandoffButton(CallbackData, prefix="handoff"):
    """ "Talk to a person" (bot/telegram/routers/handoff.py): `handoff:start`."""

    action: Literal["start"] = "start"


class OrderUpdatesButton(CallbackData, prefix="ou"):
    """Order updates (bot/telegram/routers/order_updates.py): `ou:on:<order>` under an answer that
    showed the customer their own order, `ou:off:<order>` in the /updates list. The order
    is only a hint: a press is checked against the shop and the presser every time."""

    action: Literal["on", "off"]
    order: str

    @classmethod
    def button(
        cls, action: Literal["on", "off"], order: str, text: str
    ) -> InlineKeyboardButton | None:
        """The button, or None when the number cannot travel in callback data (it
        contains the separator, or the data would pass Telegram's 64 bytes)."""
        try:
            data = cls(action=action, order=order).pack()
        except ValueError:
            return None
        if len(data.encode()) > CALLBACK_DATA_LIMIT:
            return None
        return InlineKeyboardButton(text=text, callback_data=data)


CALLBACK_DATA_LIMIT = 64  # bytes (Bot API: InlineKeyboardButton.callback_data)


class KnowledgeButton(CallbackData, prefix="kn"):
    """The owner's /knowledge list (bot/telegram/routers/knowledge_admin.py): `kn:rm:<source
    id>` removes that source, `kn:add:0` says how to add one. Pressed by admins only."""

    action: Literal["rm", "add"]
    source: int = 0


def share_phone_keyboard(texts: Texts) -> ReplyKeyboardMarkup:
    return ReplyKeyboardMarkup(
        keyboard=[[KeyboardButton(text=texts.share_phone_button, request_contact=True)]],
        resize_keyboard=True,
        one_time_keyboard=True,
    )


def operator_keyboard(texts: Texts) -> InlineKeyboardMarkup:
    """One inline button that starts a handoff to a person (bot/telegram/routers/handoff.py)."""
    label = texts.of(HANDOFF_WORDS).operator_button
    return InlineKeyboardMarkup(
        inline_keyboard=[[InlineKeyboardButton(text=label, callback_data=HandoffButton().pack())]]
    )


def remove_keyboard() -> ReplyKeyboardRemove:
    return ReplyKeyboardRemove(remove_keyboard=True)


def with_rows(
    markup: InlineKeyboardMarkup | None, rows: list[list[InlineKeyboardButton]]
) -> InlineKeyboardMarkup | None:
    """`markup` with `rows` added below (or a keyboard of just them)."""
    if not rows:
        return markup
    above = list(markup.inline_keyboard) if markup is not None else []
    return InlineKeyboardMarkup(inline_keyboard=[*above, *rows])


def feedback_keyboard(
    turn_id: str, *, chosen: Rating | None = None, operator_label: str | None = None
) -> InlineKeyboardMarkup:
    """👍 / 👎 for answer `turn_id`; the `chosen` one marked (both stay pressable, so a
    rating can be changed); `operator_label` adds the "talk to a person" button."""
    buttons = [
        InlineKeyboardButton(
            text=f"{CHOSEN_MARK} {_RATING_EMOJI[r]}" if r is chosen else _RATING_EMOJI[r],
            callback_data=FeedbackButton(turn_id=turn_id, vote=Vote.of(r)).pack(),
        )
        for r in (Rating.UP, Rating.DOWN)
    ]
    rows = [buttons]
    if operator_label is not None:
        handoff = HandoffButton().pack()
        rows.append([InlineKeyboardButton(text=operator_label, callback_data=handoff)])
    return InlineKeyboardMarkup(inline_keyboard=rows)


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


# -- actions with confirmation (bot/telegram/features/actions.py) ----------------------------

_OPERATION_ID = re.compile(r"[0-9a-f]{32}")  # tools/actions/propose.py: uuid4().hex


_Button = TypeVar("_Button", "ActionButton", "RequestButton")


def _exactly(cls: type[_Button], data: str | None) -> _Button | None:
    """`data` unpacked only when it is exactly the button's form with an operation id."""
    try:
        button = cls.unpack(data or "")
    except (TypeError, ValueError):
        return None
    if not _OPERATION_ID.fullmatch(button.operation_id) or button.pack() != data:
        return None
    return button


class ActionChoice(StrEnum):
    CONFIRM = "y"
    DECLINE = "n"


class ActionButton(CallbackData, prefix="act"):
    """✅/✖ on an action's confirmation card: `act:<operation id>:y|n` (39 bytes)."""

    operation_id: str
    choice: ActionChoice

    @classmethod
    def read(cls, data: str | None) -> ActionButton | None:
        """Exactly this form, naming an operation id (uuid4 hex); None for anything else."""
        return _exactly(cls, data)


def action_keyboard(operation_id: str, texts: Texts) -> InlineKeyboardMarkup:
    """The card's two buttons: confirm, decline."""
    words = texts.of(ACTION_WORDS)
    return InlineKeyboardMarkup(
        inline_keyboard=[
            [
                InlineKeyboardButton(
                    text=words.action_confirm_button,
                    callback_data=ActionButton(
                        operation_id=operation_id, choice=ActionChoice.CONFIRM
                    ).pack(),
                ),
                InlineKeyboardButton(
                    text=words.action_decline_button,
                    callback_data=ActionButton(
                        operation_id=operation_id, choice=ActionChoice.DECLINE
                    ).pack(),
                ),
            ]
        ]
    )


class RequestChoice(StrEnum):
    DONE = "d"
    REFUSE = "r"


class RequestButton(CallbackData, prefix="req"):
    """✅ Done / ✖ Refuse on a request card to the shop's people: `req:<op id>:d|r`."""

    operation_id: str
    choice: RequestChoice

    @classmethod
    def read(cls, data: str | None) -> RequestButton | None:
        """Exactly this form, naming an operation id; None for anything else."""
        return _exactly(cls, data)


def request_keyboard(operation_id: str, words: ActionStaffWords) -> InlineKeyboardMarkup:
    """The staff's card's two buttons (in the staff's words, as their lines)."""
    return InlineKeyboardMarkup(
        inline_keyboard=[
            [
                InlineKeyboardButton(
                    text=words.staff_done_button,
                    callback_data=RequestButton(
                        operation_id=operation_id, choice=RequestChoice.DONE
                    ).pack(),
                ),
                InlineKeyboardButton(
                    text=words.staff_refuse_button,
                    callback_data=RequestButton(
                        operation_id=operation_id, choice=RequestChoice.REFUSE
                    ).pack(),
                ),
            ]
        ]
    )
