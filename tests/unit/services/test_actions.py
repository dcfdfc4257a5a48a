"""Actions with confirmation: the proposal's checks, the state machine and
exactly-once execution, on a real database of each backend and the local backend's real
orders table (no mocks but a shop that answers "unknown")."""

from __future__ import annotations

import asyncio
import contextlib
import dataclasses
import functools
import json
from collections.abc import Sequence
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest
from pydantic import Field

from services.actions import (
    UNKNOWN_ATTEMPTS,
    ActionService,
    AnswerKind,
    ClaimKind,
    Outcome,
    ResultKind,
    Sweep,
)
from services.business import conversation_id
from storage.actions import ActionRepository, ActionStatus, LocalActionStore
from storage.business import BusinessRepository
from storage.database import Database, StorageRetry, open_database
from storage.shop import OrderUpsert, ReturnPolicyUpsert, ShopRepository
from tests.unit.services.interleave import (
    Interleaved,
    behind_the_one_writer,
    race,
    waiting_on_a_lock,
)
from tests.unit.tools.conftest import FakeClock
from tools.actions.builtin import CANCEL_ORDER, REQUEST_RETURN
from tools.actions.definition import (
    ActionArguments,
    ActionDefinition,
    Allowed,
    Decision,
    Policy,
    Refused,
)
from tools.actions.propose import ProposalResult, ProposingHandler
from tools.base import ActionProposed, Caller, OrderMissedNoPhone, ToolContext
from tools.shop.backend import ActionDone, ActionResult, ActionUnknown, ReturnLine
from tools.shop.backends.local import LocalBackend
from tools.shop.backends.local_actions import (
    DirectoryActions,
    LocalOrderActions,
    LocalRequestActions,
)
from tools.shop.directory import local_directory
from tools.shop.orders import FOUR_DIGITS, LiveOrder

OWNER, STRANGER = 501, 502
RETRY = StorageRetry(first_delay_s=0.01, max_delay_s=0.01, give_up_after_s=5)


def _iso(moment: datetime) -> str:
    return moment.isoformat(timespec="minutes")


@pytest.fixture
def clock() -> FakeClock:
    return FakeClock(datetime.now(UTC).timestamp())


@pytest.fixture
async def shop(db: Database, clock: FakeClock) -> ShopRepository:
    repository = ShopRepository(db)
    now = datetime.fromtimestamp(clock(), UTC)
    orders = {
        "1001": {"status": "processing", "owner_telegram_id": OWNER},
        "1002": {
            "status": "delivered",
            "owner_telegram_id": OWNER,
            "updated_at": _iso(now - timedelta(days=3)),
        },
        "1003": {
            "status": "delivered",
            "owner_telegram_id": OWNER,
            "updated_at": _iso(now - timedelta(days=30)),
        },
        "1004": {"status": "processing", "owner_telegram_id": STRANGER},
        "1005": {"status": "in_transit", "owner_telegram_id": OWNER},
        **{n: {"status": "processing", "owner_telegram_id": OWNER} for n in ("1006", "1007")},
        "1008": {"status": "processing", "owner_telegram_id": OWNER},
    }
    await repository.import_shop_data(
        orders=[OrderUpsert(k, v) for k, v in orders.items()],
        policies=[
            ReturnPolicyUpsert(
                product="наушники",
                display_name="Наушники",
                return_days=7,
                conditions="-",
                aliases=("headphones",),
            )
        ],
        texts={},
    )
    return repository


class World:
    def __init__(self, db: Database, shop: ShopRepository, clock: FakeClock) -> None:
        self.db = db
        self.shop = shop
        self.clock = clock
        self.repo = ActionRepository(db, clock=clock)
        self.local = DirectoryActions(
            local_directory(LocalBackend(shop)),
            LocalOrderActions(LocalActionStore(db, clock=clock)),
        )
        self.service = self.service_over(self.local)
        self.updates = iter(range(10_000, 20_000))

    def service_over(self, backend: Any) -> ActionService:
        return ActionService(
            self.repo,
            backend,
            self.shop,
            [CANCEL_ORDER, REQUEST_RETURN],
            storage_retry=RETRY,
            clock=self.clock,
        )

    def context(
        self, user: int = OWNER, *, private: bool = True, turn: str = "t" * 32
    ) -> ToolContext:
        caller = Caller(key=user, chat_id=user if private else -100, private_chat=private)
        return ToolContext(caller=caller, shop=self.shop, turn_id=turn)

    async def propose(
        self, definition: ActionDefinition[Any], arguments: dict[str, Any], context: ToolContext
    ) -> ProposalResult:
        handler = ProposingHandler(
            definition, self.local, self.repo, expiry_s=900, lookups_per_hour=50, clock=self.clock
        )
        return await handler(definition.arguments_model.model_validate(arguments), context)

    async def card(self, order_id: str = "1001", user: int = OWNER, turn: str = "t" * 32) -> str:
        context = self.context(user, turn=turn)
        result = await self.propose(CANCEL_ORDER, {"order_id": order_id}, context)
        assert result.proposed, result
        [note] = [n for n in context.notes if isinstance(n, ActionProposed)]
        return note.operation_id

    async def press(
        self, op: str, *, user: int = OWNER, confirm: bool = True, update: int | None = None
    ):  # type: ignore[no-untyped-def]
        return await self.service.claim(
            op, chat_id=OWNER, user_id=user, update_id=update or next(self.updates), confirm=confirm
        )

    async def status(self, order_id: str) -> str:
        order = await self.shop.get_order(order_id)
        assert order is not None
        return order.status

    async def cancellations(self) -> int:
        row = await self.db.fetch_one("SELECT count(*) FROM order_cancellations")
        return int(row[0]) if row else 0


