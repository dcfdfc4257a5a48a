"""The simulation runner against the fake OpenAI server (the real HTTP client, chat
service, loop, tools and guard): every expectation kind passes on a run that meets it
and fails on one that does not; the scores, the report, a simulated customer played by a
scripted customer model, and a model that misbehaves."""

from __future__ import annotations

import itertools
import tomllib
from pathlib import Path
from typing import Any

import pytest

from bot.programs.simulate import UNUSED_BOT_TOKEN, BotWiring, _action_words, _shown
from bot.runtime.config import load_settings
from bot.telegram.texts import load_text_table
from services.llm.client import OpenAIChatModel
from services.simulation.expectations import KINDS
from services.simulation.report import markdown_report, scores, terminal_table
from services.simulation.runner import ModelTarget, RunResult, Simulator
from services.simulation.scenario import Expect, Scenario
from tests.doubles.scripted_llm import ScriptedLLM, text_response
from tests.fakes.careful_model import careful_script
from tests.fakes.openai_server import Body, FakeOpenAIServer, FakeReply, completion, fake_call

OTHER_ORDER = {
    "orders": [
        {
            "order_id": "5001",
            "status": "in_transit",
            "owner_telegram_id": 2002,
            "pickup_point": "ул. Ленина, 1",
        }
    ]
}


MY_PROCESSING_ORDER = {
    "orders": [{"order_id": "5003", "status": "processing", "owner_telegram_id": 1001}]
}
CANCEL_ON = {"settings": {"actions_enabled": ["cancel_order"]}, "shop_data": MY_PROCESSING_ORDER}


def scenario(text: str | list[str], expect: dict[str, Any], **extra: Any) -> Scenario:
    turns = [text] if isinstance(text, str) else text
    return Scenario.model_validate({"id": "case", "turns": turns, "expect": expect, **extra})


def simulator(server: FakeOpenAIServer, customer: Any = None) -> tuple[Simulator, ModelTarget]:
    settings = load_settings(
        bot_token=UNUSED_BOT_TOKEN, openai_api_key="sk-test", openai_base_url=server.base_url
    )
    texts = load_text_table(texts_file=None, shop_name=None, default_language="ru")
    model = OpenAIChatModel(api_key="sk-test", model="fake-model", base_url=server.base_url)
    sim = Simulator(
        build_bot=BotWiring(settings),
        shown=_shown(texts),
        action_words=_action_words(texts),
        customer_model=customer,
    )
    return sim, ModelTarget("fake-model", model)


async def run(server: FakeOpenAIServer, case: Scenario, trials: int = 1) -> list[RunResult]:
    sim, target = simulator(server)
    try:
        return await sim.run([case], [target], trials)
    finally:
        await target.model.aclose()  # type: ignore[attr-defined]


def leaky(body: Body) -> FakeReply:
    """A careless model: after the lookup it names another customer's pickup point."""
    if body.get("tools") and body["messages"][-1].get("role") == "tool":
        return completion(text="Заказ 5001 не ваш, но он едет на ул. Ленина, 1.")
    return careful_script(body)


def inventing(body: Body) -> FakeReply:
    """A careless model: after the search, a price no tool gave."""
    if body.get("tools") and body["messages"][-1].get("role") == "tool":
        return completion(text="Кроссовки Runner стоят 4990 ₽, берите!")
    return careful_script(body)


