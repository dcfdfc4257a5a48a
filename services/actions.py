"""Carrying out an action the customer confirmed — exactly once.

A proposed action is a row (storage/actions.py) written before its card was sent, with an
operation id. A press is a Telegram update, stored in the inbox before it is handled and
handled again after a crash until its reply is stored (bot/runtime/intake.py); the row remembers
which update pressed (`press_update`), so that update's handler, run again, resumes where
it stopped instead of being taken for a second press:

    pending --✅ (this press)--> confirmed --state re-checked--> executing --> done | failed
    pending --✖--> declined        pending --too old / replaced--> expired

- `claim`: who pressed and what the row says decide: another customer's press, a card
  already answered, an expired card change nothing; one conditional update lets exactly
  one ✅ through (two presses, two instances: one wins).
- `carry_out`: on a fresh confirmation the order is read again and the definition's
  check re-run (shipped meanwhile → nothing is done); then the backend is called with the
  operation id as its idempotency key. After a crash in `executing` the state is not
  re-checked (our own cancel would fail it): the backend is simply asked again with the
  same id, which never acts twice. An unknown outcome (`ActionUnknown`) is asked again
  with the same id; still unknown, the row stays `executing` (reason `unknown`), the card
  keeps its buttons and the customer is asked to press ✅ again later: that press asks
  the shop once more with the same id (`retake`: one press at a time).
- `record`: the result and its line in the chat's history, in one transaction.
- `press`: the one path of a press — claim → carry out → record — for the Telegram
  button (bot/telegram/routers/actions.py) and `simulate` alike. Whatever fails while the order is
  re-checked ends the action `failed` (nothing was done); whatever fails once the shop
  was asked leaves it `executing`/`unknown`, asked again with the same id (never a row
  stuck `confirmed` with nothing to move it on).

The log says who, which order, the decision, the operation id, the duration and the
result; never the customer's words (a return's reason).
"""

from __future__ import annotations

import json
import logging
import time
from collections.abc import Awaitable, Callable, Mapping, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from enum import StrEnum
from typing import Any

from storage.actions import (
    FINISHED,
    ActionCounts,
    ActionRepository,
    ActionRequest,
    ActionRow,
    ActionStatus,
    RequestStatus,
)
from storage.database import StorageRetry, StorageUnavailable
from storage.outgoing import Outgoing
from storage.shop import ShopRepository
from tools.actions.builtin import being_returned
from tools.actions.capabilities import ActionCapabilities
from tools.actions.definition import ActionDefinition, ActionShop, Allowed, Policy
from tools.actions.propose import may_act
from tools.base import Caller
from tools.shop.backend import (
    NOT_SUPPORTED,
    REQUEST_RETURN,
    ActionDone,
    ActionRejected,
    ActionRequested,
    ActionUnknown,
    ShopUnavailable,
)
from tools.shop.orders import LiveOrder
from tools.shop.rules import OrderStatus

log = logging.getLogger(__name__)

UNKNOWN_ATTEMPTS = 3  # ask the backend again this often (same operation id) when unknown


@dataclass(frozen=True, slots=True)
class Sweep:
    """How confirmed actions nobody moves on end: untouched for `quiet_for_s` (a press that
    died, an outcome that stayed unknown), the shop is asked again with the same operation
    id, `attempts` times at most, waiting `first_wait_s`, then twice as long each time;
    still unknown, the action needs a person's attention (at most
    quiet + first_wait × (2^attempts − 1) after the press, plus the asks themselves)."""

    quiet_for_s: float = 60.0
    first_wait_s: float = 30.0
    attempts: int = 5


class ClaimKind(StrEnum):
    NO_SUCH_CARD = "no_such_card"  # not an action of this chat, or no longer offered
    NOT_YOURS = "not_yours"  # the card was sent to someone else
    ALREADY = "already"  # answered before (by another press)
    EXPIRED = "expired"  # too old, or replaced by a newer card
    NOT_OFFERED = "not_offered"  # the action is off, or the shop no longer does it
    DECLINED = "declined"  # ✖ recorded now
    PROCEED = "proceed"  # ✅ recorded now (or resumed): carry it out
    FINISHED = "finished"  # this very press was handled before a crash: its result


