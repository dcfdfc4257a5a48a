"""What the actions' sweeper says goes through the durable outbox: stored with the record
it tells of, sent once, retried while Telegram cannot take it, never lost to a crash.

Real databases of each backend, the real service, sweeper and delivery; only Telegram is
a scripted sender (what the Bot API would answer).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from bot.telegram.action_sweeper import ActionSweeper
from bot.telegram.action_words import ACTION_WORDS
from bot.telegram.outgoing import HOLD_S, OutgoingDelivery
from bot.telegram.routers.actions import Staff
from bot.telegram.sender import SendResult
from bot.telegram.texts import BUILT_IN
from services.actions import ActionService, ResultKind
from services.business import conversation_id
from storage.actions import ActionStatus
from storage.business import BusinessRepository
from storage.outgoing import Outgoing, OutgoingRepository
from tests.unit.services.test_actions import (  # noqa: F401 (fixtures)
    OWNER,
    RETRY,
    UnknownFirst,
    World,
    _history,
    _sweeping,
    clock,
    shop,
    world,
)

ADMIN = 9001


@dataclass
class Sent:
    chat_id: int
    text: str
    business_connection_id: str | None = None


class Telegram:
    """A scripted Bot API: while `down`, every message fails as unreachable (or, with
    `lost`, its answer is lost); otherwise it is accepted and kept."""

    def __init__(self) -> None:
        self.down = False
        self.lost = False
        self.sent: list[Sent] = []
        self.tries = 0

    async def send_text(
        self, chat_id: int, text: str, business_connection_id: str | None = None, **_: Any
    ) -> SendResult:
        self.tries += 1
        if self.lost:
            return SendResult("unknown", reason="network")
        if self.down:
            return SendResult("failed", reason="network")
        self.sent.append(Sent(chat_id, text, business_connection_id))
        return SendResult("delivered", message_id=len(self.sent))

    def to(self, chat_id: int) -> list[str]:
        return [s.text for s in self.sent if s.chat_id == chat_id]


def _sweeper(w: World, telegram: Telegram, backend: Any, *, escalate: bool = False) -> Any:
    delivery = OutgoingDelivery(
        OutgoingRepository(w.db, clock=w.clock),
        telegram,  # type: ignore[arg-type]
        first_retry_s=10,
        clock=w.clock,
    )
    return ActionSweeper(
        _sweeping(w, backend, attempts=2),
        delivery,
        BUILT_IN,
        staff_chats=[ADMIN],
        operator_chat_id=None,
        every_s=1,
        staff=Staff(frozenset({ADMIN}), None, BUILT_IN) if escalate else None,
        escalate_after_s=3600 if escalate else None,
    )


async def _needing_attention(w: World, sweeper: Any, backend: Any) -> str:
    """A card pressed while the shop never answers, swept until it needs attention."""
    op = await w.card()
    service = _sweeping(w, backend, attempts=2)
    press = await service.press(
        op, chat_id=OWNER, user_id=OWNER, update_id=41, confirm=True, history=_history
    )
    assert press.outcome is not None and press.outcome.kind is ResultKind.CHECKING
    for _ in range(10):
        w.clock.advance(1000)
        await sweeper.sweep_once()
        row = await w.repo.get(op)
        assert row is not None
        if row.status is ActionStatus.NEEDS_ATTENTION:
            return op
    raise AssertionError("never needed attention")


async def test_telegram_down_when_the_sweep_ends_an_action_delays_the_message_not_loses_it(
    world: World,  # noqa: F811
) -> None:
    telegram = Telegram()
    never = UnknownFirst(world.local, lost=10_000)
    sweeper = _sweeper(world, telegram, never)
    telegram.down = True
    op = await _needing_attention(world, sweeper, never)
    assert telegram.sent == [] and telegram.tries >= 2  # tried: customer and admin
    outbox = OutgoingRepository(world.db)
    assert await outbox.get(f"action:{op}:customer") == ("pending", None)
    await sweeper.sweep_once()  # too early: the next try is not due yet
    assert telegram.sent == []
    telegram.down = False
    world.clock.advance(60)
    await sweeper.sweep_once()
    assert telegram.to(OWNER) == [ACTION_WORDS["ru"].action_needs_attention]
    [line] = telegram.to(ADMIN)
    assert "заказ 1001 требует проверки" in line
    for _ in range(3):  # sent once: later sweeps send nothing more
        world.clock.advance(1000)
        await sweeper.sweep_once()
    assert len(telegram.sent) == 2
    assert await outbox.get(f"action:{op}:customer") == ("delivered", 1)


async def test_a_crash_between_the_record_and_the_send_loses_no_message(world: World) -> None:  # noqa: F811
    """The sweep recorded the outcome (and, with it, the messages) and the process died
    before sending: the next process's delivery sends each once."""
    telegram = Telegram()
    never = UnknownFirst(world.local, lost=10_000)
    op = await world.card()
    service = _sweeping(world, never, attempts=1)
    await service.press(
        op, chat_id=OWNER, user_id=OWNER, update_id=41, confirm=True, history=_history
    )
    world.clock.advance(1000)
    dying = _sweeper(world, telegram, never)
    ended = await service.sweep(dying._history, dying._tell)  # recorded; then "killed"
    assert [p.outcome.kind for p in ended if p.outcome] == [ResultKind.NEEDS_ATTENTION]
    assert telegram.sent == []
    restarted = _sweeper(world, telegram, never)
    await restarted.sweep_once()
    await restarted.sweep_once()
    assert telegram.to(OWNER) == [ACTION_WORDS["ru"].action_needs_attention]
    assert len(telegram.to(ADMIN)) == 1


