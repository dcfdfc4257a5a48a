"""The engine: each scenario, on each model, `trials` times, on its own throwaway database.

A run opens a fresh SQLite file in a temporary folder (never the shop's database), loads
the shop — a copy of the owner's own data when the bot's database has it
(services/simulation/own_shop.py; a scenario's `shop = "own"`, the default), else the
demo — and the scenario's own data through the import path, stores the
customer's verified phone when the scenario has one, and has the bot (built by the
caller, `BotFactory`: the same wiring as the running bot) answer the customer's turns
as a private chat. Nothing reaches Telegram. A handoff ends the conversation: from then
on a person answers in the real bot. Whatever the model or the bot does — empty answers,
junk arguments, an exception — the run ends with a transcript and a verdict, and the
next run starts.

Actions: when a turn ends with an action's card and the scenario's customer
presses it (`on_action_card`), the press goes through the bot's own `ActionService` —
claim, carry out, record — as the ✅/✖ router does, never through Telegram; the result
message is the next exchange. The actions' rows are read back at the end.
"""

from __future__ import annotations

import asyncio
import logging
import shutil
import tempfile
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any, Literal, Protocol

from services.actions import ActionService, Outcome, ResultKind, words_in
from services.chat import ChatService
from services.llm.types import ChatModel
from services.loop_types import TurnReply
from services.offers import ConfirmAction, PersonWillAnswer
from services.simulation.customer import CustomerSimulator
from services.simulation.expectations import Failure, judge
from services.simulation.own_shop import OwnKnowledge, OwnShop
from services.simulation.scenario import Scenario, ScenarioSettings
from services.simulation.transcript import (
    ActionRecord,
    Exchange,
    RecordingModel,
    Transcript,
    tool_uses,
)
from storage.actions import ActionRepository, ActionRow
from storage.database import Database, open_database
from storage.shop import ShopRepository
from tools.base import Caller
from tools.knowledge.base import KnowledgeBase
from tools.knowledge.fetch import FetchLimits
from tools.knowledge.sync import KnowledgeSync
from tools.shop.demo import DEMO_FAQ, DEMO_PRODUCTS, DEMO_RETURN_POLICIES, demo_orders
from tools.shop.import_document import plan_import
from tools.shop.orders import FOUR_DIGITS, OrderNumberRule

log = logging.getLogger(__name__)


@dataclass(frozen=True, slots=True)
class SimulatedBot:
    """The bot's chat service and, with actions on, the service the card's ✅/✖ uses;
    with the knowledge feature on, the knowledge its `search_knowledge` reads."""

    chat: ChatService
    actions: ActionService | None = None
    knowledge: KnowledgeBase | None = None


async def add_own_knowledge(bot: SimulatedBot, own: OwnKnowledge | None) -> None:
    """The owner's pages, files and own answers into the run's (throwaway) knowledge, as
    the bot has them (their vectors too when the run's embedder made them); with the
    knowledge feature off the bot does not search them, and neither does the run."""
    if bot.knowledge is None or own is None or not own.sources:
        return
    await bot.knowledge.copy_in(own.sources, own.index)


async def add_knowledge(bot: SimulatedBot, scenario: Scenario) -> None:
    """The scenario's pages and files into the run's (throwaway) knowledge; a file that
    cannot be added stops the run with its one line."""
    wanted = scenario.knowledge
    if wanted is None or not (wanted.pages or wanted.files):
        return
    if bot.knowledge is None:
        raise RuntimeError("the scenario brings knowledge, but the knowledge feature is off")
    for page in wanted.pages:
        await bot.knowledge.add_entry(page.title, page.text, url=page.url)
    folder = Path(scenario.source).parent if scenario.source else Path.cwd()
    sync = KnowledgeSync(bot.knowledge, FetchLimits())
    for name in wanted.files:
        report = await sync.add(str(folder / name))
        if report.error is not None:
            raise RuntimeError(f"knowledge file {name}: {report.error}")


class BotFactory(Protocol):
    """Builds the bot over `db` and `model`, as the running bot wires it."""

    def __call__(
        self, db: Database, model: ChatModel, settings: ScenarioSettings
    ) -> SimulatedBot: ...


def plain_result_words(outcome: Outcome, language: str) -> str:
    """A press's result words without the bot's text table (the bot passes its own)."""
    if outcome.words:
        return words_in(outcome.words, language)
    return f"({outcome.kind.value})"


# a model whose endpoint answered no call in this many runs in a row is not run further
SILENT_RUNS = 3
STOPPED = "the run was stopped after"


def _unanswered(transcript: Transcript) -> bool:
    """The model answered nothing in this run: stopped by a time bound before any
    answer, or every model call failed (a timeout, a refused connection)."""
    calls = transcript.model_calls
    if calls:
        return all(call.error is not None for call in calls)
    return transcript.crash is not None and transcript.crash.startswith(STOPPED)