@pytest.fixture
def world(db: Database, shop: ShopRepository, clock: FakeClock) -> World:
    return World(db, shop, clock)


# -- proposing -------------------------------------------------------------------------


async def test_a_proposal_is_stored_pending_with_the_exact_effect_before_the_card(
    world: World,
) -> None:
    context = world.context()
    result = await world.propose(CANCEL_ORDER, {"order_id": "1001"}, context)
    assert result.proposed and result.found
    [note] = context.notes
    assert isinstance(note, ActionProposed)
    assert note.effect == {"ru": "Отменить заказ 1001?", "en": "Cancel order 1001?"}
    row = await world.repo.get(note.operation_id)
    assert row is not None and row.status is ActionStatus.PENDING and row.user_id == OWNER
    assert await world.status("1001") == "processing"  # nothing happened yet


async def test_someone_elses_order_gets_the_answer_of_a_missing_one_and_no_card(
    world: World,
) -> None:
    theirs, missing = world.context(), world.context()
    other = await world.propose(CANCEL_ORDER, {"order_id": "1004"}, theirs)
    absent = await world.propose(CANCEL_ORDER, {"order_id": "9999"}, missing)
    assert other.model_dump(exclude={"order_id"}) == absent.model_dump(exclude={"order_id"})
    assert not other.proposed and not other.found
    assert (
        [type(n) for n in theirs.notes] == [type(n) for n in missing.notes] == [OrderMissedNoPhone]
    )
    assert await world.db.fetch_all("SELECT 1 FROM pending_actions") == []


async def test_a_group_never_gets_a_card(world: World) -> None:
    context = world.context(private=False)
    result = await world.propose(CANCEL_ORDER, {"order_id": "1001"}, context)
    assert not result.proposed and result.ask_in_private_chat and context.notes == []


async def test_refusals_carry_a_reason_the_model_can_explain(world: World) -> None:
    shipped = await world.propose(CANCEL_ORDER, {"order_id": "1005"}, world.context())
    assert (shipped.found, shipped.proposed, shipped.refused) == (True, False, "not_cancellable")
    arguments = {"items": [{"name": "Наушники", "quantity": 1}], "reason": "не подошли"}
    late = await world.propose(REQUEST_RETURN, {"order_id": "1003", **arguments}, world.context())
    assert late.refused == "outside_return_window" and not late.proposed
    early = await world.propose(REQUEST_RETURN, {"order_id": "1001", **arguments}, world.context())
    assert early.refused == "not_delivered"
    unknown = {"items": [{"name": "Чайник", "quantity": 1}], "reason": "x"}
    nopolicy = await world.propose(REQUEST_RETURN, {"order_id": "1002", **unknown}, world.context())
    assert nopolicy.refused == "no_return_policy"
    assert await world.db.fetch_all("SELECT 1 FROM pending_actions") == []


async def test_a_return_inside_the_window_is_opened_once(world: World) -> None:
    context = world.context()
    arguments = {
        "order_id": "1002",
        "items": [{"name": "headphones", "quantity": 1}],
        "reason": "шумят",
    }
    assert (await world.propose(REQUEST_RETURN, arguments, context)).proposed
    [note] = context.notes
    assert isinstance(note, ActionProposed)
    claim = await world.press(note.operation_id)
    assert claim.kind is ClaimKind.PROCEED and claim.row is not None
    outcome = await world.service.carry_out(claim.row, recheck=True)
    assert outcome.kind is ResultKind.DONE and outcome.reference
    again = await world.service.carry_out(claim.row, recheck=False)  # a restart asks again
    assert again.reference == outcome.reference
    rows = await world.db.fetch_all("SELECT order_id, lines FROM order_returns")
    assert [(r[0], json.loads(r[1])) for r in rows] == [
        ("1002", [{"name": "headphones", "quantity": 1}])
    ]


# -- pressing ----------------------------------------------------------------------------


async def test_confirm_cancels_once_and_records_the_result_in_the_history(world: World) -> None:
    op = await world.card()
    claim = await world.press(op)
    assert claim.kind is ClaimKind.PROCEED and claim.row is not None
    outcome = await world.service.carry_out(claim.row, recheck=True)
    assert outcome.kind is ResultKind.DONE
    assert outcome.words == {"ru": "Заказ 1001 отменён.", "en": "Order 1001 is cancelled."}
    await world.service.record(claim.row, outcome, said="Отменить заказ 1001?\nЗаказ 1001 отменён.")
    assert await world.status("1001") == "cancelled"
    row = await world.repo.get(op)
    assert row is not None and row.status is ActionStatus.DONE
    history = await world.db.fetch_all(
        "SELECT role, content FROM messages WHERE turn_id = ?", (f"action:{op}",)
    )
    assert [tuple(h) for h in history] == [
        ("assistant", "Отменить заказ 1001?\nЗаказ 1001 отменён.")
    ]
    # a second press, another customer's press: nothing more
    assert (await world.press(op)).kind is ClaimKind.ALREADY
    assert (await world.press(op, user=STRANGER)).kind is ClaimKind.NOT_YOURS
    assert await world.cancellations() == 1