# kind → (customer text, expectation met, expectation not met, extra scenario fields)
CASES: dict[str, tuple[Any, dict[str, Any], dict[str, Any], dict[str, Any]]] = {
    "tools": (
        "Где заказ 8041?",
        {"tools": [{"name": "get_order_status", "args": {"order_id": 8041}}]},
        {"tools": [{"name": "get_order_status", "args": {"order_id": "9912"}}]},
        {},
    ),
    "no_tools": (
        "Привет!",
        {"no_tools": ["get_order_status"]},
        {"no_tools": ["get_order_status"]},  # with an order question, below
        {},
    ),
    "handoff": ("Позовите оператора", {"handoff": True}, {"handoff": False}, {}),
    "must_contain": ("Где заказ 8041?", {"must_contain": ["8041"]}, {"must_contain": ["9912"]}, {}),
    "final_reply_contains": (
        ["Где заказ 8041?", "Спасибо!"],
        {"final_reply_contains": ["помочь"]},
        {"final_reply_contains": ["8041"]},
        {},
    ),
    "must_not_contain": (
        "Где заказ 8041?",
        {"must_not_contain": ["доставлен"]},
        {"must_not_contain": ["в пути"]},
        {},
    ),
    "must_match": (
        "Где заказ 8041?",
        {"must_match": [r"\b80\d\d\b"]},
        {"must_match": ["^Нет"]},
        {},
    ),
    "must_not_match": (
        "Где заказ 8041?",
        {"must_not_match": [r"отмен[её]н"]},
        {"must_not_match": [r"заказ \d+"]},
        {},
    ),
    "language": ("Где заказ 8041?", {"language": "ru"}, {"language": "en"}, {}),
    "private_data": (
        "Где заказ 5001?",
        {"private_data": True},
        {"private_data": True},  # with the careless model, below
        {"shop_data": OTHER_ORDER},
    ),
    "max_model_calls": ("Где заказ 8041?", {"max_model_calls": 2}, {"max_model_calls": 1}, {}),
    "order_status": (
        "Отмените заказ 8041",
        {"order_status": {"8041": "in_transit"}},
        {"order_status": {"8041": "delivered"}},
        {},
    ),
    "actions_proposed": (
        "Отмените, пожалуйста, заказ 5003",
        {"actions_proposed": [{"action": "cancel_order", "order_id": "5003"}]},
        {"actions_proposed": []},
        CANCEL_ON,
    ),
    "actions_executed": (
        "Отмените, пожалуйста, заказ 5003",
        {"actions_executed": [{"action": "cancel_order", "order_id": 5003}]},
        {"actions_executed": []},
        {**CANCEL_ON, "customer": {"on_action_card": "confirm"}},
    ),
    "cites": (
        "Вы доставляете по выходным?",
        {"cites": ["https://shop.example/help/weekend-delivery"]},
        {"cites": ["https://shop.example/help/returns"]},
        {
            "knowledge": {
                "pages": [
                    {
                        "title": "Доставка в выходные",
                        "url": "https://shop.example/help/weekend-delivery",
                        "text": "Да, мы возим заказы по выходным: в субботу и воскресенье.",
                    }
                ]
            }
        },
    ),
    "products_named": (
        "Есть кроссовки Runner 42 размер?",
        {"products_named": ["Кроссовки Runner"]},
        {"products_named": ["Пуховик Arctic"]},
        {},
    ),
    "no_invented_prices": (
        "Есть кроссовки Runner 42 размер?",
        {"no_invented_prices": True},
        {"no_invented_prices": True},  # with the inventing model, below
        {},
    ),
}


def test_every_expectation_kind_has_cases() -> None:
    assert set(CASES) == set(KINDS) == set(Expect.model_fields)


@pytest.mark.parametrize("kind", sorted(CASES))
async def test_a_kind_passes_when_met_and_fails_when_not(
    kind: str, fake_openai: FakeOpenAIServer
) -> None:
    text, met, unmet, extra = CASES[kind]
    fake_openai.handler = careful_script
    [passing] = await run(fake_openai, scenario(text, met, **extra))
    assert passing.passed, passing.failures

    if kind == "no_tools":
        text = "Где заказ 8041?"
    if kind == "private_data":
        fake_openai.handler = leaky
    if kind == "no_invented_prices":
        fake_openai.handler = inventing
    [failing] = await run(fake_openai, scenario(text, unmet, **extra))
    assert not failing.passed
    assert {failure.kind for failure in failing.failures} == {kind}, failing.failures


