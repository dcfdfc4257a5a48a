"""Changing the delivery address: the model's proposal is validated field by field (a
clear error it can act on), an order that left the warehouse gets no card, the card
shows the address exactly as given and never as formatting, and on imported data a ✅
is a request the staff's Done completes once. Real databases, the real service."""

from __future__ import annotations

from typing import Any

import pytest
from pydantic import ValidationError

from bot.telegram.formatting import markdown_to_messages
from services.actions import ActionService, AnswerKind, ResultKind
from storage.actions import ActionStatus
from tests.unit.services.test_actions import (  # noqa: F401 (fixtures)
    ADMIN,
    OWNER,
    RETRY,
    World,
    clock,
    said,
    shop,
    world,
)
from tools.actions.builtin import CANCEL_ORDER, CHANGE_ADDRESS, REQUEST_RETURN
from tools.base import ActionProposed
from tools.executor import describe_validation_error
from tools.shop.backends.local import LocalBackend
from tools.shop.backends.local_actions import DirectoryActions, LocalRequestActions
from tools.shop.directory import local_directory

ADDRESS = {
    "line1": "ул. Ленина, д. 5/2",
    "line2": "кв. 12, подъезд 3",
    "city": "Казань",
    "postal_code": "420111",
    "country_code": "ru",
}


def _arguments(**changes: Any) -> dict[str, Any]:
    return {"order_id": "1001", "address": {**ADDRESS, **changes}}


def _error(**changes: Any) -> str:
    with pytest.raises(ValidationError) as failure:
        CHANGE_ADDRESS.arguments_model.model_validate(_arguments(**changes))
    return describe_validation_error(failure.value)


def test_an_address_with_markup_or_a_bad_code_is_refused_with_what_to_ask() -> None:
    assert "write the address in plain words" in _error(line1="**Lenina** [5](https://x.io)")
    assert "write the address in plain words" in _error(city="<b>Kazan</b>")
    assert "address.postal_code: is not a postal code" in _error(postal_code="42@111")
    assert "address.country_code" in _error(country_code="Russia")
    assert "address.line1" in _error(line1="")
    assert "invisible control characters" in _error(line2="кв.\u202e 12")
    assert "Lenina" not in _error(line1="**Lenina**")  # the value is never echoed


def _requests_service(world: World) -> ActionService:  # noqa: F811
    return ActionService(
        world.repo,
        DirectoryActions(
            local_directory(LocalBackend(world.shop)), LocalRequestActions(world.repo)
        ),
        world.shop,
        [CANCEL_ORDER, REQUEST_RETURN, CHANGE_ADDRESS],
        storage_retry=RETRY,
        clock=world.clock,
        people=world.local,
    )


async def test_a_shipped_order_gets_no_card(world: World) -> None:  # noqa: F811
    context = world.context()
    result = await world.propose(CHANGE_ADDRESS, _arguments(), context)
    assert result.proposed
    shipped = world.context(turn="u" * 32)
    arguments = {**_arguments(), "order_id": "1005"}  # in transit
    refused = await world.propose(CHANGE_ADDRESS, arguments, shipped)
    assert not refused.proposed and refused.refused == "already_shipped"
    assert not [n for n in shipped.notes if isinstance(n, ActionProposed)]


async def test_the_card_shows_the_address_in_full_as_data_and_staff_complete_it_once(
    world: World,  # noqa: F811
) -> None:
    """The card's words are the address as the customer gave it (a slash, a comma, a
    number sign stay as they are, nothing becomes a link or bold); on imported data the
    ✅ is a request, and the staff's Done tells the customer the new address once."""
    service = _requests_service(world)
    context = world.context()
    arguments = _arguments(line1="Lenina 5/2 #7 - (yard)", region="Tatarstan")
    assert (await world.propose(CHANGE_ADDRESS, arguments, context)).proposed
    [note] = [n for n in context.notes if isinstance(n, ActionProposed)]
    row = await world.repo.get(note.operation_id)
    assert row is not None
    card = service.card_words(row, "en")
    where = "Lenina 5/2 #7 - (yard), кв. 12, подъезд 3, 420111 Казань, Tatarstan, RU"
    assert card == f"Change the delivery address of order 1001 to: {where}?"
    [shown] = markdown_to_messages(f"Please check the card.\n\n{card}")
    assert where in shown.plain and "<a" not in shown.html and "<b>" not in shown.html
    press = await service.press(
        note.operation_id, chat_id=OWNER, user_id=OWNER, update_id=77, confirm=True, history=said
    )
    assert press.outcome is not None and press.outcome.kind is ResultKind.REQUESTED
    answers = [
        await service.answer(note.operation_id, done=True, by=ADMIN, chat_id=ADMIN, history=said)
        for _ in range(2)
    ]
    assert [a.kind for a in answers] == [AnswerKind.DONE, AnswerKind.ALREADY]
    done = answers[0].outcome
    assert done is not None and done.words is not None
    assert done.words["ru"] == f"Адрес доставки заказа 1001 изменён: {where}."
    finished = await world.repo.get(note.operation_id)
    assert finished is not None and finished.status is ActionStatus.DONE
    assert await world.status("1001") == "processing"  # nothing else about the order changed