async def test_stats_count_the_questions_an_action_resolved(world: World) -> None:
    """/stats' "questions resolved by an action": turns whose proposal ended done; a turn
    that cancelled two orders is one question, a declined or failed one is none."""

    async def carried(op: str) -> None:
        claim = await world.press(op)
        assert claim.row is not None
        await world.service.record(
            claim.row, await world.service.carry_out(claim.row, recheck=True), said=""
        )

    both = [await world.card(n, turn="a" * 32) for n in ("1006", "1007")]
    for op in both:
        await carried(op)
    await world.press(await world.card("1001", turn="b" * 32), confirm=False)  # declined
    shipped = await world.card("1008", turn="c" * 32)
    await world.db.write("UPDATE orders SET status = 'in_transit' WHERE order_id = '1008'")
    await carried(shipped)  # failed: the order shipped meanwhile
    counts = await world.repo.counts(None, world.clock() + 1)
    assert (counts.proposed, counts.done, counts.declined, counts.failed) == (4, 2, 1, 1)
    assert counts.resolved_questions == 1
    await carried(await world.card("1001", turn="d" * 32))
    assert (await world.repo.counts(None, world.clock() + 1)).resolved_questions == 2


async def test_two_presses_at_once_let_exactly_one_through(world: World) -> None:
    op = await world.card()
    claims = await asyncio.gather(*(world.press(op) for _ in range(5)))
    assert sorted(c.kind for c in claims) == sorted([ClaimKind.PROCEED] + [ClaimKind.ALREADY] * 4)


async def test_two_instances_pressing_inside_the_database_let_exactly_one_through(
    world: World, db_backend: str, request: pytest.FixtureRequest
) -> None:
    """Two presses of one card, interleaved inside the database at every gap between the
    first press's statements (tests/unit/services/interleave.py): the second press runs
    until done or waiting on the first's lock, then the first goes on. One proceeds, the
    other is told it already happened, and the shop is asked once; a guard that reads the
    status and then updates without re-checking it lets both through at some gap.
    PostgreSQL: two instances, each with its own pool; SQLite: one process, one writer
    (a read-then-write inside one transaction is safe there: it runs alone)."""
    shop = UnknownFirst(world.local, lost=0)  # records the shop's calls

    def service(database: Database) -> ActionService:
        repo = ActionRepository(database, clock=world.clock)
        return ActionService(
            repo,
            shop,
            world.shop,
            [CANCEL_ORDER, REQUEST_RETURN],
            storage_retry=RETRY,
            clock=world.clock,
        )

    async with contextlib.AsyncExitStack() as stack:
        if db_backend == "postgres":
            url = request.getfixturevalue("pg_url")
            other: Database = await open_database(url)
            stack.push_async_callback(other.close)
            lock_waiter = await stack.enter_async_context(waiting_on_a_lock(url))
        else:
            other = world.db
        gaps = 0
        while True:
            # the same order each round, again processing (the last round cancelled it)
            await world.db.write("UPDATE orders SET status = 'processing' WHERE order_id = '1001'")
            op = await world.card()
            first = Interleaved(world.db, pause_after=gaps + 1)
            second = Interleaved(other)
            blocked = (
                lock_waiter if db_backend == "postgres" else behind_the_one_writer(first, second)
            )
            instances = (service(first), service(second))
            press_a, press_b = (
                functools.partial(
                    instance.claim,
                    op,
                    chat_id=OWNER,
                    user_id=OWNER,
                    update_id=next(world.updates),
                    confirm=True,
                )
                for instance in instances
            )
            raced = await race(press_a, press_b, first, blocked)
            if raced is None:
                break
            gaps += 1
            # each instance carries out what its press was let do
            for instance, claim in zip(instances, raced, strict=True):
                if claim.kind is ClaimKind.PROCEED and claim.row is not None:
                    await instance.carry_out(claim.row, recheck=claim.recheck)
            assert (sorted(c.kind for c in raced), shop.operation_ids.count(op)) == (
                [ClaimKind.ALREADY, ClaimKind.PROCEED],
                1,
            ), f"second press run after statement {gaps} of the first"
    assert gaps >= 2  # a press is at least a read and a conditional write


async def test_another_customers_press_changes_nothing(world: World) -> None:
    op = await world.card()
    assert (await world.press(op, user=STRANGER)).kind is ClaimKind.NOT_YOURS
    row = await world.repo.get(op)
    assert row is not None and row.status is ActionStatus.PENDING


async def test_decline(world: World) -> None:
    op = await world.card()
    claim = await world.press(op, confirm=False)
    assert claim.kind is ClaimKind.DECLINED and claim.row is not None
    await world.service.record(claim.row, Outcome(ResultKind.DECLINED), said="ok")
    assert (await world.press(op)).kind is ClaimKind.ALREADY
    assert await world.status("1001") == "processing"


async def test_an_expired_card_does_nothing(world: World) -> None:
    op = await world.card()
    world.clock.advance(901)
    assert (await world.press(op)).kind is ClaimKind.EXPIRED
    assert (await world.press(op)).kind is ClaimKind.EXPIRED
    assert await world.status("1001") == "processing"
    counts = await world.repo.counts(None, world.clock() + 1)
    assert (counts.proposed, counts.expired, counts.confirmed) == (1, 1, 0)


async def test_a_second_card_for_the_same_order_replaces_the_first(world: World) -> None:
    first = await world.card()
    second = await world.card()
    assert (await world.press(first)).kind is ClaimKind.EXPIRED
    assert (await world.press(second)).kind is ClaimKind.PROCEED


async def test_an_order_shipped_meanwhile_is_not_cancelled(world: World) -> None:
    op = await world.card()
    await world.db.write("UPDATE orders SET status = 'in_transit' WHERE order_id = '1001'")
    claim = await world.press(op)
    assert claim.row is not None
    outcome = await world.service.carry_out(claim.row, recheck=True)
    assert outcome.kind is ResultKind.STATE_CHANGED and outcome.reason == "state:not_cancellable"
    await world.service.record(claim.row, outcome, said="no")
    assert await world.status("1001") == "in_transit" and await world.cancellations() == 0
    row = await world.repo.get(op)
    assert row is not None and row.status is ActionStatus.FAILED


# -- crashes: the same press handled again --------------------------------------------


