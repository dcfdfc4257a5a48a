"""storage/business.py's drafts and the action card a draft carries, on both backends:
Send starts the card's time to be pressed when it is posted; Discard (or the customer
deleting the message) withdraws it, so it can never be confirmed; a deleted message's
turn leaves the history, question and answer."""

from __future__ import annotations

from storage.actions import ActionRepository, ActionStatus, NewAction
from storage.business import DISCARDED, SENT, WAITING, BusinessRepository, Draft
from storage.conversations import ConversationRepository
from storage.database import Database
from tests.doubles.history import insert_pair
from tests.unit.tools.conftest import FakeClock

TTL_S = 900.0


async def proposed(db: Database, clock: FakeClock, operation_id: str, order: str) -> None:
    await ActionRepository(db, clock=clock).create(
        NewAction(
            operation_id=operation_id,
            action="cancel_order",
            order_number=order,
            chat_id=-(2**62) - 5,
            user_id=7502,
            arguments="{}",
            effect='{"en": "Cancel order?"}',
            done_words="{}",
            turn_id=f"turn-{operation_id}",
            expires_at=clock() + TTL_S,
        )
    )


def draft(draft_id: str, operation_id: str, message_id: int) -> Draft:
    return Draft(
        draft_id=draft_id,
        connection_id="bc-1",
        chat_id=7502,
        message_id=message_id,
        text="Answer",
        status=WAITING,
        asked_at=0.0,
        turn_id=f"turn-{operation_id}",
        operation_id=operation_id,
        card="Cancel order?",
        card_markup='{"inline_keyboard": []}',
    )


async def test_send_starts_the_cards_time_and_discard_withdraws_it(db: Database) -> None:
    clock = FakeClock()
    repo, actions = BusinessRepository(db, clock=clock), ActionRepository(db, clock=clock)
    await proposed(db, clock, "op-sent", "1001")
    await proposed(db, clock, "op-gone", "1002")
    await repo.add_draft(draft("d-sent", "op-sent", 10))
    await repo.add_draft(draft("d-gone", "op-gone", 11))
    stored = await repo.draft("d-sent")
    assert stored is not None and stored.card == "Cancel order?" and stored.operation_id

    clock.advance(2 * TTL_S)  # the owner took their time
    assert await repo.move_draft("d-sent", to=SENT, from_=(WAITING,))
    sent = await actions.get("op-sent")
    assert sent is not None and sent.status is ActionStatus.PENDING
    assert sent.expires_at == clock() + TTL_S  # as long as when proposed, from now

    assert await repo.move_draft("d-gone", to=DISCARDED, from_=(WAITING,))
    gone = await actions.get("op-gone")
    assert gone is not None and (gone.status, gone.reason) == (ActionStatus.EXPIRED, "discarded")


async def test_a_deleted_message_discards_its_draft_and_its_turn_leaves_the_history(
    db: Database,
) -> None:
    clock = FakeClock()
    repo = BusinessRepository(db, clock=clock)
    conversations = ConversationRepository(db)
    await proposed(db, clock, "op-1", "1001")
    await repo.add_draft(draft("d-1", "op-1", 10))
    session = await conversations.open_session(-(2**62) - 5)
    async with db.transaction() as tx:
        await insert_pair(
            tx,
            session_id=session,
            user_text="Cancel 1001",
            assistant_text="Answer",
            turn_id="turn-op-1",
            created_at=clock(),
        )

    assert await repo.discard_for_messages("bc-1", 7502, [10]) == 1
    assert await repo.discard_for_messages("bc-1", 7502, [10]) == 0  # once
    stored = await repo.draft("d-1")
    assert stored is not None and stored.status == DISCARDED
    assert await conversations.recent_messages(session, limit=10) == []
    gone = await ActionRepository(db, clock=clock).get("op-1")
    assert gone is not None and gone.status is ActionStatus.EXPIRED