@dataclass(frozen=True, slots=True)
class Claim:
    kind: ClaimKind
    row: ActionRow | None = None
    recheck: bool = True  # PROCEED: re-check the order's state first


class ResultKind(StrEnum):
    DONE = "done"
    STATE_CHANGED = "state_changed"  # on ✅ the order no longer allowed it
    FAILED = "failed"  # the shop refused, or could not be reached before acting
    CHECKING = "checking"  # unknown after asking again: still executing
    NEEDS_ATTENTION = "needs_attention"  # still unknown after the sweeper's asks: a person
    DECLINED = "declined"
    REQUESTED = "requested"  # sent to the shop's people, who answer Done or Refuse
    REFUSED = "refused"  # a person refused the request (`refusal`: their reason)


@dataclass(frozen=True, slots=True)
class Outcome:
    kind: ResultKind
    reason: str | None = None
    reference: str | None = None
    words: Mapping[str, str] | None = None  # DONE: the result's words per language
    detail: str | None = None  # CHECKING / NEEDS_ATTENTION: the shop's last answer (a code)
    refusal: str | None = None  # REFUSED: the person's reason, told to the customer


@dataclass(frozen=True, slots=True)
class Press:
    """What a press came to: the claim's kind, the row, and the outcome recorded (None:
    nothing was recorded — someone else's card, one already answered, expired, unknown)."""

    kind: ClaimKind
    row: ActionRow | None
    outcome: Outcome | None = None


class AnswerKind(StrEnum):
    DONE = "done"  # a person confirmed it done now: the customer is told
    REFUSED = "refused"  # a person refused it now, with the reason: the customer is told
    ASK_REASON = "ask_reason"  # Refuse pressed: the person's next message is the reason
    ALREADY = "already"  # answered before (another person, another press)
    NO_SUCH = "no_such"  # not a request the bot knows


@dataclass(frozen=True, slots=True)
class Answer:
    """What a person's answer to a request came to (`outcome`: what to tell the customer,
    only for the answer whose record won)."""

    kind: AnswerKind
    row: ActionRow | None = None
    outcome: Outcome | None = None


async def _nothing() -> None:
    return None


@dataclass(frozen=True, slots=True)
class PressSteps:
    """What the front end does on the way: `working` before the shop is asked (the
    press's note), `settled` once the card is answered (its buttons removed)."""

    working: Callable[[], Awaitable[None]] = _nothing
    settled: Callable[[], Awaitable[None]] = _nothing


QUIET = PressSteps()


def _words(stored: str) -> dict[str, str]:
    value = json.loads(stored)
    return {str(k): str(v) for k, v in value.items()} if isinstance(value, dict) else {}


def words_in(words: Mapping[str, str], language: str) -> str:
    return words.get(language) or next(iter(words.values()), "")


def outcome_of(row: ActionRow) -> Outcome:
    """A finished row's outcome (a press handled again after a crash reports it)."""
    if row.status is ActionStatus.DONE:
        return Outcome(ResultKind.DONE, reference=row.reference, words=_words(row.done_words))
    if row.status is ActionStatus.DECLINED:
        return Outcome(ResultKind.DECLINED)
    if row.status is ActionStatus.NEEDS_ATTENTION:
        return Outcome(ResultKind.NEEDS_ATTENTION, reason=row.reason, detail=row.last_answer)
    if row.reason and row.reason.startswith("state:"):
        return Outcome(ResultKind.STATE_CHANGED, reason=row.reason)
    return Outcome(ResultKind.FAILED, reason=row.reason)