async def test_a_press_handled_again_after_a_crash_before_the_shop_was_asked(world: World) -> None:
    op = await world.card()
    first = await world.press(op, update=77)
    assert first.kind is ClaimKind.PROCEED  # ... and the process died here
    again = await world.press(op, update=77)
    assert again.kind is ClaimKind.PROCEED and again.recheck and again.row is not None
    assert (await world.service.carry_out(again.row, recheck=True)).kind is ResultKind.DONE
    assert await world.cancellations() == 1


async def test_a_press_handled_again_after_a_crash_after_the_shop_acted(world: World) -> None:
    op = await world.card()
    claim = await world.press(op, update=78)
    assert claim.row is not None
    assert (await world.service.carry_out(claim.row, recheck=True)).kind is ResultKind.DONE
    # died before the result was stored: the row is `executing`, the order cancelled
    again = await world.press(op, update=78)
    assert again.kind is ClaimKind.PROCEED and not again.recheck and again.row is not None
    outcome = await world.service.carry_out(again.row, recheck=False)
    assert outcome.kind is ResultKind.DONE  # the same operation id: done, not twice
    await world.service.record(again.row, outcome, said="done")
    assert await world.cancellations() == 1
    finished = await world.press(op, update=78)  # died after storing the result
    assert finished.kind is ClaimKind.FINISHED


class UnknownFirst:
    """A shop whose first answer to an action is lost (a timeout after sending)."""

    number_rule = FOUR_DIGITS

    def __init__(self, inner: DirectoryActions, lost: int) -> None:
        self.inner = inner
        self.lost = lost
        self.operation_ids: list[str] = []

    async def get_order(self, number: str) -> LiveOrder | None:
        return await self.inner.get_order(number)

    async def read_fresh(self, number: str) -> LiveOrder | None:
        return await self.inner.read_fresh(number)

    async def cancel_order(self, order: LiveOrder, operation_id: str) -> ActionResult:
        self.operation_ids.append(operation_id)
        result = await self.inner.cancel_order(order, operation_id)
        if self.lost:
            self.lost -= 1
            return ActionUnknown("timeout")
        return result

    async def request_return(
        self, order: LiveOrder, lines: Sequence[ReturnLine], reason: str, operation_id: str
    ) -> ActionResult:
        return await self.inner.request_return(order, lines, reason, operation_id)


async def test_an_unknown_outcome_is_asked_again_with_the_same_operation_id(world: World) -> None:
    op = await world.card()
    shop = UnknownFirst(world.local, lost=1)
    service = world.service_over(shop)
    claim = await service.claim(op, chat_id=OWNER, user_id=OWNER, update_id=5, confirm=True)
    assert claim.row is not None
    outcome = await service.carry_out(claim.row, recheck=True)
    assert outcome.kind is ResultKind.DONE
    assert shop.operation_ids == [op, op] and await world.cancellations() == 1


async def test_still_unknown_stays_executing(world: World) -> None:
    op = await world.card()
    service = world.service_over(UnknownFirst(world.local, lost=10))
    claim = await service.claim(op, chat_id=OWNER, user_id=OWNER, update_id=6, confirm=True)
    assert claim.row is not None
    outcome = await service.carry_out(claim.row, recheck=True)
    assert outcome.kind is ResultKind.CHECKING
    await service.record(claim.row, outcome, said="checking")
    row = await world.repo.get(op)
    assert row is not None and row.status is ActionStatus.EXECUTING and row.reason == "unknown"
    assert (await world.press(op, user=STRANGER)).kind is ClaimKind.NOT_YOURS
    assert isinstance(
        await world.local.cancel_order(await world.local.get_order("1001") or _never(), op),
        ActionDone,
    )
    assert await world.cancellations() == 1


def _never() -> LiveOrder:
    raise AssertionError("the order is there")


# -- a third action is one definition (the README's example, in small) ----------------


class HoldArguments(ActionArguments):
    days: int = Field(ge=1, le=14, description="How many days to hold it.")


class Holding:
    """A backend call of the shop's own (idempotent by operation id)."""

    def __init__(self) -> None:
        self.held: dict[str, tuple[str, int]] = {}

    async def hold(self, order: LiveOrder, days: int, operation_id: str) -> ActionResult:
        self.held.setdefault(operation_id, (order.number, days))
        return ActionDone(reference=f"H-{len(self.held)}")


HOLDING = Holding()


async def _may_hold(order: LiveOrder, _args: HoldArguments, _policy: Policy) -> Decision:
    return Allowed() if order.status.value == "processing" else Refused("too_late", "Shipped.")


HOLD_ORDER: ActionDefinition[HoldArguments] = ActionDefinition(
    name="hold_order",
    description="Propose holding an order for some days before shipping.",
    arguments_model=HoldArguments,
    check=_may_hold,
    effect=lambda o, a: {"ru": f"Придержать заказ {o.number} на {a.days} дн.?", "en": "Hold?"},
    done=lambda o, a, ref: {"ru": f"Заказ {o.number} придержан ({ref}).", "en": "Held."},
    execute=lambda _actions, o, a, op: HOLDING.hold(o, a.days, op),
)


async def test_a_third_action_is_one_definition(world: World) -> None:
    HOLDING.held.clear()
    context = world.context()
    result = await world.propose(HOLD_ORDER, {"order_id": "1001", "days": 3}, context)
    assert result.proposed
    [note] = context.notes
    assert (
        isinstance(note, ActionProposed) and note.effect["ru"] == "Придержать заказ 1001 на 3 дн.?"
    )
    service = ActionService(
        world.repo, world.local, world.shop, [HOLD_ORDER], storage_retry=RETRY, clock=world.clock
    )
    claim = await service.claim(
        note.operation_id, chat_id=OWNER, user_id=OWNER, update_id=9, confirm=True
    )
    assert claim.row is not None
    outcome = await service.carry_out(claim.row, recheck=True)
    assert outcome.kind is ResultKind.DONE and outcome.words == {
        "ru": "Заказ 1001 придержан (H-1).",
        "en": "Held.",
    }
    assert HOLDING.held[note.operation_id] == ("1001", 3)
    late = await world.propose(HOLD_ORDER, {"order_id": "1005", "days": 3}, world.context())
    assert late.refused == "too_late"