# the press's update ids: far from any real one, one per press of a run
_PRESS_UPDATE_BASE = 10**15


@dataclass(frozen=True, slots=True)
class ModelTarget:
    label: str  # as the table names it (the model's name)
    model: ChatModel


@dataclass(frozen=True, slots=True)
class RunResult:
    scenario: Scenario
    model: str
    trial: int  # 1-based
    transcript: Transcript
    failures: tuple[Failure, ...]

    @property
    def passed(self) -> bool:
        return not self.failures


@dataclass(frozen=True, slots=True)
class Progress:
    done: int
    total: int
    last: RunResult


def demo_document(now: datetime | None = None) -> dict[str, Any]:
    """The demo shop as an import document (tools/shop/demo.py), so a scenario's own data
    is added to it through the same path as `import-data`."""
    orders = [
        {
            "order_id": order.order_id,
            "status": order.status,
            "updated_at": order.updated_at,
            "pickup_point": order.pickup_point,
            "expected_date": order.expected_date,
        }
        for order in demo_orders(now or datetime.now(UTC))
    ]
    policies = [
        {
            "product": policy.display_name,
            "return_days": policy.return_days,
            "conditions": policy.conditions,
            "aliases": list(policy.aliases),
        }
        for policy in DEMO_RETURN_POLICIES
    ]
    faq = [{"topic": e.topic, "answer": e.answer, "aliases": list(e.aliases)} for e in DEMO_FAQ]
    products = [dict(product) for product in DEMO_PRODUCTS]
    return {"orders": orders, "return_policies": policies, "faq": faq, "products": products}


def _merged(base: list[Any], extra: list[Any], key: str) -> list[Any]:
    """`extra` first; a `base` record whose `key` is in `extra` is replaced by it."""
    taken = {str(item.get(key)).casefold() for item in extra if isinstance(item, dict)}
    kept = [item for item in base if str(item.get(key)).casefold() not in taken]
    return [*extra, *kept]


def base_document(
    scenario: Scenario, own: OwnShop | None, now: datetime | None = None
) -> dict[str, Any]:
    """The shop under a scenario's own data: the owner's (`shop = "own"`, when there is
    one), the demo (`"demo"`, or `"own"` without the owner's data), or none (`"empty"`)."""
    if scenario.shop == "empty":
        return {}
    if scenario.shop == "own" and own is not None:
        return {
            key: list(value) if isinstance(value, list) else value
            for key, value in own.document.items()
        }
    return demo_document(now)


def shop_document(
    scenario: Scenario, now: datetime | None = None, own: OwnShop | None = None
) -> dict[str, Any]:
    """The shop a scenario runs on: its base (`base_document`) with its own data."""
    document = base_document(scenario, own, now)
    extra = scenario.shop_data or {}
    for name, key in (
        ("orders", "order_id"),
        ("return_policies", "product"),
        ("faq", "topic"),
        ("products", "product_id"),
    ):
        if name in extra:
            document[name] = _merged(document.get(name, []), list(extra[name]), key)
    if "general_return_policy" in extra:
        document["general_return_policy"] = extra["general_return_policy"]
    return document