async def test_a_send_cut_off_by_a_crash_is_tried_again_after_its_hold(world: World) -> None:  # noqa: F811
    """A worker took a message and died mid-try: another takes it once its hold is over
    (not before, so two workers never send it at once)."""
    telegram = Telegram()
    outbox = OutgoingRepository(world.db, clock=world.clock)
    await outbox.add([Outgoing("k:1", OWNER, "hello", "hello")])
    [row] = await outbox.due()
    assert await outbox.take(row, hold_s=HOLD_S)  # ... and the worker died
    delivery = OutgoingDelivery(outbox, telegram, clock=world.clock)  # type: ignore[arg-type]
    assert await delivery.deliver_due() == 0
    world.clock.advance(HOLD_S + 1)
    assert await delivery.deliver_due() == 1
    assert await delivery.deliver_due() == 0
    assert telegram.to(OWNER) == ["hello"]


async def test_a_lost_answer_is_not_sent_again(world: World) -> None:  # noqa: F811
    """Telegram may have shown it: never resent blindly (as for replies)."""
    telegram = Telegram()
    outbox = OutgoingRepository(world.db, clock=world.clock)
    await outbox.add([Outgoing("k:2", OWNER, "hello", "hello")])
    delivery = OutgoingDelivery(outbox, telegram, clock=world.clock)  # type: ignore[arg-type]
    telegram.lost = True
    await delivery.deliver_due()
    telegram.lost = False
    world.clock.advance(HOLD_S * 10)
    assert await delivery.deliver_due() == 0
    assert await outbox.get("k:2") == ("unknown", None)
    assert telegram.tries == 1


async def test_a_reminder_while_telegram_is_down_arrives_later_once(world: World) -> None:  # noqa: F811
    telegram = Telegram()
    op = await world.card()
    await world.repo.open_request(op, "1001")
    sweeper = _sweeper(world, telegram, world.local, escalate=True)
    telegram.down = True
    world.clock.advance(3601)
    await sweeper.sweep_once()
    assert telegram.sent == []
    telegram.down = False
    for _ in range(3):
        world.clock.advance(1000)
        await sweeper.sweep_once()
    [reminder] = telegram.to(ADMIN)
    assert "Напоминание: на запрос по заказу 1001" in reminder