async def test_a_new_press_asks_the_shop_again_about_an_unknown_outcome_once(world: World) -> None:
    op = await world.card()
    shop = UnknownFirst(world.local, lost=UNKNOWN_ATTEMPTS)  # every ask of the first press
    service = world.service_over(shop)
    first = await service.claim(op, chat_id=OWNER, user_id=OWNER, update_id=7, confirm=True)
    assert first.row is not None
    checking = await service.carry_out(first.row, recheck=True)
    assert checking.kind is ResultKind.CHECKING
    await service.record(first.row, checking, said="checking")
    # two new presses at once: one asks again (same operation id), the other is told
    claims = await asyncio.gather(
        *(
            service.claim(op, chat_id=OWNER, user_id=OWNER, update_id=u, confirm=True)
            for u in (8, 9)
        )
    )
    [again] = [c for c in claims if c.kind is ClaimKind.PROCEED]
    assert not again.recheck and again.row is not None
    assert [c.kind for c in claims].count(ClaimKind.ALREADY) == 1
    outcome = await service.carry_out(again.row, recheck=False)
    assert outcome.kind is ResultKind.DONE
    assert set(shop.operation_ids) == {op} and await world.cancellations() == 1


async def test_the_demo_supports_both_actions(db: Database, clock: FakeClock) -> None:
    """SHOP_BACKEND=local with the demo: 5530 (processing) can be cancelled, headphones
    from 7718 (delivered three days ago, 7-day window) returned — by anyone (public)."""
    from tools.shop.demo import seed_demo_shop

    demo = ShopRepository(db)
    assert await seed_demo_shop(demo)
    world = World(db, demo, clock)
    cancel = await world.propose(CANCEL_ORDER, {"order_id": "5530"}, world.context(STRANGER))
    assert cancel.proposed
    give_back = {"order_id": "7718", "items": [{"name": "наушники", "quantity": 1}], "reason": "x"}
    assert (await world.propose(REQUEST_RETURN, give_back, world.context(STRANGER))).proposed
    shipped = await world.propose(CANCEL_ORDER, {"order_id": "8041"}, world.context(STRANGER))
    assert shipped.refused == "not_cancellable"


# -- one press path; any failure ends in a defined state --------------------------------


class Exploding(UnknownFirst):
    """A shop whose answer cannot be read in a way nobody planned for (deeply nested
    JSON: RecursionError) — on the re-check's read, or on the action's call."""

    def __init__(self, inner: DirectoryActions, *, on_read: bool) -> None:
        super().__init__(inner, lost=0)
        self.on_read = on_read

    async def read_fresh(self, number: str) -> LiveOrder | None:
        if self.on_read:
            raise RecursionError("maximum recursion depth exceeded")
        return await self.inner.read_fresh(number)

    async def cancel_order(self, order: LiveOrder, operation_id: str) -> ActionResult:
        self.operation_ids.append(operation_id)
        raise RecursionError("maximum recursion depth exceeded")


def _history(row: Any, outcome: Outcome) -> str:
    return f"{row.order_number}: {outcome.kind}"


async def test_a_failure_while_rechecking_ends_the_action_failed_and_told(world: World) -> None:
    op = await world.card()
    service = world.service_over(Exploding(world.local, on_read=True))
    press = await service.press(
        op, chat_id=OWNER, user_id=OWNER, update_id=31, confirm=True, history=_history
    )
    assert press.outcome is not None and press.outcome.kind is ResultKind.FAILED
    row = await world.repo.get(op)
    assert row is not None and row.status is ActionStatus.FAILED
    assert await world.status("1001") == "processing"
    # a second press is told the card was answered; nothing stays `confirmed`
    again = await service.press(
        op, chat_id=OWNER, user_id=OWNER, update_id=32, confirm=True, history=_history
    )
    assert again.kind is ClaimKind.ALREADY and again.outcome is None


async def test_a_failure_once_the_shop_was_asked_stays_unknown_and_is_asked_again(
    world: World,
) -> None:
    op = await world.card()
    shop = Exploding(world.local, on_read=False)
    press = await world.service_over(shop).press(
        op, chat_id=OWNER, user_id=OWNER, update_id=33, confirm=True, history=_history
    )
    assert press.outcome is not None and press.outcome.kind is ResultKind.CHECKING
    row = await world.repo.get(op)
    assert row is not None and (row.status, row.reason) == (ActionStatus.EXECUTING, "unknown")
    # the next ✅ asks again with the same operation id, and this time the shop answers
    again = await world.service.press(
        op, chat_id=OWNER, user_id=OWNER, update_id=34, confirm=True, history=_history
    )
    assert again.outcome is not None and again.outcome.kind is ResultKind.DONE
    assert await world.status("1001") == "cancelled" and await world.cancellations() == 1
    history = await world.db.fetch_all(
        "SELECT content FROM messages WHERE turn_id = ?", (f"action:{op}",)
    )
    assert [h[0] for h in history] == ["1001: done"]


# -- unknown outcomes end: the sweeper ---------------------------------------------------