@dataclass(slots=True)
class Simulator:
    """Runs scenarios; `shown` gives the words the customer sees for a reply (the bot's
    own polite texts when the model's answer is not shown); `action_words` the result
    message of a press on an action's card, in the customer's language."""

    build_bot: BotFactory
    shown: Callable[[TurnReply, str], str]
    action_words: Callable[[Outcome, str], str] = plain_result_words
    customer_model: ChatModel | None = None
    progress: Callable[[Progress], None] | None = None
    workdir: Path | None = None  # where the throwaway databases go (default: the system's temp)
    # bounds, so a model endpoint that hangs costs seconds, not an hour: one run (a
    # scenario × model × trial) is stopped after `run_timeout_s`; no run starts after
    # `time_limit_s` from the start, and the one running then is stopped at it
    run_timeout_s: float | None = None
    time_limit_s: float | None = None
    # the owner's shop (services/simulation/own_shop.py) and its order numbers' rule
    own_shop: OwnShop | None = None
    # the owner's knowledge (pages, files, own answers), copied into every own-shop run's
    own_knowledge: OwnKnowledge | None = None
    number_rule: OrderNumberRule = FOUR_DIGITS
    results: list[RunResult] = field(default_factory=list)
    not_started: int = 0  # runs left out by the time limit or a silent endpoint
    stopped_because: list[str] = field(default_factory=list)  # one line each, for the report

    async def run(
        self, scenarios: Sequence[Scenario], targets: Sequence[ModelTarget], trials: int
    ) -> list[RunResult]:
        total = len(scenarios) * len(targets) * trials
        deadline = None if self.time_limit_s is None else time.monotonic() + self.time_limit_s
        for target in targets:
            before = len(self.results)
            stopped = await self._run_target(scenarios, target, trials, total, deadline)
            if stopped == "time":  # nothing more for any model
                self.not_started = total - len(self.results)
                self.stopped_because.append(
                    f"time limit reached: {self.not_started} of {total} runs were not "
                    f"started (--time-limit {self.time_limit_s:g} s)"
                )
                break
            if stopped == "silent":
                left_out = len(scenarios) * trials - (len(self.results) - before)
                self.not_started += left_out
                self.stopped_because.append(
                    f"{target.label}: the model endpoint answered nothing in {SILENT_RUNS} "
                    f"runs in a row; its other {left_out} runs were not started"
                )
        return self.results

    async def _run_target(
        self,
        scenarios: Sequence[Scenario],
        target: ModelTarget,
        trials: int,
        total: int,
        deadline: float | None,
    ) -> Literal["time", "silent"] | None:
        """Every run of one model, or why it stopped early: the time limit, or the
        model's endpoint answering nothing `SILENT_RUNS` runs in a row (each such run
        costs the bot's whole turn timeout, per turn, for nothing)."""
        silent = 0
        runs = [(scenario, trial) for scenario in scenarios for trial in range(1, trials + 1)]
        for index, (scenario, trial) in enumerate(runs):
            bound = self.run_timeout_s
            if deadline is not None:
                left = deadline - time.monotonic()
                if left <= 0:
                    return "time"
                bound = left if bound is None else min(bound, left)
            result = await self.run_once(scenario, target, trial, bound_s=bound)
            self.results.append(result)
            if self.progress is not None:
                self.progress(Progress(len(self.results) + self.not_started, total, result))
            silent = silent + 1 if _unanswered(result.transcript) else 0
            if silent >= SILENT_RUNS and index + 1 < len(runs):
                return "silent"
        return None

    async def run_once(
        self, scenario: Scenario, target: ModelTarget, trial: int, *, bound_s: float | None = None
    ) -> RunResult:
        folder = Path(tempfile.mkdtemp(prefix="simulation-", dir=self.workdir))
        transcript = Transcript()
        started = time.perf_counter()
        bound = asyncio.timeout(bound_s)
        try:
            async with bound:
                db = await open_database(folder / "shop.sqlite3")
                try:
                    await self._play(db, scenario, target.model, transcript)
                finally:
                    await db.close()
        except Exception as exc:  # the run's verdict, never the end of the whole simulation
            if isinstance(exc, TimeoutError) and bound.expired():
                transcript.crash = (
                    f"{STOPPED} {bound_s or 0:.3g} s (the time bound of one run or of the "
                    "whole simulation: --scenario-timeout, --time-limit)"
                )
            else:
                log.warning(
                    "scenario %s on %s failed to run", scenario.id, target.label, exc_info=True
                )
                transcript.crash = f"the run stopped: {type(exc).__name__}: {exc}"[:500]
        finally:
            shutil.rmtree(folder, ignore_errors=True)
        transcript.duration_s = time.perf_counter() - started
        # private data is judged against every order of the shop the run had
        judged = scenario.model_copy(
            update={"shop_data": shop_document(scenario, own=self._own(scenario))}
        )
        return RunResult(
            scenario, target.label, trial, transcript, tuple(judge(judged, transcript))
        )

    def _own(self, scenario: Scenario) -> OwnShop | None:
        return self.own_shop if scenario.shop == "own" else None

    async def _play(
        self, db: Database, scenario: Scenario, model: ChatModel, transcript: Transcript
    ) -> None:
        shop = ShopRepository(db)
        own = self._own(scenario)
        # the owner's orders follow the shop's number rule; the demo's are four digits
        rule = self.number_rule if own is not None else FOUR_DIGITS
        plan = plan_import(shop_document(scenario, own=own), rule)
        await shop.import_shop_data(
            orders=plan.orders,
            policies=plan.policies,
            texts=plan.texts,
            faq=plan.faq,
            products=plan.products,
        )
        customer = scenario.customer
        if customer.verified_phone is not None:
            await shop.set_verified_phone(
                customer.telegram_id, customer.verified_phone, now=time.time()
            )
        recording = RecordingModel(model)
        bot = self.build_bot(db, recording, scenario.settings)
        try:
            if scenario.shop == "own":
                await add_own_knowledge(bot, self.own_knowledge)
            await add_knowledge(bot, scenario)
            await self._converse(bot, recording, scenario, transcript)
        finally:
            await bot.chat.aclose()
        for order_id in scenario.expect.order_status:
            order = await shop.get_order(order_id)
            transcript.order_status[order_id] = None if order is None else order.status
        transcript.actions = [
            ActionRecord(row.action, row.order_number, row.status.value, row.reason)
            for row in await ActionRepository(db).of_chat(customer.telegram_id)
        ]

    async def _converse(
        self,
        bot: SimulatedBot,
        recording: RecordingModel,
        scenario: Scenario,
        transcript: Transcript,
    ) -> None:
        customer = scenario.customer
        caller = Caller(key=customer.telegram_id, chat_id=customer.telegram_id, private_chat=True)
        simulated = self._simulated_customer(scenario)
        scripted = iter(scenario.turns)
        chat = bot.chat
        conversation: list[tuple[str, str]] = []
        typed = 0  # the customer's own messages (a press on a card is not one)
        while True:
            if simulated is not None:
                text = await simulated.next_message(conversation)
                transcript.customer_calls = list(simulated.calls)
                transcript.note = simulated.ended_because
            else:
                text = next(scripted, None)
            if text is None:
                return
            typed += 1
            first_call = len(recording.calls)
            reply = await chat.answer(caller, text, language=customer.language)
            await chat.wait_for_summaries()  # a summary belongs to the turn that caused it
            calls = tuple(recording.calls[first_call:])
            shown = self.shown(reply, customer.language)
            handoff = any(isinstance(offer, PersonWillAnswer) for offer in reply.offers)
            transcript.exchanges.append(
                Exchange(
                    customer=text,
                    shown=shown,
                    answer=reply.text,
                    stop_reason=None if reply.stop_reason is None else str(reply.stop_reason),
                    error_code=reply.error_code,
                    handoff=handoff,
                    tools=tool_uses(calls, recording.tool_results),
                    model_calls=calls,
                )
            )
            conversation.append((text, shown))
            for offer in reply.offers:
                if isinstance(offer, ConfirmAction):
                    pressed = await self._press(bot, offer, caller, scenario, transcript)
                    if pressed is not None:
                        conversation.append((pressed.customer, pressed.shown))
            if handoff:
                if typed < len(scenario.turns) or simulated is not None:
                    transcript.note = "handed over to a person: a person answers from here on"
                return

    async def _press(
        self,
        bot: SimulatedBot,
        card: ConfirmAction,
        caller: Caller,
        scenario: Scenario,
        transcript: Transcript,
    ) -> Exchange | None:
        """The customer's press on an action's card through the bot's own press path
        (`ActionService.press`: claim, carry out, record). None: the scenario presses
        nothing."""
        choice = scenario.customer.on_action_card
        if choice is None or bot.actions is None:
            return None
        service, language = bot.actions, scenario.customer.language
        button = "✅" if choice == "confirm" else "✖"
        effect = card.effect.get(language) or next(iter(card.effect.values()), "")
        pressed = f"{button} (pressed on the card: {effect})"

        def history(row: ActionRow, outcome: Outcome) -> str:
            return f"{service.card_words(row, language)}\n{self.action_words(outcome, language)}"

        press = await service.press(
            card.operation_id,
            chat_id=caller.chat_id,
            user_id=scenario.customer.telegram_id,
            update_id=_PRESS_UPDATE_BASE + len(transcript.exchanges),
            confirm=choice == "confirm",
            history=history,
        )
        outcome = press.outcome
        if outcome is None:
            shown = f"(the card could not be pressed: {press.kind.value})"
            exchange = self._press_exchange(pressed, shown, None)
            transcript.exchanges.append(exchange)
            return exchange
        said = self.action_words(outcome, language)
        if outcome.kind is ResultKind.REQUESTED:  # the shop's people: simulated as agreeing
            answer = await service.answer(
                card.operation_id, done=True, by=0, chat_id=0, history=history
            )
            if answer.outcome is not None:
                outcome = answer.outcome
                told = self.action_words(outcome, language)
                said = f"{said}\n(the shop's person pressed Done) {told}"
        exchange = self._press_exchange(pressed, said, outcome.kind.value)
        transcript.exchanges.append(exchange)
        return exchange

    @staticmethod
    def _press_exchange(pressed: str, shown: str, result: str | None) -> Exchange:
        return Exchange(
            customer=pressed,
            shown=shown,
            answer=None,
            stop_reason=None if result is None else f"action {result}",
            error_code=None,
            handoff=False,
            tools=(),
            model_calls=(),
        )

    def _simulated_customer(self, scenario: Scenario) -> CustomerSimulator | None:
        if scenario.simulated is None:
            return None
        if self.customer_model is None:
            raise RuntimeError("this scenario needs a customer model (--customer-model)")
        return CustomerSimulator(
            self.customer_model, scenario.simulated, scenario.customer.language
        )