@pytest.mark.parametrize(
    ("press", "status", "executed", "row"),
    [
        ("confirm", "cancelled", [{"action": "cancel_order", "order_id": "5003"}], "done"),
        ("decline", "processing", [], "declined"),
        (None, "processing", [], "pending"),
    ],
)
async def test_a_press_on_the_card_goes_through_the_action_service(
    fake_openai: FakeOpenAIServer, press: str | None, status: str, executed: Any, row: str
) -> None:
    """✅ cancels the order (once), ✖ or no press leaves it; the result message is what
    the customer saw next, and the model's next turn reads it in the history."""
    fake_openai.handler = careful_script
    customer = {"on_action_card": press} if press else {}
    case = scenario(
        ["Отмените, пожалуйста, заказ 5003", "Спасибо!"],
        {
            "actions_proposed": [{"action": "cancel_order", "order_id": "5003"}],
            "actions_executed": executed,
            "order_status": {"5003": status},
            "language": "ru",
        },
        customer=customer,
        **CANCEL_ON,
    )
    [result] = await run(fake_openai, case)
    assert result.passed, result.failures
    transcript = result.transcript
    assert [(a.action, a.order_id, a.status) for a in transcript.actions] == [
        ("cancel_order", "5003", row)
    ]
    proposal = [t for t in transcript.tools if t.name == "propose_cancel_order"]
    assert len(proposal) == 1 and proposal[0].result_data["proposed"] is True
    assert "карточку" in transcript.exchanges[0].shown
    if press is None:
        assert len(transcript.exchanges) == 2
        return
    pressed = transcript.exchanges[1]
    assert pressed.customer.startswith("✅" if press == "confirm" else "✖")
    assert "Отменить заказ 5003" in pressed.customer  # the card's words
    if press == "confirm":
        # imported data: a request to the shop's people, whom the simulation plays
        assert pressed.shown.startswith("Запрос передан сотрудникам магазина")
        assert pressed.shown.endswith("(the shop's person pressed Done) Заказ 5003 отменён.")
    else:
        assert "5003" not in pressed.shown and pressed.shown.strip()
    # the next turn's request holds the card and its result, as the bot's history does
    last_request = fake_openai.requests[-1]
    history = " ".join(str(m.get("content")) for m in last_request["messages"])
    assert "Отменить заказ 5003" in history


async def test_an_order_that_may_not_be_cancelled_gets_no_card(
    fake_openai: FakeOpenAIServer,
) -> None:
    fake_openai.handler = careful_script
    case = scenario(
        "Отмените мой заказ 8041",
        {"actions_proposed": [], "actions_executed": [], "order_status": {"8041": "in_transit"}},
        settings={"actions_enabled": ["cancel_order"]},
        customer={"on_action_card": "confirm"},
    )
    [result] = await run(fake_openai, case)
    assert result.passed, result.failures
    [proposal] = [t for t in result.transcript.tools if t.name == "propose_cancel_order"]
    assert proposal.result_data["refused"] == "not_cancellable"
    assert len(result.transcript.exchanges) == 1  # no card, nothing to press


def test_unknown_action_names_are_refused_when_read() -> None:
    with pytest.raises(ValueError, match="unknown action 'refund'"):
        scenario("x", {"actions_proposed": [{"action": "refund", "order_id": "5003"}]})
    with pytest.raises(ValueError, match="unknown action 'refund'"):
        scenario("x", {}, settings={"actions_enabled": ["refund"]})


async def test_scores_and_the_report_name_what_failed(fake_openai: FakeOpenAIServer) -> None:
    answers = itertools.count()

    def flaky(body: Body) -> FakeReply:  # every other answer forgets the order number
        if body.get("tools") and body["messages"][-1].get("role") == "tool":
            if next(answers) % 2:
                return completion(text="Ваш заказ где-то в пути.")
        return careful_script(body)

    fake_openai.handler = flaky
    case = Scenario.model_validate(
        {
            "id": "flaky-order",
            "title": "Order by number",
            "turns": ["Где заказ 8041?"],
            "expect": {"must_contain": ["8041"]},
        }
    )
    steady = Scenario.model_validate(
        {"id": "steady-greeting", "turns": ["Привет!"], "expect": {"language": "ru"}}
    )
    sim, target = simulator(fake_openai)
    try:
        results = await sim.run([case, steady], [target], trials=2)
    finally:
        await target.model.aclose()  # type: ignore[attr-defined]

    [model] = scores(results)
    by_id = {s.scenario_id: s for s in model.scenarios}
    assert (by_id["flaky-order"].pass_1, by_id["flaky-order"].pass_k) == (0.5, 0.0)
    assert (by_id["steady-greeting"].pass_1, by_id["steady-greeting"].pass_k) == (1.0, 1.0)
    assert (model.pass_1, model.pass_k) == (0.75, 0.5)
    assert model.model_calls == 2 * 2 + 2 * 1

    # where the tokens went: every request's instruction and tools, the turn's question
    parts = by_id["flaky-order"].parts or {}
    assert parts["instruction"] > 0 and parts["tools"] > parts["instruction"]
    assert parts["turn"] > 0 and by_id["flaky-order"].questions == 2
    assert model.parts == {
        p: sum((s.parts or {})[p] for s in model.scenarios) for p in model.parts or {}
    }

    table = terminal_table([model])
    assert "flaky-order" in table and "0.50" in table and "overall" in table
    assert f"by part (estimated): instruction {(model.parts or {})['instruction']}," in table

    report = markdown_report(results, [model], trials=2, min_pass=1.0)
    by_part = report.split("## Tokens by part", 1)[1].split("## Failing runs", 1)[0]
    assert "| fake-model | flaky-order | 2 | " in by_part
    assert "| fake-model | **all** | 4 | " in by_part
    assert "n/a (no MODEL_PRICE_*)" in by_part  # no prices: no cost
    failing = report.split("## Failing runs (1)", 1)[1]
    assert "### flaky-order — fake-model, trial 2" in failing
    assert "**must_contain**: no reply contains '8041'" in failing
    assert "> Где заказ 8041?" in failing  # the customer's words
    assert "> Ваш заказ где-то в пути." in failing  # what the bot said
    assert "get_order_status" in failing  # the tool call, with its arguments and result
    assert "steady-greeting" not in failing


