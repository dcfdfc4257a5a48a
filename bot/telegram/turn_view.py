"""How a finished turn looks in Telegram: its words and its one keyboard.

The one owner of what a customer sees for a turn besides the model's answer: the turn's
offers (services/offers.py), the feedback buttons (FEEDBACK_ENABLED) and the "talk to a
person" button under an apology become the message's reply markup here, and nowhere
else. A Telegram message carries one keyboard, so when several apply, the first of these
wins:

0. an action's confirmation card (`ConfirmAction`, bot/telegram/features/actions.py): its exact
   effect under the answer, with ✅/✖ — the only way to confirm it; private chats only
   (actions are proposed there only);
1. share my phone number (`SharePhone`): an order lookup missed and the customer has no
   verified phone; private chats only (Telegram offers contact buttons there only);
2. talk to a person: the turn failed, in a private chat, with handoff on, and no person
   was called in the turn already;
3. 👍/👎: an AI answer with text (our own texts are not rated);
4. none.

Below 2-4, in a private chat, the rows the features draw for their offers (`offer_rows`:
with order updates on, one "notify me when order N moves" row per own order the answer
showed, bot/telegram/features/order_updates.py).

The words: the answer (or our polite text, bot/telegram/replies.py), then the notice of a handoff
the turn opened (`PersonWillAnswer`, worded by bot/telegram/handoff.py), then the hint that goes
with the share button.
"""

from __future__ import annotations

from dataclasses import dataclass

from bot.telegram.context import OfferRows
from bot.telegram.keyboards import (
    action_keyboard,
    feedback_keyboard,
    operator_keyboard,
    share_phone_keyboard,
    with_rows,
)
from bot.telegram.replies import customer_text
from bot.telegram.sender import ReplyMarkup
from bot.telegram.texts import Texts
from services.loop_types import TurnReply
from services.offers import ConfirmAction, PersonWillAnswer, SharePhone


@dataclass(frozen=True, slots=True)
class TurnView:
    """The message for one turn: Markdown text and its one keyboard (or none)."""

    text: str
    markup: ReplyMarkup | None


@dataclass(frozen=True, slots=True)
class ChatSide:
    """What the view depends on besides the turn: where it is shown and what is on."""

    private_chat: bool  # a one-to-one chat between the customer and the bot
    feedback_buttons: bool  # 👍/👎 under AI answers (FEEDBACK_ENABLED)
    person_button: bool  # a person can be called (handoff to operators is on)
    language: str = "ru"  # the reply's language (an action card's words are per language)
    offer_rows: tuple[OfferRows, ...] = ()  # the features' offers' buttons (e.g. notify me)
    # where contact buttons do not work (a chat of the owner's business account): the
    # words that say where to share the phone instead of the button
    phone_hint: str | None = None


def turn_view(
    reply: TurnReply, texts: Texts, side: ChatSide, *, handoff_notice: str | None = None
) -> TurnView:
    """The turn's words and keyboard (precedence in the module docstring);
    `handoff_notice`: the words of a handoff the turn opened, if the bot announces one."""
    share = _shares_phone(reply, side)
    text = customer_text(reply, texts)
    if handoff_notice is not None:
        text = f"{text}\n\n{handoff_notice}"
    card = action_card(reply, side)
    if card is not None:
        operation_id, effect = card
        text = f"{text}\n\n{effect}"
        return TurnView(text=text, markup=action_keyboard(operation_id, texts))
    if share:
        text = f"{text}\n\n{side.phone_hint or texts.phone_hint}"
    button = share and side.phone_hint is None
    return TurnView(text=text, markup=_markup(reply, texts, side, share=button))


def action_card(reply: TurnReply, side: ChatSide) -> tuple[str, str] | None:
    """The turn's last proposed action shown on its card: (operation id, its exact effect
    in the reply's language). One keyboard per message; an earlier one of the same turn
    stays pending until it expires."""
    cards = [o for o in reply.offers if isinstance(o, ConfirmAction)]
    if not cards or not side.private_chat:
        return None
    effect = cards[-1].effect
    return cards[-1].operation_id, effect.get(side.language) or next(iter(effect.values()), "")


def _shares_phone(reply: TurnReply, side: ChatSide) -> bool:
    return (
        side.private_chat
        and reply.answered
        and any(isinstance(o, SharePhone) for o in reply.offers)
    )


def _markup(reply: TurnReply, texts: Texts, side: ChatSide, *, share: bool) -> ReplyMarkup | None:
    if share:
        return share_phone_keyboard(texts)
    called = any(isinstance(o, PersonWillAnswer) for o in reply.offers)
    if reply.error_code is not None and side.private_chat and side.person_button and not called:
        return operator_keyboard(texts)
    rated = None
    if side.feedback_buttons and reply.answered and reply.text:
        rated = feedback_keyboard(reply.turn_id)
    if not (side.private_chat and reply.answered):
        return with_rows(rated, [])
    return with_rows(rated, [row for rows in side.offer_rows for row in rows(reply, texts)])
