"""What a turn offers the customer besides its text: typed values with their data.

A tool notes what it learned (`tools.base.TurnNote`); at the end of the turn the chat
service turns the notes into offers (`offers_for`), hands them to the bot on
`TurnReply.offers`, and stores them with the turn (`offers_to_json`), so a turn replayed
after a crash offers exactly what the first run did (`offers_from_json`). The bot has one
owner that shows them (bot/telegram/turn_view.py: the words and the one keyboard per message).
No Telegram here: an offer says *what* to offer, the bot decides how it looks.

A new kind of offer is one more frozen type with its own `kind` added to `Offer`; mypy
then names every place that must handle it (the mapping below, the bot's renderer).
"""

from __future__ import annotations

import json
import logging
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Annotated, Literal, assert_never

from pydantic import Field, TypeAdapter, ValidationError

from tools.base import (
    ActionProposed,
    HandoffRequested,
    OrderMissedNoPhone,
    OwnerAsked,
    OwnOrderShown,
    TurnNote,
)

log = logging.getLogger(__name__)


@dataclass(frozen=True, slots=True)
class SharePhone:
    """Offer to share the customer's own phone number: an order lookup in this private
    chat missed and the customer has no verified phone. Made for every such miss, so it
    says nothing about whether an order exists."""

    kind: Literal["share_phone"] = "share_phone"


@dataclass(frozen=True, slots=True)
class PersonWillAnswer:
    """The model handed the conversation to a person in this turn: the customer is told
    a person will answer, the operators get the brief of handoff `handoff_id`."""

    handoff_id: int
    reason: str  # the model's reason, for the operators' brief
    kind: Literal["person_will_answer"] = "person_will_answer"


@dataclass(frozen=True, slots=True)
class OwnerWillAnswer:
    """The model asked for a person in a chat of the owner's business account: the owner
    is told, the bot pauses in that chat, the customer hears the owner will answer."""

    reason: str
    kind: Literal["owner_will_answer"] = "owner_will_answer"


@dataclass(frozen=True, slots=True)
class ConfirmAction:
    """An action awaits the customer's confirmation (tools/actions/): the card states its
    exact effect (`effect`: the words per language) with ✅/✖ for operation
    `operation_id`, stored pending before this turn was."""

    operation_id: str
    effect: dict[str, str]
    kind: Literal["confirm_action"] = "confirm_action"


@dataclass(frozen=True, slots=True)
class NotifyWhenItMoves:
    """The customer was shown their own order `order_number`: offer to tell them when it
    moves (shown only when order updates are on)."""

    order_number: str
    kind: Literal["notify_when_it_moves"] = "notify_when_it_moves"


Offer = SharePhone | PersonWillAnswer | OwnerWillAnswer | ConfirmAction | NotifyWhenItMoves

_STORED: TypeAdapter[Offer] = TypeAdapter(Annotated[Offer, Field(discriminator="kind")])


def offers_for(notes: Iterable[TurnNote], *, answered: bool) -> tuple[Offer, ...]:
    """The offers a turn's notes make, each once, in the order noted.

    `answered`: the customer sees the model's answer (not a refusal, a withheld answer
    or a failure); offers about the answer's content (share your phone) need it, a
    handoff that was opened is announced whatever the answer became.
    """
    offers: list[Offer] = []
    for note in notes:
        offer = _offer_of(note, answered=answered)
        if offer is not None and offer not in offers:
            offers.append(offer)
    return tuple(offers)


def _offer_of(note: TurnNote, *, answered: bool) -> Offer | None:
    if isinstance(note, OrderMissedNoPhone):
        return SharePhone() if answered else None
    if isinstance(note, HandoffRequested):
        return PersonWillAnswer(handoff_id=note.handoff_id, reason=note.reason)
    if isinstance(note, OwnerAsked):
        return OwnerWillAnswer(reason=note.reason)
    if isinstance(note, ActionProposed):
        # the card is the action's only way to be confirmed: shown whatever the answer
        return ConfirmAction(operation_id=note.operation_id, effect=dict(note.effect))
    if isinstance(note, OwnOrderShown):
        return NotifyWhenItMoves(order_number=note.order_id) if answered else None
    assert_never(note)


def offers_to_json(offers: tuple[Offer, ...]) -> str | None:
    """The stored form (a JSON array; None when there is nothing to offer)."""
    if not offers:
        return None
    return json.dumps(
        [_STORED.dump_python(offer, mode="json") for offer in offers], ensure_ascii=False
    )


def offers_from_json(stored: str | None) -> tuple[Offer, ...]:
    """The offers back from their stored form; an entry this version does not know is
    dropped with a warning (the reply still goes out, without that offer)."""
    if not stored:
        return ()
    offers: list[Offer] = []
    for item in json.loads(stored):
        try:
            offers.append(_STORED.validate_python(item))
        except ValidationError:
            kind = item.get("kind") if isinstance(item, dict) else None
            log.warning("a stored offer of an unknown form was dropped (kind %.40r)", kind)
    return tuple(offers)