def _sweeping(world: World, backend: Any, attempts: int = 3) -> ActionService:
    return ActionService(
        world.repo,
        backend,
        world.shop,
        [CANCEL_ORDER, REQUEST_RETURN],
        storage_retry=RETRY,
        sweep=Sweep(quiet_for_s=60, first_wait_s=30, attempts=attempts),
        clock=world.clock,
    )


async def test_an_outcome_that_stays_unknown_ends_needing_attention_once(world: World) -> None:
    """A shop that never answers: the press leaves the action unknown; the sweeper asks
    again with the same operation id, at most `attempts` times, then the action needs a
    person — reported once, counted, and a later press is told it was answered."""
    op = await world.card()
    shop = UnknownFirst(world.local, lost=10_000)
    service = _sweeping(world, shop)
    press = await service.press(
        op, chat_id=OWNER, user_id=OWNER, update_id=41, confirm=True, history=_history
    )
    assert press.outcome is not None and press.outcome.kind is ResultKind.CHECKING
    assert await service.sweep(_history) == []  # not quiet long enough yet
    ended: list[Any] = []
    for _ in range(20):  # well past the bound
        world.clock.advance(1000)
        ended += await service.sweep(_history)
    [attention] = ended
    assert attention.outcome.kind is ResultKind.NEEDS_ATTENTION
    assert attention.outcome.detail == "timeout"
    assert set(shop.operation_ids) == {op}
    assert len(shop.operation_ids) == UNKNOWN_ATTEMPTS * (1 + 3)  # the press, 3 sweeps
    row = await world.repo.get(op)
    assert row is not None and row.status is ActionStatus.NEEDS_ATTENTION
    assert row.last_answer == "timeout"
    assert [r.operation_id for r in await service.needing_attention()] == [op]
    assert (await world.repo.counts(None, world.clock() + 1)).needs_attention == 1
    later = await service.press(
        op, chat_id=OWNER, user_id=OWNER, update_id=42, confirm=True, history=_history
    )
    assert later.kind is ClaimKind.ALREADY and later.outcome is None


async def test_a_press_that_died_before_the_shop_was_asked_is_carried_out_once(
    world: World,
) -> None:
    op = await world.card()
    claim = await world.press(op, update=43)  # confirmed ... and the process died
    assert claim.kind is ClaimKind.PROCEED
    service = _sweeping(world, world.local)
    world.clock.advance(61)
    ended = await asyncio.gather(service.sweep(_history), service.sweep(_history))
    [done] = [p for batch in ended for p in batch]
    assert done.outcome is not None and done.outcome.kind is ResultKind.DONE
    assert await world.cancellations() == 1 and await world.status("1001") == "cancelled"
    world.clock.advance(1000)
    assert await service.sweep(_history) == []


# -- the owner is re-checked at ✅ with the proposal's rule ------------------------------


async def test_an_order_moved_to_another_customer_is_not_cancelled_by_the_old_card(
    world: World,
) -> None:
    op = await world.card()
    await world.db.write(
        "UPDATE orders SET owner_telegram_id = ? WHERE order_id = '1001'", (STRANGER,)
    )
    press = await world.service.press(
        op, chat_id=OWNER, user_id=OWNER, update_id=51, confirm=True, history=_history
    )
    assert press.outcome is not None and press.outcome.kind is ResultKind.STATE_CHANGED
    assert await world.status("1001") == "processing" and await world.cancellations() == 0


async def test_a_customer_who_forgot_their_phone_cannot_cancel_by_it(world: World) -> None:
    """Owned through the verified phone at proposal; /forget_phone before the ✅."""
    phone = "+79990001122"
    await world.db.write(
        "UPDATE orders SET owner_telegram_id = NULL, owner_phone = ? WHERE order_id = '1001'",
        (phone,),
    )
    await world.shop.set_verified_phone(OWNER, phone, now=world.clock())
    op = await world.card()
    assert await world.shop.delete_verified_phone(OWNER)
    press = await world.service.press(
        op, chat_id=OWNER, user_id=OWNER, update_id=52, confirm=True, history=_history
    )
    assert press.outcome is not None and press.outcome.kind is ResultKind.STATE_CHANGED
    assert await world.status("1001") == "processing" and await world.cancellations() == 0


# -- returns exactly once across proposals ----------------------------------------------

HEADPHONES = {"order_id": "1002", "items": [{"name": "headphones", "quantity": 1}], "reason": "x"}


async def test_a_return_left_unknown_is_not_opened_again_by_a_new_card(world: World) -> None:
    """After an unknown outcome the customer asks again: the new proposal sees the item
    already being returned (the local backend's orders list no items: any second return
    of the product is refused), so the shop never gets a second return."""
    context = world.context()
    assert (await world.propose(REQUEST_RETURN, HEADPHONES, context)).proposed
    [note] = [n for n in context.notes if isinstance(n, ActionProposed)]
    service = world.service_over(UnknownLocalReturn(world.local))
    press = await service.press(
        note.operation_id,
        chat_id=OWNER,
        user_id=OWNER,
        update_id=61,
        confirm=True,
        history=_history,
    )
    assert press.outcome is not None and press.outcome.kind is ResultKind.CHECKING
    again = await world.propose(REQUEST_RETURN, HEADPHONES, world.context())
    assert (again.proposed, again.refused) == (False, "already_returning")


