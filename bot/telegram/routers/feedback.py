"""👍/👎 presses under an AI answer: validate, record once per answer, acknowledge, mark.

A press arrives as a `callback_query` update and goes through the inbox and the chat's
worker like any other update. The handler:

1. reads the button's data strictly (`bot.telegram.keyboards.FeedbackButton.read`:
   `fb:<turn id>:u|d`)
   and asks the feedback service to record it for the chat the press came from and the
   person who pressed (both from Telegram) — a button naming another chat's answer, or
   any other data, is refused; in a group only the asker may rate;
2. acknowledges the press with `answerCallbackQuery` (a short note in the client, no new
   message in the chat);
3. after a recorded press, edits the buttons to mark the choice (both stay, so the rating
   can be changed); after a 👎, when handoff is configured (`offer_operator`), adds the
   "talk to a person" button (`HandoffButton`, handled by the handoff router).

Nothing is stored for the inbox row to send: it finishes `ignored` with reason
`feedback_<outcome>`. The acknowledgement and the edit are cosmetic: a failure is logged
(type only) and the rating stays recorded.
"""

from __future__ import annotations

import logging
from typing import TypeVar

from aiogram import Router
from aiogram.exceptions import TelegramAPIError
from aiogram.filters import Filter
from aiogram.methods import AnswerCallbackQuery, EditMessageReplyMarkup, TelegramMethod
from aiogram.types import CallbackQuery, InlineKeyboardButton, InlineKeyboardMarkup, Message

from bot.telegram.context import HandlerDeps, UpdateContext
from bot.telegram.handoff_view import HANDOFF_WORDS
from bot.telegram.keyboards import FeedbackButton, HandoffButton, feedback_keyboard, with_rows
from bot.telegram.sender import Sender
from services.feedback import FeedbackOutcome, Rating

log = logging.getLogger(__name__)
T = TypeVar("T")


_FEEDBACK_PREFIX = f"{FeedbackButton.__prefix__}{FeedbackButton.__separator__}"


class IsFeedbackPress(Filter):
    """A press of a button whose data claims to be feedback (validated by the handler, so
    forged data gets the "cannot be rated" note rather than no answer at all)."""

    async def __call__(self, query: CallbackQuery) -> bool:
        return (query.data or "").startswith(_FEEDBACK_PREFIX)


def build_feedback_router(deps: HandlerDeps, *, offer_operator: bool = False) -> Router:
    """`offer_operator`: after a 👎, offer the "talk to a person" button (handoff on)."""
    router = Router(name="feedback")

    @router.callback_query(IsFeedbackPress())
    async def on_feedback(query: CallbackQuery, ctx: UpdateContext) -> None:
        texts, sender = ctx.texts, deps.sender
        parsed = FeedbackButton.read(query.data)
        message = query.message if isinstance(query.message, Message) else None
        outcome = FeedbackOutcome.NO_SUCH_ANSWER
        if parsed is not None and message is not None:
            outcome = await deps.feedback.rate(
                turn_id=parsed.turn_id,
                chat_id=message.chat.id,
                user_id=query.from_user.id,
                rating=parsed.vote.rating,
            )
        notes = {
            FeedbackOutcome.RECORDED: texts.feedback_thanks,
            FeedbackOutcome.NO_SUCH_ANSWER: texts.feedback_refused,
            FeedbackOutcome.NOT_ASKER: texts.feedback_not_asker,
        }
        await _cosmetic(
            sender, AnswerCallbackQuery(callback_query_id=query.id, text=notes[outcome])
        )
        if outcome is FeedbackOutcome.RECORDED and parsed is not None and message is not None:
            turn_id, rating = parsed.turn_id, parsed.vote.rating
            person = offer_operator and rating is Rating.DOWN
            operator = texts.of(HANDOFF_WORDS).operator_button if person else None
            marked = feedback_keyboard(turn_id, chosen=rating, operator_label=operator)
            # rows of other features under the answer (order updates' "notify me") stay
            marked = with_rows(marked, _other_rows(message.reply_markup)) or marked
            if _differs(message.reply_markup, marked):
                await _cosmetic(
                    sender,
                    EditMessageReplyMarkup(
                        chat_id=message.chat.id, message_id=message.message_id, reply_markup=marked
                    ),
                )
        await ctx.outbox.ignore(f"feedback_{outcome}")

    return router


def _other_rows(current: InlineKeyboardMarkup | None) -> list[list[InlineKeyboardButton]]:
    """The rows of `current` that are neither 👍/👎 nor "talk to a person"."""
    ours = (f"{FeedbackButton.__prefix__}:", f"{HandoffButton.__prefix__}:")
    return [
        list(row)
        for row in (current.inline_keyboard if current is not None else [])
        if not any((button.callback_data or "").startswith(ours) for button in row)
    ]


def _differs(current: InlineKeyboardMarkup | None, wanted: InlineKeyboardMarkup) -> bool:
    """Telegram refuses an edit that changes nothing ("message is not modified")."""
    if current is None:
        return True
    return current.model_dump(exclude_none=True) != wanted.model_dump(exclude_none=True)


async def _cosmetic(sender: Sender, method: TelegramMethod[T]) -> None:
    try:
        await sender.call(method)
    except TelegramAPIError as exc:
        log.warning("%s failed (%s); the rating stays", method.__api_method__, type(exc).__name__)
