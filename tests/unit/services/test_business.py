"""services/business.py on a real database: who is served, the owner's pause (by their
own message or by a request for a person), the 24-hour window, drafts and the memory."""

from __future__ import annotations

import pytest

from services.business import (
    REPLY_WINDOW_S,
    BusinessService,
    Change,
    Incoming,
    Verdict,
    conversation_id,
    is_business_conversation,
)
from storage.business import BusinessRepository, Connection
from storage.database import Database
from tests.unit.tools.conftest import FakeClock

OWNER, CUSTOMER, STRANGER = 7501, 7502, 7509
CONNECTION = "bc-1"


@pytest.fixture
def clock() -> FakeClock:
    return FakeClock()


@pytest.fixture
async def service(db: Database, clock: FakeClock) -> BusinessService:
    service = BusinessService(
        BusinessRepository(db, clock=clock),
        owners=frozenset({OWNER}),
        pause_s=3600.0,
        approval=False,
        clock=clock,
    )
    change = await service.connected(
        Connection(CONNECTION, OWNER, OWNER, enabled=True, can_reply=True, approval=False)
    )
    assert change is Change.CONNECTED
    return service


def said(clock: FakeClock, *, by: int = CUSTOMER, ago: float = 0.0) -> Incoming:
    return Incoming(CONNECTION, CUSTOMER, by, sent_by_bot=False, date=clock() - ago)


def test_a_business_chats_conversation_is_apart_from_every_bot_chat() -> None:
    conversation = conversation_id(CONNECTION, CUSTOMER)
    assert is_business_conversation(conversation)
    assert conversation == conversation_id(CONNECTION, CUSTOMER)  # stable
    assert conversation != conversation_id("bc-2", CUSTOMER)
    assert not is_business_conversation(-(10**13))  # a supergroup's id


async def test_an_account_that_is_not_an_owners_is_not_served(
    service: BusinessService,
) -> None:
    change = await service.connected(
        Connection("bc-x", STRANGER, STRANGER, enabled=True, can_reply=True, approval=False)
    )
    assert change is Change.NOT_OWNER
    incoming = Incoming("bc-x", CUSTOMER, CUSTOMER, sent_by_bot=False, date=0.0)
    assert (await service.decide(incoming)).verdict is Verdict.UNKNOWN_CONNECTION


async def test_a_message_older_than_the_reply_window_is_not_answered(
    service: BusinessService, clock: FakeClock
) -> None:
    assert (await service.decide(said(clock))).verdict is Verdict.ANSWER
    late = said(clock, ago=REPLY_WINDOW_S + 1)
    assert (await service.decide(late)).verdict is Verdict.TOO_OLD


async def test_the_owners_message_pauses_the_chat_once_until_given_back(
    service: BusinessService, clock: FakeClock
) -> None:
    first = await service.decide(said(clock, by=OWNER))
    assert first.verdict is Verdict.OWNER_WROTE and first.newly_paused
    again = await service.decide(said(clock, by=OWNER))
    assert again.verdict is Verdict.OWNER_WROTE and not again.newly_paused
    assert (await service.decide(said(clock))).verdict is Verdict.PAUSED
    assert await service.give_back(OWNER, CUSTOMER) == 1
    assert (await service.decide(said(clock))).verdict is Verdict.ANSWER


async def test_a_request_for_a_person_pauses_the_chat_like_the_owners_message(
    service: BusinessService, clock: FakeClock
) -> None:
    await service.decide(said(clock))  # the chat is known
    until = await service.owner_asked(said(clock))
    assert until == clock() + 3600.0
    assert (await service.decide(said(clock))).verdict is Verdict.PAUSED
    clock.advance(3601.0)
    assert (await service.decide(said(clock))).verdict is Verdict.ANSWER


async def test_the_owner_writing_during_a_turn_stops_its_answer(
    service: BusinessService, clock: FakeClock
) -> None:
    started = clock()
    assert not service.owner_wrote(CONNECTION, CUSTOMER, started)
    service.note_stored(CONNECTION, CUSTOMER, CUSTOMER)  # the customer: nothing
    assert not service.owner_wrote(CONNECTION, CUSTOMER, started)
    clock.advance(1.0)
    service.note_stored(CONNECTION, CUSTOMER, OWNER)
    assert service.owner_wrote(CONNECTION, CUSTOMER, started)


async def test_a_draft_is_decided_once_and_only_inside_the_window(
    service: BusinessService, clock: FakeClock
) -> None:
    draft = await service.new_draft(said(clock), 10, "Answer")
    assert service.in_window(draft)
    assert await service.edit(draft.draft_id)
    assert await service.send(draft.draft_id, text="Mine")
    assert not await service.discard(draft.draft_id)
    stored = await service.draft(draft.draft_id)
    assert stored is not None and stored.text == "Mine"
    clock.advance(REPLY_WINDOW_S + 1)
    assert not service.in_window(draft)


async def test_a_deleted_message_is_remembered_until_its_turn_ends_and_then_forgotten(
    service: BusinessService, clock: FakeClock
) -> None:
    service.note_deleted(CONNECTION, CUSTOMER, [10, 11])
    assert service.was_deleted(CONNECTION, CUSTOMER, 10)
    assert not service.was_deleted(CONNECTION, CUSTOMER, 12)
    assert not service.was_deleted("bc-2", CUSTOMER, 10)  # another connection's chat
    clock.advance(2 * 3600.0)
    service.note_deleted(CONNECTION, CUSTOMER, [12])  # older notes are let go
    assert not service.was_deleted(CONNECTION, CUSTOMER, 10)
    assert service.was_deleted(CONNECTION, CUSTOMER, 12)
