"""The one keyboard per message and the words around the answer (bot/telegram/turn_view.py)."""

from __future__ import annotations

from typing import Any

import pytest

from bot.telegram.action_words import ACTION_WORDS
from bot.telegram.features.order_updates import notify_rows
from bot.telegram.keyboards import ActionButton, ActionChoice, HandoffButton, markup_to_json
from bot.telegram.texts import EN
from bot.telegram.turn_view import ChatSide, TurnView, turn_view
from services.loop_types import StopReason, TurnReply
from services.offers import ConfirmAction, NotifyWhenItMoves, Offer, PersonWillAnswer, SharePhone

TURN = "0" * 32
PERSON = PersonWillAnswer(handoff_id=1, reason="asks for a person")
ANSWER = TurnReply(turn_id=TURN, text="Your order is on its way.", stop_reason=StopReason.COMPLETED)
FAILED = TurnReply(turn_id=TURN, text=None, stop_reason=None, error_code="protocol_error")
REFUSED = TurnReply(turn_id=TURN, text=None, stop_reason=StopReason.REFUSED)
STOPPED_EARLY = TurnReply(turn_id=TURN, text=None, stop_reason=StopReason.STOPPED)

PRIVATE = ChatSide(private_chat=True, feedback_buttons=True, person_button=True)
GROUP = ChatSide(private_chat=False, feedback_buttons=True, person_button=True)
NO_FEEDBACK = ChatSide(private_chat=True, feedback_buttons=False, person_button=True)
NO_HANDOFF = ChatSide(private_chat=True, feedback_buttons=True, person_button=False)


def offering(reply: TurnReply, *offers: Offer) -> TurnReply:
    return TurnReply(
        turn_id=reply.turn_id,
        text=reply.text,
        stop_reason=reply.stop_reason,
        error_code=reply.error_code,
        offers=offers,
    )


def keyboard(view: TurnView) -> str | None:
    """Which keyboard the message carries: share / person / feedback / None."""
    if view.markup is None:
        return None
    data: dict[str, Any] = markup_to_json(view.markup)
    if any(b.get("request_contact") for row in data.get("keyboard", []) for b in row):
        return "share"
    buttons = [b for row in data.get("inline_keyboard", []) for b in row]
    if [b.get("callback_data") for b in buttons] == [HandoffButton().pack()]:
        return "person"
    if all(str(b.get("callback_data", "")).startswith(f"fb:{TURN}:") for b in buttons):
        return "feedback"
    return "other"


@pytest.mark.parametrize(
    ("reply", "side", "expected"),
    [
        # the share button wins over everything, in private chats, under an AI answer
        (offering(ANSWER, SharePhone()), PRIVATE, "share"),
        (offering(ANSWER, SharePhone(), PERSON), PRIVATE, "share"),
        (offering(ANSWER, SharePhone()), NO_FEEDBACK, "share"),
        (offering(ANSWER, SharePhone()), GROUP, "feedback"),  # no contact buttons in groups
        (offering(REFUSED, SharePhone()), PRIVATE, None),  # only under the model's answer
        (offering(FAILED, SharePhone()), PRIVATE, "person"),
        # an apology in a private chat may call a person, unless one was called already
        (FAILED, PRIVATE, "person"),
        (offering(FAILED, PERSON), PRIVATE, None),
        (FAILED, NO_HANDOFF, None),
        (FAILED, GROUP, None),
        # 👍/👎 under an AI answer with text; our own texts are not rated
        (ANSWER, PRIVATE, "feedback"),
        (ANSWER, GROUP, "feedback"),
        (offering(ANSWER, PERSON), PRIVATE, "feedback"),
        (ANSWER, NO_FEEDBACK, None),
        (REFUSED, PRIVATE, None),
        (STOPPED_EARLY, PRIVATE, None),
    ],
)
def test_one_keyboard_per_message_in_order_of_precedence(
    reply: TurnReply, side: ChatSide, expected: str | None
) -> None:
    assert keyboard(turn_view(reply, EN, side)) == expected


def test_the_words_are_the_answer_then_the_handoff_notice_then_the_phone_hint() -> None:
    view = turn_view(offering(ANSWER, SharePhone(), PERSON), EN, PRIVATE, handoff_notice="N")
    assert view.text == f"{ANSWER.text}\n\nN\n\n{EN.phone_hint}"


def test_no_phone_hint_without_the_share_button() -> None:
    assert turn_view(offering(ANSWER, SharePhone()), EN, GROUP).text == ANSWER.text
    assert turn_view(FAILED, EN, PRIVATE).text == EN.apology


