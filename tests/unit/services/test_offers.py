"""From a turn's notes to its offers, and their stored form (services/offers.py)."""

from __future__ import annotations

import json
import logging

import pytest

from services.offers import (
    PersonWillAnswer,
    SharePhone,
    offers_for,
    offers_from_json,
    offers_to_json,
)
from tools.base import HandoffRequested, OrderMissedNoPhone

MISSED = OrderMissedNoPhone(order_id="9999")
CALLED = HandoffRequested(handoff_id=4, reason="просит человека")


def test_each_offer_once_in_the_order_noted() -> None:
    notes = [CALLED, MISSED, OrderMissedNoPhone(order_id="1234"), CALLED]
    assert offers_for(notes, answered=True) == (
        PersonWillAnswer(handoff_id=4, reason="просит человека"),
        SharePhone(),
    )


def test_a_turn_whose_answer_is_not_shown_offers_only_the_handoff_it_opened() -> None:
    assert offers_for([MISSED, CALLED], answered=False) == (
        PersonWillAnswer(handoff_id=4, reason="просит человека"),
    )
    assert offers_for([], answered=True) == ()


def test_the_stored_form_gives_back_the_same_offers() -> None:
    offers = offers_for([MISSED, CALLED], answered=True)
    stored = offers_to_json(offers)
    assert stored is not None
    assert json.loads(stored) == [
        {"kind": "share_phone"},
        {"kind": "person_will_answer", "handoff_id": 4, "reason": "просит человека"},
    ]
    assert offers_from_json(stored) == offers
    assert offers_to_json(()) is None and offers_from_json(None) == ()


def test_a_stored_offer_this_version_does_not_know_is_dropped(
    caplog: pytest.LogCaptureFixture,
) -> None:
    stored = json.dumps([{"kind": "from_the_future", "secret": "x"}, {"kind": "share_phone"}])
    with caplog.at_level(logging.WARNING):
        assert offers_from_json(stored) == (SharePhone(),)
    assert "from_the_future" in caplog.text and "secret" not in caplog.text


def test_a_proposed_action_is_a_card_even_without_an_answer_and_survives_storage() -> None:
    """The card is the only way to confirm a stored pending action: a replay
    of the turn after a crash shows the same card."""
    from services.offers import ConfirmAction
    from tools.base import ActionProposed

    note = ActionProposed(
        operation_id="e" * 32, effect={"ru": "Отменить заказ 5530?", "en": "Cancel?"}
    )
    offers = offers_for([note], answered=False)
    assert offers == (ConfirmAction(operation_id="e" * 32, effect=dict(note.effect)),)
    assert offers_from_json(offers_to_json(offers)) == offers