async def test_actions_left_unfinished_when_actions_are_switched_off_end_and_are_told(
    world: World,  # noqa: F811
) -> None:
    """ACTIONS_ENABLED emptied while one action's outcome was unknown and another's press
    had died before the shop was asked: the sweeper of the switched-off feature (a
    service without definitions) never asks the shop; the unknown one needs a person
    (customer and admin told), the other failed (nothing was done), each told once."""
    telegram = Telegram()
    unknown_op = await world.card("1001")
    never = UnknownFirst(world.local, lost=10_000)
    await _sweeping(world, never).press(
        unknown_op, chat_id=OWNER, user_id=OWNER, update_id=61, confirm=True, history=_history
    )
    died_op = await world.card("1006", turn="d" * 32)
    await world.press(died_op, update=62)  # confirmed ... and the process died
    off = ActionService(world.repo, never, world.shop, (), storage_retry=RETRY, clock=world.clock)
    sweeper = ActionSweeper(
        off,
        OutgoingDelivery(
            OutgoingRepository(world.db, clock=world.clock), telegram, clock=world.clock
        ),  # type: ignore[arg-type]
        BUILT_IN,
        staff_chats=[ADMIN],
        operator_chat_id=None,
        every_s=1,
    )
    asked = len(never.operation_ids)
    for _ in range(3):
        world.clock.advance(1000)
        await sweeper.sweep_once()
    assert len(never.operation_ids) == asked  # the shop was not asked again
    unknown = await world.repo.get(unknown_op)
    died = await world.repo.get(died_op)
    assert unknown is not None and unknown.status is ActionStatus.NEEDS_ATTENTION
    assert died is not None and died.status is ActionStatus.FAILED
    assert sorted(telegram.to(OWNER)) == sorted(
        [ACTION_WORDS["ru"].action_needs_attention, ACTION_WORDS["ru"].action_failed]
    )
    [line] = telegram.to(ADMIN)
    assert "заказ 1001 требует проверки" in line and "switched off" in line
    assert await world.status("1006") == "processing"


async def test_sent_messages_are_forgotten_after_a_week_pending_ones_never(
    world: World,  # noqa: F811
) -> None:
    telegram = Telegram()
    outbox = OutgoingRepository(world.db, clock=world.clock)
    delivery = OutgoingDelivery(outbox, telegram, clock=world.clock)  # type: ignore[arg-type]
    await outbox.add([Outgoing("k:sent", OWNER, "a", "a")])
    await delivery.deliver_due()
    telegram.down = True
    await outbox.add([Outgoing("k:waiting", OWNER, "b", "b")])
    world.clock.advance(8 * 86_400)
    assert await delivery.forget_old() == 1
    assert await outbox.get("k:sent") is None
    assert await outbox.get("k:waiting") == ("pending", None)


async def test_a_message_to_a_customer_of_the_owners_business_account_goes_through_its_connection(
    world: World,  # noqa: F811
) -> None:
    """The sweep's result of an action asked for in one of the owner's chats: stored for
    the chat's conversation id, sent to the customer's chat through the connection
    (durably: the connection is in the stored row)."""
    conversation = conversation_id("bc-1", 7502)
    await BusinessRepository(world.db).note_chat(conversation, "bc-1", 7502)
    telegram = Telegram()
    outbox = OutgoingRepository(world.db, clock=world.clock)
    await outbox.add(
        [Outgoing("k:b", conversation, "done", "done"), Outgoing("k:o", OWNER, "x", "x")]
    )
    [row, own] = await outbox.due()
    assert (row.message.chat_id, row.message.business_connection_id) == (7502, "bc-1")
    assert (own.message.chat_id, own.message.business_connection_id) == (OWNER, None)
    delivery = OutgoingDelivery(outbox, telegram, clock=world.clock)  # type: ignore[arg-type]
    assert await delivery.deliver_due() == 2
    assert telegram.sent[0] == Sent(7502, "done", "bc-1")