class ActionService:
    def __init__(
        self,
        repo: ActionRepository,
        shop: ActionShop,
        policies: ShopRepository,
        definitions: Sequence[ActionDefinition[Any]],
        *,
        storage_retry: StorageRetry,
        capabilities: ActionCapabilities | None = None,
        sweep: Sweep = Sweep(),
        clock: Callable[[], float] = time.time,
        people: ActionShop | None = None,
    ) -> None:
        self._people = people  # the bot's copy a person's Done changes (local backend)
        self._sweep = sweep
        self._capabilities = capabilities
        self._repo = repo
        self._shop = shop
        self._policies = policies
        self._definitions = {d.name: d for d in definitions}
        self._retry = storage_retry
        self._clock = clock

    async def address_of(self, row: ActionRow) -> tuple[int, str | None]:
        """The customer's chat and, for a chat of the owner's business account, the
        connection a message to them goes through."""
        return await self._repo.address_of(row.chat_id)

    @property
    def names(self) -> tuple[str, ...]:
        return tuple(self._definitions)

    def offers(self, action: str) -> bool:
        """On (a definition) and, as far as the bot knows, done by the connected shop."""
        if action not in self._definitions:
            return False
        return self._capabilities is None or self._capabilities.supports(action)

    async def claim(
        self,
        operation_id: str,
        *,
        chat_id: int,
        user_id: int,
        update_id: int,
        confirm: bool,
        language: str | None = None,
    ) -> Claim:
        row = await self._retry.run("reading an action", lambda: self._repo.get(operation_id))
        if row is None:
            return Claim(ClaimKind.NO_SUCH_CARD)
        if row.chat_id != chat_id or row.user_id != user_id:  # another chat's, or person's
            return Claim(ClaimKind.NOT_YOURS, row)
        if row.press_update == update_id:  # this press, handled again after a crash
            if row.status in FINISHED:
                return Claim(ClaimKind.FINISHED, row)
            return Claim(ClaimKind.PROCEED, row, recheck=row.status is ActionStatus.CONFIRMED)
        return await self._claim_new(row, update_id=update_id, confirm=confirm, language=language)

    async def _claim_new(
        self, row: ActionRow, *, update_id: int, confirm: bool, language: str | None
    ) -> Claim:
        """A press the row has not seen yet, by the customer the card was sent to."""
        operation_id = row.operation_id
        if row.status is ActionStatus.EXPIRED:
            return Claim(ClaimKind.EXPIRED, row)
        if row.status is ActionStatus.EXECUTING and row.reason == "unknown" and confirm:
            # the shop's answer stayed unknown: a new ✅ asks it again, same operation id
            if await self._retake(row, update_id):
                return Claim(ClaimKind.PROCEED, row, recheck=False)
        if row.status is not ActionStatus.PENDING:
            return Claim(ClaimKind.ALREADY, row)
        if not self.offers(row.action):
            return await self._close(row, ClaimKind.NOT_OFFERED, reason="not_offered")
        if self._clock() >= row.expires_at:
            return await self._close(row, ClaimKind.EXPIRED, reason="timeout")
        target = ActionStatus.CONFIRMED if confirm else ActionStatus.DECLINED
        moved = await self._retry.run(
            "recording a press",
            lambda: self._repo.move(
                operation_id,
                from_=[ActionStatus.PENDING],
                to=target,
                press_update=update_id,
                language=language,
            ),
        )
        if not moved:
            return Claim(ClaimKind.ALREADY, row)
        if not confirm:
            self._log(row, "declined", 0.0)
            return Claim(ClaimKind.DECLINED, row)
        return Claim(ClaimKind.PROCEED, row, recheck=True)

    async def press(
        self,
        operation_id: str,
        *,
        chat_id: int,
        user_id: int,
        update_id: int,
        confirm: bool,
        history: Callable[[ActionRow, Outcome], str],
        steps: PressSteps = QUIET,
        language: str | None = None,
    ) -> Press:
        """One press, start to end: claim, carry out, record. `history` gives the line
        the chat's history keeps (the card's words and the result's, in the customer's
        language)."""
        claim = await self.claim(
            operation_id,
            chat_id=chat_id,
            user_id=user_id,
            update_id=update_id,
            confirm=confirm,
            language=language,
        )
        row = claim.row
        if row is None:
            return Press(claim.kind, None)
        if claim.kind is ClaimKind.PROCEED:
            await steps.working()
            outcome = await self.carry_out(row, recheck=claim.recheck)
            if outcome.kind is not ResultKind.CHECKING:  # unknown: ✅ stays to ask again
                await steps.settled()
        elif claim.kind is ClaimKind.DECLINED:
            outcome = Outcome(ResultKind.DECLINED)
            await steps.settled()
        elif claim.kind is ClaimKind.FINISHED:  # handled before a crash cut its reply off
            outcome = outcome_of(row)
        else:
            if claim.kind in (ClaimKind.EXPIRED, ClaimKind.NOT_OFFERED):
                await steps.settled()
            return Press(claim.kind, row)
        await self.record(row, outcome, said=history(row, outcome))
        return Press(claim.kind, row, outcome)

    async def _retake(self, row: ActionRow, update_id: int) -> bool:
        return await self._retry.run(
            "retaking an action",
            lambda: self._repo.retake(
                row.operation_id, old_press=row.press_update, new_press=update_id
            ),
        )

    async def _close(self, row: ActionRow, kind: ClaimKind, *, reason: str) -> Claim:
        """A pending card that can no longer be confirmed: expired, with the reason."""
        await self._retry.run(
            "expiring an action",
            lambda: self._repo.move(
                row.operation_id,
                from_=[ActionStatus.PENDING],
                to=ActionStatus.EXPIRED,
                reason=reason,
            ),
        )
        self._log(row, kind.value, 0.0)
        return Claim(kind, row)

    async def carry_out(self, row: ActionRow, *, recheck: bool) -> Outcome:
        """Re-check (a fresh confirmation), then execute with the operation id. Nothing
        is stored here but the move to `executing` (see `record`)."""
        started = time.perf_counter()
        asked = [not recheck]  # set once the shop may have been asked
        try:
            outcome = await self._carry_out(row, recheck=recheck, asked=asked)
        except StorageUnavailable:
            raise  # the press stays pending in the inbox and is handled again
        except Exception as exc:
            log.error(
                "action %s op %s: carrying out failed unexpectedly (%s)",
                row.action,
                row.operation_id,
                type(exc).__name__,
            )
            log.debug("the failure", exc_info=True)
            outcome = (
                Outcome(ResultKind.CHECKING, reason="unknown", detail=type(exc).__name__)
                if asked[0]
                else Outcome(ResultKind.FAILED, reason="error")
            )
        self._log(row, outcome.kind.value, (time.perf_counter() - started) * 1000, outcome.reason)
        return outcome

    async def _carry_out(self, row: ActionRow, *, recheck: bool, asked: list[bool]) -> Outcome:
        definition = self._definitions.get(row.action)
        if definition is None:  # switched off (ACTIONS_ENABLED) since it was proposed
            if recheck:  # never asked the shop: nothing was done
                return Outcome(ResultKind.FAILED, reason="action_off")
            # the shop may have done it and the bot may no longer ask: a person checks
            return Outcome(
                ResultKind.NEEDS_ATTENTION, reason="needs_attention", detail="action switched off"
            )
        arguments = definition.arguments_model.model_validate_json(row.arguments)
        try:
            order = await self._shop.read_fresh(row.order_number)
        except ShopUnavailable:
            if recheck:  # nothing was done yet
                return Outcome(ResultKind.FAILED, reason="unavailable")
            order = None
        if recheck:
            refused = await self._recheck(definition, row, order, arguments)
            if refused is not None:
                return refused
            await self._retry.run(
                "starting an action",
                lambda: self._repo.move(
                    row.operation_id, from_=[ActionStatus.CONFIRMED], to=ActionStatus.EXECUTING
                ),
            )
        target = order or LiveOrder(
            number=row.order_number,
            status=OrderStatus.PROCESSING,
            updated_at=datetime.fromtimestamp(row.created_at, UTC),
        )
        asked[0] = True
        return await self._execute(definition, row, target, arguments)

    async def _recheck(
        self,
        definition: ActionDefinition[Any],
        row: ActionRow,
        order: LiveOrder | None,
        arguments: Any,
    ) -> Outcome | None:
        """On a fresh confirmation: may it still happen to this order, for this customer
        (the proposal's own rule: `may_act`, the verified phone read again — an order moved
        to someone else, or a phone forgotten since, acts on nothing)? None: yes."""
        if order is None:
            return Outcome(ResultKind.STATE_CHANGED, reason="state:order_missing")
        phone = await self._retry.run(
            "reading a verified phone", lambda: self._policies.get_verified_phone(row.user_id)
        )
        presser = Caller(key=row.user_id, chat_id=row.chat_id, private_chat=True)
        if not may_act(order, presser, phone):  # told as a missing order is: no detail
            return Outcome(ResultKind.STATE_CHANGED, reason="state:order_missing")

        async def returning(number: str) -> Mapping[str, int]:
            confirmed = await self._retry.run(
                "reading an order's returns",
                lambda: self._repo.confirmed_arguments(
                    number, REQUEST_RETURN, excluding=row.operation_id
                ),
            )
            return being_returned(confirmed)

        policy = Policy(
            shop=self._policies,
            now=datetime.fromtimestamp(self._clock(), UTC),
            returning=returning,
        )
        decision = await definition.check(order, arguments, policy)
        if not isinstance(decision, Allowed):
            return Outcome(ResultKind.STATE_CHANGED, reason=f"state:{decision.code}")
        return None

    async def _execute(
        self,
        definition: ActionDefinition[Any],
        row: ActionRow,
        target: LiveOrder,
        arguments: Any,
    ) -> Outcome:
        """The backend call with the operation id; an unknown outcome asked again."""
        last = None
        for _attempt in range(UNKNOWN_ATTEMPTS):
            try:
                result = await definition.execute(self._shop, target, arguments, row.operation_id)
            except ShopUnavailable as exc:
                last = str(exc)[:200]
                continue  # may or may not have reached the shop: ask again, same id
            if isinstance(result, ActionRequested):
                return Outcome(ResultKind.REQUESTED)
            if isinstance(result, ActionUnknown):
                last = result.detail[:200] or "unknown"
            if isinstance(result, ActionDone):
                words = definition.done(target, arguments, result.reference)
                return Outcome(ResultKind.DONE, reference=result.reference, words=words)
            if isinstance(result, ActionRejected):
                if result.reason == NOT_SUPPORTED and self._capabilities is not None:
                    self._capabilities.withdraw(row.action)
                return Outcome(ResultKind.FAILED, reason=result.reason)
        return Outcome(ResultKind.CHECKING, reason="unknown", detail=last)

    async def record(
        self,
        row: ActionRow,
        outcome: Outcome,
        *,
        said: str,
        history_key: str = "",
        tell: Sequence[Outgoing] = (),
    ) -> bool:
        """The outcome, `said` (the customer's result message, after the card's words)
        in the chat's history and `tell` (messages about it, stored to be sent: the
        durable outbox) in one transaction; CHECKING stays `executing` (the shop's last
        answer noted). False: another press or sweeper recorded it first."""
        if outcome.kind is ResultKind.CHECKING:
            await self._retry.run(
                "noting an unknown outcome",
                lambda: self._repo.note_unknown(row.operation_id, outcome.detail),
            )
            return False
        if outcome.kind is ResultKind.REQUESTED:
            return await self._retry.run(
                "recording a request to people",
                lambda: self._repo.await_person(
                    row.operation_id, history=(row.chat_id, said), tell=tell
                ),
            )
        status = {
            ResultKind.DONE: ActionStatus.DONE,
            ResultKind.DECLINED: ActionStatus.DECLINED,
            ResultKind.NEEDS_ATTENTION: ActionStatus.NEEDS_ATTENTION,
        }.get(outcome.kind, ActionStatus.FAILED)
        done_words = json.dumps(dict(outcome.words), ensure_ascii=False) if outcome.words else None
        return await self._retry.run(
            "recording an action's result",
            lambda: self._repo.finish(
                row.operation_id,
                status=status,  # type: ignore[arg-type]
                reason=outcome.reason,
                reference=outcome.reference,
                done_words=done_words,
                history=(row.chat_id, said),
                last_answer=outcome.detail,
                history_key=history_key,
                tell=tell,
            ),
        )

    async def answer(
        self,
        operation_id: str,
        *,
        done: bool,
        by: int,
        chat_id: int,
        history: Callable[[ActionRow, Outcome], str],
    ) -> Answer:
        """A person's Done or Refuse on a request (the caller checked they may answer).
        Done: one conditional update wins; the bot's copy follows and the customer's
        result is recorded once (a second Done, or a Done after a crash, records
        nothing new). Refuse: the person is asked the reason (`refusal`)."""
        request = await self._retry.run(
            "reading a request", lambda: self._repo.request(operation_id)
        )
        row = await self._retry.run("reading an action", lambda: self._repo.get(operation_id))
        if request is None or row is None:
            return Answer(AnswerKind.NO_SUCH)
        if not done:
            asked = await self._retry.run(
                "refusing a request",
                lambda: self._repo.start_refusing(operation_id, by=by, chat_id=chat_id),
            )
            return Answer(AnswerKind.ASK_REASON if asked else AnswerKind.ALREADY, row)
        await self._retry.run(
            "confirming a request", lambda: self._repo.answer_done(operation_id, by=by)
        )
        request = await self._retry.run(
            "reading a request", lambda: self._repo.request(operation_id)
        )
        if request is None or request.status is not RequestStatus.DONE:
            return Answer(AnswerKind.ALREADY, row)
        if row.status is not ActionStatus.EXECUTING:
            return Answer(AnswerKind.ALREADY, row)
        outcome = await self._confirmed(row)
        self._log(row, f"done, confirmed by {by}", 0.0)
        if await self.record(row, outcome, said=history(row, outcome), history_key=":answer"):
            return Answer(AnswerKind.DONE, row, outcome)
        return Answer(AnswerKind.ALREADY, row)

    async def refusal(
        self,
        *,
        user_id: int,
        chat_id: int,
        text: str,
        history: Callable[[ActionRow, Outcome], str],
    ) -> Answer | None:
        """A message from a person asked for a refusal's reason: the refusal, recorded
        once. None: this person is asked no reason here (the message is not one)."""
        request = await self._retry.run(
            "reading a refusal", lambda: self._repo.refusing_of(user_id, chat_id)
        )
        if request is None:
            return None
        row = await self._retry.run(
            "reading an action", lambda: self._repo.get(request.operation_id)
        )
        reason = text.strip()[:500]
        if request.status is RequestStatus.REFUSED:  # refused before a crash, not recorded
            reason = request.refusal or reason
        else:
            refused = await self._retry.run(
                "refusing a request",
                lambda: self._repo.refuse(request.operation_id, by=user_id, refusal=reason),
            )
            if not refused:
                return Answer(AnswerKind.ALREADY, row)
        if row is None or row.status is not ActionStatus.EXECUTING:
            return Answer(AnswerKind.ALREADY, row)
        outcome = Outcome(ResultKind.REFUSED, reason="refused", refusal=reason)
        self._log(row, f"refused by {user_id}", 0.0)
        if await self.record(row, outcome, said=history(row, outcome), history_key=":answer"):
            return Answer(AnswerKind.REFUSED, row, outcome)
        return Answer(AnswerKind.ALREADY, row)

    async def _confirmed(self, row: ActionRow) -> Outcome:
        """A person confirmed the request done in the shop: the customer hears it done
        (the person is the authority); the bot's copy of the order follows as well as
        it can (a failure there is logged, the result stands)."""
        fallback = Outcome(ResultKind.DONE, words=_words(row.done_words))
        definition = self._definitions.get(row.action)
        if definition is None or self._people is None:
            return fallback
        try:
            arguments = definition.arguments_model.model_validate_json(row.arguments)
            order = await self._people.read_fresh(row.order_number)
            target = order or LiveOrder(
                number=row.order_number,
                status=OrderStatus.PROCESSING,
                updated_at=datetime.fromtimestamp(row.created_at, UTC),
            )
            result = await definition.execute(self._people, target, arguments, row.operation_id)
        except StorageUnavailable:
            raise
        except Exception as exc:
            log.warning(
                "action op %s: the bot's copy did not follow a person's Done (%s)",
                row.operation_id,
                type(exc).__name__,
            )
            return fallback
        if isinstance(result, ActionDone):
            words = definition.done(target, arguments, result.reference)
            return Outcome(ResultKind.DONE, reference=result.reference, words=words)
        log.warning(
            "action op %s: the bot's copy did not follow a person's Done (%s)",
            row.operation_id,
            type(result).__name__,
        )
        return fallback

    async def awaits_reason(self, user_id: int, chat_id: int) -> bool:
        """This person pressed Refuse in this chat and has not written the reason yet."""
        request = await self._retry.run(
            "reading a refusal", lambda: self._repo.refusing_of(user_id, chat_id)
        )
        return request is not None

    async def due_requests(
        self,
        older_than_s: float,
        tell: Callable[[ActionRequest], Sequence[Outgoing]] = lambda _request: (),
    ) -> list[ActionRequest]:
        """Requests nobody answered within `older_than_s`, each returned once, its
        reminders (`tell`) stored to be sent in the same transaction."""
        return await self._retry.run(
            "reading unanswered requests",
            lambda: self._repo.escalate(older_than_s=older_than_s, tell=tell),
        )

    async def open_requests(self) -> list[ActionRequest]:
        return await self._repo.open_requests()

    async def sweep(
        self,
        history: Callable[[ActionRow, Outcome], str],
        tell: Callable[[ActionRow, Outcome], Sequence[Outgoing]] = lambda _row, _outcome: (),
    ) -> list[Press]:
        """Move on every confirmed action nobody has moved on (`Sweep`): ask the shop
        again with the same operation id; a result is recorded like a press's (`history`:
        its line); still unknown after the last ask, it needs a person's attention. What
        tells of an ended action (`tell`: to the customer and, needing attention, the
        shop's people) is stored with its record, once — only the sweeper whose record
        won — and sent from the durable outbox. Returns the actions that ended now."""
        stranded = await self._retry.run(
            "reading stranded actions",
            lambda: self._repo.stranded(quiet_for_s=self._sweep.quiet_for_s),
        )
        ended: list[Press] = []
        for row in stranded:
            outcome = await self._ask_again(row)
            if outcome is None:
                continue
            if outcome.kind is ResultKind.CHECKING:
                if row.attempts + 1 < self._sweep.attempts:
                    await self.record(row, outcome, said="")  # asked again later
                    continue
                outcome = Outcome(
                    ResultKind.NEEDS_ATTENTION, reason="needs_attention", detail=outcome.detail
                )
                self._log(row, "needs attention", 0.0, outcome.detail)
            said = history(row, outcome)
            if await self.record(row, outcome, said=said, tell=tell(row, outcome)):
                ended.append(Press(ClaimKind.PROCEED, row, outcome))
        return ended

    async def _ask_again(self, row: ActionRow) -> Outcome | None:
        """One more ask for a stranded action, if this sweeper takes it (None: another
        did). A `confirmed` one was never asked: its order is re-checked first."""
        wait = self._sweep.first_wait_s * 2**row.attempts
        taken = await self._retry.run(
            "taking a stranded action",
            lambda: self._repo.take_for_retry(row, next_try_at=self._clock() + wait),
        )
        if not taken:
            return None
        return await self.carry_out(row, recheck=row.status is ActionStatus.CONFIRMED)

    async def needing_attention(self) -> list[ActionRow]:
        return await self._repo.needing_attention()

    async def counts(self, since: float | None, until: float) -> ActionCounts:
        return await self._repo.counts(since, until)

    @staticmethod
    def card_words(row: ActionRow, language: str) -> str:
        return words_in(_words(row.effect), language)

    @staticmethod
    def _log(row: ActionRow, result: str, duration_ms: float, reason: str | None = None) -> None:
        log.info(
            "action %s op %s by user %s on order %s: %s%s (%.0f ms)",
            row.action,
            row.operation_id,
            row.user_id,
            row.order_number,
            result,
            f" ({reason})" if reason else "",
            duration_ms,
        )