# -- an action's confirmation card -------------------------------------------

CARD = ConfirmAction(
    operation_id="c" * 32, effect={"ru": "Отменить заказ 5530?", "en": "Cancel order 5530?"}
)


def test_the_card_wins_states_the_effect_in_the_customers_language_and_has_yes_no() -> None:
    side = ChatSide(private_chat=True, feedback_buttons=True, person_button=True, language="en")
    view = turn_view(offering(ANSWER, SharePhone(), CARD), EN, side)
    assert view.text == "Your order is on its way.\n\nCancel order 5530?"
    data = markup_to_json(view.markup) if view.markup else {}
    [[yes, no]] = data["inline_keyboard"]
    assert (yes["text"], no["text"]) == (
        ACTION_WORDS["en"].action_confirm_button,
        ACTION_WORDS["en"].action_decline_button,
    )
    assert ActionButton.read(yes["callback_data"]) == ActionButton(
        operation_id="c" * 32, choice=ActionChoice.CONFIRM
    )
    assert ActionButton.read(no["callback_data"]).choice is ActionChoice.DECLINE  # type: ignore[union-attr]


def test_no_card_in_a_group() -> None:
    assert "5530" not in turn_view(offering(ANSWER, CARD), EN, GROUP).text


@pytest.mark.parametrize(
    "data",
    [
        "act:" + "c" * 32 + ":x",
        "act:" + "C" * 32 + ":y",
        "act:xyz:y",
        "fb:" + "c" * 32 + ":u",
        "",
        None,
    ],
)
def test_only_exactly_our_action_data_is_read(data: str | None) -> None:
    assert ActionButton.read(data) is None


NOTIFY = NotifyWhenItMoves(order_number="8041")
UPDATES = ChatSide(
    private_chat=True, feedback_buttons=True, person_button=True, offer_rows=(notify_rows,)
)


def rows(view: TurnView) -> list[list[str]]:
    data: dict[str, Any] = markup_to_json(view.markup) if view.markup is not None else {}
    return [[str(b.get("callback_data")) for b in row] for row in data.get("inline_keyboard", [])]


@pytest.mark.parametrize(
    ("reply", "side", "expected"),
    [
        # below the 👍/👎, only with order updates on, in a private chat, under an answer
        (offering(ANSWER, NOTIFY), UPDATES, [[f"fb:{TURN}:u", f"fb:{TURN}:d"], ["ou:on:8041"]]),
        (offering(ANSWER, NOTIFY), PRIVATE, [[f"fb:{TURN}:u", f"fb:{TURN}:d"]]),  # feature off
        (
            offering(ANSWER, NOTIFY),
            ChatSide(
                private_chat=False,
                feedback_buttons=True,
                person_button=True,
                offer_rows=(notify_rows,),
            ),
            [[f"fb:{TURN}:u", f"fb:{TURN}:d"]],
        ),
        (
            offering(ANSWER, NOTIFY),
            ChatSide(
                private_chat=True,
                feedback_buttons=False,
                person_button=True,
                offer_rows=(notify_rows,),
            ),
            [["ou:on:8041"]],
        ),
        (offering(REFUSED, NOTIFY), UPDATES, []),
        (offering(FAILED, NOTIFY), UPDATES, [[HandoffButton().pack()]]),
        # a number that cannot travel in callback data gets no button
        (
            offering(ANSWER, NotifyWhenItMoves(order_number="A:1")),
            UPDATES,
            [[f"fb:{TURN}:u", f"fb:{TURN}:d"]],
        ),
        (
            offering(ANSWER, NotifyWhenItMoves(order_number="9" * 70)),
            UPDATES,
            [[f"fb:{TURN}:u", f"fb:{TURN}:d"]],
        ),
    ],
)
def test_notify_me_when_it_moves(
    reply: TurnReply, side: ChatSide, expected: list[list[str]]
) -> None:
    assert rows(turn_view(reply, EN, side)) == expected


def test_a_rating_press_keeps_the_notify_row() -> None:
    """The 👍/👎 press redraws the keyboard (bot/telegram/routers/feedback.py): other rows stay."""
    from aiogram.types import InlineKeyboardMarkup

    from bot.telegram.routers.feedback import _other_rows

    view = turn_view(offering(ANSWER, NOTIFY), EN, UPDATES)
    assert isinstance(view.markup, InlineKeyboardMarkup)
    kept = _other_rows(view.markup)
    assert [[b.callback_data for b in row] for row in kept] == [["ou:on:8041"]]
    assert _other_rows(None) == []