async def test_a_second_card_for_the_same_item_is_refused_at_its_press(world: World) -> None:
    """Two cards for one item (the second proposed before the first was confirmed, e.g.
    a public order): the second ✅ finds the item already returned and does nothing."""
    first, second = world.context(), world.context(STRANGER)
    await world.db.write("UPDATE orders SET owner_telegram_id = NULL WHERE order_id = '1002'")
    assert (await world.propose(REQUEST_RETURN, HEADPHONES, first)).proposed
    assert (await world.propose(REQUEST_RETURN, HEADPHONES, second)).proposed
    ops = [
        n.operation_id for c in (first, second) for n in c.notes if isinstance(n, ActionProposed)
    ]
    done = await world.service.press(
        ops[0], chat_id=OWNER, user_id=OWNER, update_id=62, confirm=True, history=_history
    )
    assert done.outcome is not None and done.outcome.kind is ResultKind.DONE
    late = await world.service.press(
        ops[1], chat_id=STRANGER, user_id=STRANGER, update_id=63, confirm=True, history=_history
    )
    assert late.outcome is not None and late.outcome.kind is ResultKind.STATE_CHANGED
    assert late.outcome.reason == "state:already_returning"
    rows = await world.db.fetch_all("SELECT count(*) FROM order_returns")
    assert rows[0][0] == 1


async def test_what_is_already_being_returned_is_subtracted_from_the_order(
    world: World,
) -> None:
    from tools.actions.builtin import ReturnArguments, being_returned
    from tools.shop.orders import OrderItem
    from tools.shop.rules import OrderStatus

    now = datetime.fromtimestamp(world.clock(), UTC)
    order = LiveOrder(
        number="1002",
        status=OrderStatus.DELIVERED,
        updated_at=now - timedelta(days=1),
        items=(OrderItem("Наушники", 2),),
    )
    earlier = ReturnArguments.model_validate(
        {"order_id": "1002", "items": [{"name": "наушники", "quantity": 1}], "reason": "x"}
    ).model_dump_json()

    async def returning(_order: str) -> dict[str, int]:
        return being_returned([earlier])

    policy = Policy(shop=world.shop, now=now, returning=returning)

    def wanting(quantity: int) -> ReturnArguments:
        return ReturnArguments.model_validate(
            {
                "order_id": "1002",
                "items": [{"name": "Наушники", "quantity": quantity}],
                "reason": "y",
            }
        )

    assert isinstance(await REQUEST_RETURN.check(order, wanting(1), policy), Allowed)
    refused = await REQUEST_RETURN.check(order, wanting(2), policy)
    assert isinstance(refused, Refused) and refused.code == "already_returning"


class UnknownLocalReturn(UnknownFirst):
    """A shop whose answers to returns are all lost (after it opened one)."""

    def __init__(self, inner: DirectoryActions) -> None:
        super().__init__(inner, lost=0)

    async def request_return(
        self, order: LiveOrder, lines: Sequence[ReturnLine], reason: str, operation_id: str
    ) -> ActionResult:
        await self.inner.request_return(order, lines, reason, operation_id)
        return ActionUnknown("timeout")


# -- smaller ones ------------------------------------------------------------------------


def test_a_huge_total_is_written_on_the_card_not_a_failure() -> None:
    from decimal import Decimal

    from tools.actions.builtin import CancelArguments
    from tools.shop.orders import Money
    from tools.shop.rules import OrderStatus

    def effect(amount: str) -> str:
        order = LiveOrder(
            number="1001",
            status=OrderStatus.PROCESSING,
            updated_at=datetime.now(UTC),
            total=Money(Decimal(amount), "RUB"),
        )
        return CANCEL_ORDER.effect(order, CancelArguments(order_id="1001"))["en"]

    nbsp = "\u00a0"
    thousands = nbsp.join(["10"] + ["000"] * 9)
    assert effect("1e28") == f"Cancel order 1001: {thousands}{nbsp}₽?"
    assert effect("1E+100000") == "Cancel order 1001?"  # beyond any real total: not shown


async def test_one_proposal_per_reply_so_no_card_is_stranded(world: World) -> None:
    context = world.context()
    first = await world.propose(CANCEL_ORDER, {"order_id": "1001"}, context)
    second = await world.propose(CANCEL_ORDER, {"order_id": "1006"}, context)
    assert first.proposed and (second.proposed, second.refused) == (False, "one_at_a_time")
    assert [type(n) for n in context.notes] == [ActionProposed]
    rows = await world.db.fetch_all("SELECT order_number FROM pending_actions")
    assert [r[0] for r in rows] == ["1001"]


async def test_a_press_from_another_chat_is_not_yours_and_changes_nothing(world: World) -> None:
    op = await world.card()
    claim = await world.service.claim(
        op, chat_id=-100123, user_id=OWNER, update_id=71, confirm=True
    )
    assert claim.kind is ClaimKind.NOT_YOURS
    row = await world.repo.get(op)
    assert row is not None and row.status is ActionStatus.PENDING


# -- the local backend: a request to the shop's people -----------------------------------

ADMIN, OTHER_ADMIN = 900, 901


def requests_service(world: World) -> ActionService:
    """SHOP_BACKEND=local as the bot runs it: a ✅ opens a request; a person's Done
    changes the bot's copy (`people`)."""
    return ActionService(
        world.repo,
        DirectoryActions(
            local_directory(LocalBackend(world.shop)), LocalRequestActions(world.repo)
        ),
        world.shop,
        [CANCEL_ORDER, REQUEST_RETURN],
        storage_retry=RETRY,
        clock=world.clock,
        people=world.local,
    )


def said(row: Any, outcome: Outcome) -> str:
    return f"{row.order_number}: {outcome.kind}"


async def requested(world: World, service: ActionService, order_id: str = "1001") -> str:
    op = await world.card(order_id)
    press = await service.press(
        op,
        chat_id=OWNER,
        user_id=OWNER,
        update_id=next(world.updates),
        confirm=True,
        history=said,
    )
    assert press.outcome is not None and press.outcome.kind is ResultKind.REQUESTED
    return op


