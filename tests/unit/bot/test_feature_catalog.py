"""The one feature list: the prompt the model sees, and simulate built like the bot.

The system instruction is composed from the frame and the fragments of the features
that are on; for the configurations that existed before the composition it is the old
whole prompt word for word (support_chat@5; support_chat_actions@4 with actions on), only
its ref names the parts now. No instruction repeats what a tool's description says (the
descriptions go with every request already). `support-bot simulate` builds from the same
list, so for the same settings it offers the model the same tools under the same instruction.
"""

from __future__ import annotations

from collections.abc import AsyncIterator

import pytest

from bot.programs.simulate import BotWiring
from bot.telegram.features.lint import check
from bot.telegram.features.registry import FEATURES
from bot.telegram.wiring import Application, build_application
from services.chat import ChatService
from services.output_guard import normalised_words
from services.prompts.support_chat import SUPPORT_CHAT_ACTIONS_V4, SUPPORT_CHAT_V5
from services.simulation.scenario import ScenarioSettings
from storage.database import Database
from tests.doubles.scripted_llm import ScriptedLLM, text_response
from tests.unit.test_config import make

SHOP = "Кофейный двор"
WITH_ACTIONS = "support_chat@5+order_actions@2"
# the configurations of before (the shop's knowledge and products came later: off), and the whole
# prompt the model saw in each
OFF = {"KNOWLEDGE_ENABLED": "false", "PRODUCTS_ENABLED": "false"}
BEFORE = [
    (OFF, SUPPORT_CHAT_V5, "support_chat@5"),
    ({**OFF, "OPERATOR_CHAT_ID": "-1001234"}, SUPPORT_CHAT_V5, "support_chat@5"),
    ({**OFF, "ACTIONS_ENABLED": "cancel_order"}, SUPPORT_CHAT_ACTIONS_V4, WITH_ACTIONS),
    (
        {
            **OFF,
            "OPERATOR_CHAT_ID": "-1001234",
            "ACTIONS_ENABLED": "cancel_order,request_return",
            "ORDER_UPDATES_ENABLED": "true",
            "STREAM_ANSWERS": "false",
        },
        SUPPORT_CHAT_ACTIONS_V4,
        WITH_ACTIONS,
    ),
]


@pytest.fixture
async def wired(
    request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch, db: Database
) -> AsyncIterator[Application]:
    app = await build_application(make(monkeypatch, SHOP_NAME=SHOP, **request.param), db)
    yield app
    await app.bot.session.close()
    await app.model.aclose()
    await app.chat_service.aclose()


@pytest.mark.parametrize(("wired", "whole", "ref"), BEFORE, indirect=["wired"])
async def test_the_model_sees_the_whole_prompt_of_before(
    wired: Application, whole: object, ref: str
) -> None:
    instruction = wired.chat_service.instruction
    assert instruction.text == whole.render(shop_name=SHOP).text  # type: ignore[attr-defined]
    assert instruction.ref == ref


async def _simulated(app: Application, db: Database) -> ChatService:
    wiring = BotWiring(app.settings)
    model = ScriptedLLM(lambda _messages, _choice: text_response("-"))
    return wiring(db, model, ScenarioSettings()).chat


@pytest.mark.parametrize(("wired", "whole", "ref"), [BEFORE[1], BEFORE[3]], indirect=["wired"])
async def test_simulate_offers_the_tools_and_instruction_the_bot_does(
    wired: Application, whole: object, ref: str, db: Database
) -> None:
    simulated = await _simulated(wired, db)
    try:
        assert simulated.tool_names == wired.tool_names
        assert simulated.instruction == wired.chat_service.instruction
    finally:
        await simulated.aclose()


@pytest.mark.parametrize("wired", [{}], indirect=True)
async def test_simulate_differs_only_by_always_offering_a_person(
    wired: Application, db: Database
) -> None:
    """Handoff scenarios are judged with OPERATOR_CHAT_ID unset too (never sent to)."""
    simulated = await _simulated(wired, db)
    try:
        assert "request_human" not in wired.tool_names
        assert "request_human" in simulated.tool_names
        others = tuple(name for name in simulated.tool_names if name != "request_human")
        assert others == wired.tool_names
        assert simulated.instruction == wired.chat_service.instruction
    finally:
        await simulated.aclose()


async def test_the_features_words_name_only_their_own_tools() -> None:
    """What `make check` runs (bot/telegram/features/lint.py), on the real list."""
    assert await check(FEATURES) == []


@pytest.mark.parametrize("wired", [{}], indirect=True)
async def test_by_default_the_shop_s_knowledge_and_products_are_searched_in_the_bot_and_in_simulate(
    wired: Application, db: Database
) -> None:
    instruction = wired.chat_service.instruction
    assert instruction.ref == "support_chat@5+knowledge@2+products@2"
    assert "search_knowledge" in instruction.text
    assert {"search_knowledge", "search_products", "get_product"} <= set(wired.tool_names)
    simulated = await _simulated(wired, db)
    try:
        assert {"search_knowledge", "search_products"} <= set(simulated.tool_names)
        assert simulated.instruction == instruction
    finally:
        await simulated.aclose()


def _runs(text: str, size: int = 6) -> set[tuple[str, ...]]:
    words = normalised_words(text)
    return {tuple(words[i : i + size]) for i in range(len(words) - size + 1)}


@pytest.mark.parametrize(
    "wired",
    [{}, {"OPERATOR_CHAT_ID": "-1001234", "ACTIONS_ENABLED": "cancel_order,request_return"}],
    indirect=True,
)
async def test_the_instruction_repeats_no_tool_description(wired: Application) -> None:
    """Six words in a row of a tool's description (or of an argument's) are not said
    again in the instruction: the model gets both in every request, so a repeat is paid
    for twice per model call."""
    instruction = _runs(wired.chat_service.instruction.text)
    for schema in wired.chat_service.tool_schemas:
        function = schema["function"]
        texts = [function["description"]]
        texts += [p.get("description", "") for p in function["parameters"]["properties"].values()]
        repeated = [" ".join(run) for text in texts for run in _runs(text) & instruction]
        assert repeated == [], function["name"]
