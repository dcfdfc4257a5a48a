"""Adding a feature is its module and one line in the list (tests/unit/bot/
shop_hours_example.py): with its setting on, the bot and simulate offer its tool under
its prompt fragment and the bot has its command; off, nothing of it is there; a fragment
naming a tool the feature does not register fails `make check`'s lint."""

from __future__ import annotations

from collections.abc import AsyncIterator, Iterator
from dataclasses import replace
from pathlib import Path

import pytest
from aiogram import Router

from bot.programs.simulate import BotWiring
from bot.runtime.feature_catalog import words_of
from bot.telegram.features.lint import check
from bot.telegram.features.registry import FEATURES
from bot.telegram.texts import TextsError, load_text_table
from bot.telegram.wiring import Application, build_application
from services.chat import PLAIN_SYSTEM_PROMPT
from services.prompts.composed import PromptFragment, Slot
from services.simulation.scenario import ScenarioSettings
from storage.database import Database
from tests.doubles.scripted_llm import ScriptedLLM, text_response
from tests.unit.bot.shop_hours_example import SHOP_HOURS, WORDS, hours_in_turns
from tests.unit.test_config import make

WITH_HOURS = (*FEATURES, SHOP_HOURS)  # the one registration line


def _names(routers: list[Router]) -> Iterator[str]:
    for router in routers:
        yield router.name
        yield from _names(router.sub_routers)


@pytest.fixture
async def wired(
    request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch, db: Database
) -> AsyncIterator[Application]:
    app = await build_application(make(monkeypatch, **request.param), db, specs=WITH_HOURS)
    yield app
    await app.bot.session.close()
    await app.model.aclose()
    await app.chat_service.aclose()


# the shop's knowledge off: the instruction is the frame and this feature's words alone
OFF = {"KNOWLEDGE_ENABLED": "false", "PRODUCTS_ENABLED": "false"}


@pytest.mark.parametrize("wired", [{**OFF, "SHOP_HOURS": "Mon-Fri 9-18"}], indirect=True)
async def test_on_its_tool_fragment_and_command_are_in_the_bot_and_in_simulate(
    wired: Application, db: Database
) -> None:
    assert "get_shop_hours" in wired.tool_names
    instruction = wired.chat_service.instruction
    assert instruction.ref == "support_chat@5+shop_hours@1"
    assert "call get_shop_hours" in instruction.text
    assert "shop_hours" in [f.name for f in wired.features]
    assert "shop_hours" in set(_names(wired.dispatcher.sub_routers))
    model = ScriptedLLM(lambda _messages, _choice: text_response("-"))
    settings = wired.settings.model_copy(update={"operator_chat_id": -1001})
    simulated = BotWiring(settings, WITH_HOURS)(db, model, ScenarioSettings()).chat
    try:
        assert "get_shop_hours" in simulated.tool_names
        assert simulated.instruction == instruction
    finally:
        await simulated.aclose()


@pytest.mark.parametrize("wired", [OFF], indirect=True)
async def test_off_nothing_of_it_is_there(wired: Application) -> None:
    assert "get_shop_hours" not in wired.tool_names
    assert wired.chat_service.instruction == PLAIN_SYSTEM_PROMPT.render(shop_name="Online shop")
    assert "shop_hours" not in set(_names(wired.dispatcher.sub_routers))


async def test_the_lint_passes_it_and_fails_a_fragment_naming_a_tool_it_lacks() -> None:
    assert await check(WITH_HOURS) == []
    wrong = PromptFragment("shop_hours", "2", Slot.TOOLS, "- For hours, call get_opening_hours.")

    def wrong_part(needs, conf):  # type: ignore[no-untyped-def]
        part = hours_in_turns(needs, conf)
        return None if part is None else replace(part, prompt=(wrong,))

    problems = await check((*FEATURES, replace(SHOP_HOURS, chat=wrong_part)))
    assert problems == [
        "shop_hours: shop_hours@2 names get_opening_hours, which shop_hours does not register"
    ]
    missing = replace(SHOP_HOURS, words={"ru": {"hours_reply": "…"}, "en": {}})
    assert await check((*FEATURES, missing)) == [
        "shop_hours: words ['hours_reply'] are missing in 'en'"
    ]
    taken = replace(SHOP_HOURS, words={"ru": {"voice_heard": "…"}, "en": {"voice_heard": "…"}})
    assert await check((*FEATURES, taken)) == ["shop_hours: word 'voice_heard' is voice's too"]


def test_texts_file_rewords_its_words_and_checks_them(tmp_path: Path) -> None:
    """Its words are declared in its module; the shop's TEXTS_FILE rewords them by key,
    with the same checks as the bot's own texts (its `{hours}` is required)."""
    path = tmp_path / "texts.toml"
    path.write_text('[en]\nhours_reply = "Open: {hours}"\n', encoding="utf-8")
    features = words_of(WITH_HOURS)
    table = load_text_table(
        texts_file=path, shop_name=None, default_language="ru", features=features
    )
    assert table.by_language["en"].of(WORDS).hours_reply == "Open: {hours}"
    assert table.by_language["ru"].of(WORDS) == WORDS["ru"]
    path.write_text('[en]\nhours_reply = "Open."\n', encoding="utf-8")
    with pytest.raises(TextsError, match="hours_reply: must contain the placeholder"):
        load_text_table(texts_file=path, shop_name=None, default_language="ru", features=features)
    with pytest.raises(TextsError, match="unknown text 'hours_reply'"):
        load_text_table(
            texts_file=path, shop_name=None, default_language="ru", features=words_of(FEATURES)
        )