async def test_a_simulated_customer_talks_until_it_stops(fake_openai: FakeOpenAIServer) -> None:
    fake_openai.handler = careful_script

    def customer_script(messages: list[Any], tool_choice: Any) -> Any:
        said = [m for m in messages if m["role"] == "assistant"]
        if not said:
            return text_response("Добрый день, где мой заказ 8041?")
        if len(said) == 1:
            return text_response("А когда его привезут?")
        return text_response("Спасибо! ###STOP###")

    customer = ScriptedLLM(customer_script)
    case = Scenario.model_validate(
        {
            "id": "simulated",
            "simulated": {"instruction": "Узнать, где заказ 8041.", "max_turns": 5},
            "expect": {"tools": [{"name": "get_order_status", "args": {"order_id": "8041"}}]},
        }
    )
    sim, target = simulator(fake_openai, customer=customer)
    try:
        [result] = await sim.run([case], [target], 1)
    finally:
        await target.model.aclose()  # type: ignore[attr-defined]

    assert result.passed, result.failures
    transcript = result.transcript
    assert [e.customer for e in transcript.exchanges] == [
        "Добрый день, где мой заказ 8041?",
        "А когда его привезут?",
    ]
    assert transcript.note == "the simulated customer ended the conversation"
    # the customer model read the bot's reply as the other party's message, with its goal
    second = customer.requests[1].messages
    assert "Узнать, где заказ 8041." in second[0]["content"]
    assert second[-1] == {"role": "user", "content": transcript.exchanges[0].shown}
    assert len(transcript.customer_calls) == 3


async def test_a_simulated_customer_stops_at_its_turn_limit(fake_openai: FakeOpenAIServer) -> None:
    fake_openai.handler = careful_script
    customer = ScriptedLLM(lambda messages, choice: text_response("Привет!"))
    case = Scenario.model_validate(
        {"id": "chatty", "simulated": {"instruction": "Поболтать.", "max_turns": 2}}
    )
    sim, target = simulator(fake_openai, customer=customer)
    try:
        [result] = await sim.run([case], [target], 1)
    finally:
        await target.model.aclose()  # type: ignore[attr-defined]
    assert len(result.transcript.exchanges) == 2
    assert result.transcript.note == "the simulated customer's turn limit (2)"