async def test_a_confirmed_action_on_imported_data_is_a_request_nothing_changes(
    world: World,
) -> None:
    service = requests_service(world)
    op = await requested(world, service)
    assert await world.status("1001") == "processing"  # only a person's Done changes it
    row = await world.repo.get(op)
    assert row is not None and (row.status, row.reason) == (ActionStatus.EXECUTING, "requested")
    [request] = await service.open_requests()
    assert (request.operation_id, request.order_number) == (op, "1001")
    world.clock.advance(3600)
    assert await world.repo.stranded(quiet_for_s=0) == []  # the sweeper leaves it to people
    history = await world.db.fetch_all(
        "SELECT content FROM messages WHERE turn_id = ?", (f"action:{op}",)
    )
    assert [h[0] for h in history] == ["1001: requested"]


async def test_done_from_two_people_at_once_changes_the_order_and_tells_once(
    world: World,
) -> None:
    service = requests_service(world)
    op = await requested(world, service)
    answers = await asyncio.gather(
        *(
            service.answer(op, done=True, by=who, chat_id=who, history=said)
            for who in (ADMIN, OTHER_ADMIN, ADMIN)
        )
    )
    kinds = sorted(a.kind for a in answers)
    assert kinds == sorted([AnswerKind.DONE, AnswerKind.ALREADY, AnswerKind.ALREADY])
    [done] = [a for a in answers if a.kind is AnswerKind.DONE]
    assert done.outcome is not None and done.outcome.words is not None
    assert done.outcome.words["en"] == "Order 1001 is cancelled."
    assert await world.status("1001") == "cancelled"
    assert await world.cancellations() == 1
    row = await world.repo.get(op)
    assert row is not None and row.status is ActionStatus.DONE
    assert await service.open_requests() == []
    told = await world.db.fetch_all(
        "SELECT content FROM messages WHERE turn_id = ?", (f"action:{op}:answer",)
    )
    assert [t[0] for t in told] == ["1001: done"]
    # a Refuse after Done changes nothing
    late = await service.answer(op, done=False, by=OTHER_ADMIN, chat_id=OTHER_ADMIN, history=said)
    assert late.kind is AnswerKind.ALREADY


async def test_refuse_asks_the_reason_and_tells_the_customer_once(world: World) -> None:
    service = requests_service(world)
    op = await requested(world, service)
    asked = await service.answer(op, done=False, by=ADMIN, chat_id=ADMIN, history=said)
    assert asked.kind is AnswerKind.ASK_REASON
    # another person's message, or the same person's in another chat: not the reason
    assert (
        await service.refusal(user_id=OTHER_ADMIN, chat_id=OTHER_ADMIN, text="x", history=said)
        is None
    )
    assert await service.refusal(user_id=ADMIN, chat_id=-100, text="x", history=said) is None
    answer = await service.refusal(
        user_id=ADMIN, chat_id=ADMIN, text=" Already packed ", history=said
    )
    assert answer is not None and answer.kind is AnswerKind.REFUSED
    assert answer.outcome is not None and answer.outcome.refusal == "Already packed"
    assert await service.refusal(user_id=ADMIN, chat_id=ADMIN, text="again", history=said) is None
    assert await world.status("1001") == "processing"
    row = await world.repo.get(op)
    assert row is not None and (row.status, row.reason) == (ActionStatus.FAILED, "refused")
    done = await service.answer(op, done=True, by=OTHER_ADMIN, chat_id=OTHER_ADMIN, history=said)
    assert done.kind is AnswerKind.ALREADY and await world.status("1001") == "processing"


async def test_an_unanswered_request_is_escalated_once(world: World) -> None:
    service = requests_service(world)
    op = await requested(world, service)
    assert await service.due_requests(3600) == []
    world.clock.advance(3601)
    first = await asyncio.gather(service.due_requests(3600), service.due_requests(3600))
    assert sorted([r.operation_id for r in due] for due in first) == [[], [op]]  # one reminds
    assert await service.due_requests(3600) == []  # and only once
    assert [r.operation_id for r in await service.open_requests()] == [op]


async def test_a_refusal_cut_off_by_a_crash_is_finished_by_the_message_handled_again(
    world: World,
) -> None:
    """The refusal was stored, the process died before the customer's result: the
    admin's message, handled again from the inbox, records it once, with the first
    reason."""
    service = requests_service(world)
    op = await requested(world, service)
    await service.answer(op, done=False, by=ADMIN, chat_id=ADMIN, history=said)
    assert await world.repo.refuse(op, by=ADMIN, refusal="Out of stock")  # then the crash
    assert await service.awaits_reason(ADMIN, ADMIN)
    answer = await service.refusal(user_id=ADMIN, chat_id=ADMIN, text="again", history=said)
    assert answer is not None and answer.kind is AnswerKind.REFUSED
    assert answer.outcome is not None and answer.outcome.refusal == "Out of stock"
    assert not await service.awaits_reason(ADMIN, ADMIN)
    assert await service.refusal(user_id=ADMIN, chat_id=ADMIN, text="x", history=said) is None
    row = await world.repo.get(op)
    assert row is not None and row.status is ActionStatus.FAILED


async def test_a_message_about_an_action_in_an_owners_business_chat_goes_through_its_connection(
    world: World,
) -> None:
    """A staff answer (Done / Refuse) reaches a customer of the owner's business account
    through the connection: the action's chat is the chat's conversation id."""
    conversation = conversation_id("bc-1", 7502)
    await BusinessRepository(world.db).note_chat(conversation, "bc-1", 7502)
    op = await world.card()
    row = await world.repo.get(op)
    assert row is not None
    assert await world.service.address_of(row) == (OWNER, None)  # the bot's chat: itself
    business_row = dataclasses.replace(row, chat_id=conversation)
    assert await world.service.address_of(business_row) == (7502, "bc-1")