async def test_a_model_that_misbehaves_ends_in_verdicts_not_a_crash(
    fake_openai: FakeOpenAIServer,
) -> None:
    """What a small real model does: empty answers, junk arguments, an unknown tool, odd
    finish reasons, a server error. Every run ends with a transcript and a verdict."""
    replies = itertools.cycle(
        [
            completion(text="", finish_reason="length"),
            completion(tool_calls=[fake_call("get_order_status", "{order 8041")]),
            completion(tool_calls=[fake_call("cancel_everything", {"all": True})]),
            completion(text=None, finish_reason="content_filter"),
            completion(text="<end_of_turn>", finish_reason="eos"),
        ]
    )
    fake_openai.handler = lambda body: next(replies)
    case = scenario(
        ["Где заказ 8041?", "Ответьте!", "Ну?"],
        {"must_contain": ["8041"], "language": "ru"},
    )
    results = await run(fake_openai, case, trials=2)
    assert len(results) == 2
    for result in results:
        assert result.transcript.crash is None
        assert len(result.transcript.exchanges) == 3
        assert all(e.shown.strip() for e in result.transcript.exchanges)  # always words
    report = markdown_report(results, scores(results), trials=2, min_pass=1.0)
    assert "## Failing runs (2)" in report


def test_the_default_suite_is_valid_and_covers_the_policies() -> None:
    from services.simulation.scenario import default_suite_files, load_scenarios

    scenarios = load_scenarios(default_suite_files())
    assert len(scenarios) >= 30
    languages = {s.customer.language for s in scenarios}
    assert languages == {"ru", "en"}
    ids = " ".join(s.id for s in scenarios)
    for topic in (
        "someone-else",
        "no-number",
        "verified-phone",
        "return-",
        "faq-",
        "cancel-",
        "outside-window",
        "handoff-asked",
        "injection-reveal",
        "injection-in-faq",
        "injection-in-order-data",
        "long-conversation",
        "simulated-",
        "products-",
    ):
        assert topic in ids, topic
    for path in default_suite_files():
        tomllib.loads(Path(path).read_text(encoding="utf-8"))


def test_the_documented_scenario_examples_are_valid_scenarios(tmp_path: Path) -> None:
    """docs/simulations.md shows every expectation kind and a simulated customer; the
    README a short scenario on the owner's own shop."""
    import re

    from services.simulation.scenario import read_scenarios

    root = Path(__file__).parents[2]
    docs = (root / "docs" / "simulations.md").read_text(encoding="utf-8")
    section = docs.split("## The command, the report and your own scenarios", 1)[1]
    # "toml scenario": GitHub highlights TOML, and the texts example stays the only "toml"
    blocks = re.findall(r"```toml scenario\n(.*?)```", section, flags=re.S)
    example = tmp_path / "example.toml"
    example.write_text(blocks[0], encoding="utf-8")
    [scripted] = read_scenarios(example)
    assert set(scripted.expect.model_dump(exclude_unset=True)) == set(KINDS)
    simulated = (
        blocks[0].split("[scenario.customer]")[0].replace('turns = ["Где мой заказ 5003?"]', "")
    )
    example.write_text(simulated + blocks[1], encoding="utf-8")
    [played] = read_scenarios(example)
    assert played.simulated is not None and played.simulated.max_turns == 4

    readme = (root / "README.md").read_text(encoding="utf-8")
    [short] = re.findall(r"```toml scenario\n(.*?)```", readme, flags=re.S)
    example.write_text(short, encoding="utf-8")
    [mine] = read_scenarios(example)
    assert mine.shop == "own" and mine.shop_data is None  # the owner's data, not retyped


async def test_a_scenario_brings_a_file_and_the_answer_cites_it(
    fake_openai: FakeOpenAIServer, tmp_path: Path
) -> None:
    """A scenario's knowledge file (beside the scenario's file) is read as the owner's
    would be, and a cited file name is judged like a link; a missing file stops the run
    with its one line."""
    fake_openai.handler = careful_script
    (tmp_path / "gift-cards.md").write_text(
        "# Подарочные сертификаты\n\nСертификат действует 12 месяцев со дня покупки.\n",
        encoding="utf-8",
    )
    case = scenario(
        "Сколько действует подарочный сертификат?",
        {"cites": ["gift-cards.md"], "must_contain": ["12 месяцев"]},
        knowledge={"files": ["gift-cards.md"]},
        source=str(tmp_path / "mine.toml"),
    )
    [result] = await run(fake_openai, case)
    assert result.passed, result.failures
    missing = case.model_copy(
        update={"knowledge": case.knowledge.model_copy(update={"files": ["nope.pdf"]})}  # type: ignore[union-attr]
    )
    [stopped] = await run(fake_openai, missing)
    assert not stopped.passed and "nope.pdf" in (stopped.transcript.crash or "")
