"""The honest outcome of each question, end to end below Telegram: the real loop, real
tools and SQLite, a scripted model — and the resolution rate /stats computes from them.

A conversation of greetings and questions the shop's FAQ cannot answer is all "answered"
(the customer got words back) and none of it "resolved"; an order question answered from
the shop's data is resolved until the customer dislikes it, asks it again, or is handed
to a person within a day.
"""

from __future__ import annotations

import argparse
import json
import re
import time
from collections.abc import AsyncIterator
from dataclasses import dataclass
from pathlib import Path

import pytest

from bot.programs.export import run_export
from bot.programs.simulate import write_drafts
from bot.telegram.stats_view.table import kv, render_table
from services.chat import ChatOptions, ChatService, build_chat_service
from services.export import conversations
from services.gaps import ConversationReader
from services.llm.types import Message, ToolChoice
from services.loop import BoundedToolLoop
from services.prompts import build_prompt_registry
from services.simulation.scenario import load_scenarios
from services.stats import Prices, StatsService
from storage.database import Database
from storage.feedback import FeedbackRepository
from storage.handoffs import HandoffRepository
from storage.outcomes import OutcomeRepository, claim_digest
from storage.shop import ShopRepository
from storage.stats import StatsRepository
from tests.doubles import ScriptedLLM, text_response, tool_call, tool_calls_response
from tools.base import Caller
from tools.executor import ToolExecutor
from tools.factory import build_registry
from tools.shop.demo import seed_demo_shop

ORDER = re.compile(r"\b\d{4}\b")
CUSTOMER = Caller(key=20, chat_id=20, private_chat=True)


def script(messages: list[Message], tool_choice: ToolChoice | None) -> object:
    """Greets a greeting, looks an order up, asks the FAQ about anything else and says
    "I don't know" when it has nothing."""
    last = messages[-1]
    text = str(last["content"])
    if "running summary" in str(messages[0]["content"]):
        return text_response("Small talk.")
    if last["role"] == "tool":
        if '"found": false' in text or '"found":false' in text:
            return text_response("Извините, я не знаю ответа на этот вопрос.")
        return text_response("Вот что я нашёл: " + text[:80])
    if tool_choice != "auto":
        return text_response("Не могу сейчас ответить.")
    if text.lower().startswith(("привет", "hello", "добрый")):
        return text_response("Здравствуйте! Чем могу помочь?")
    if (number := ORDER.search(text)) is not None:
        return tool_calls_response(tool_call("get_order_status", {"order_id": number.group()}))
    return tool_calls_response(tool_call("get_shop_info", {"topic": text[:90]}))


@dataclass
class Stack:
    service: ChatService
    db: Database

    async def stats(self) -> StatsService:
        return StatsService(StatsRepository(self.db), clock=lambda: time.time() + 60)


@pytest.fixture
async def stack(db: Database) -> AsyncIterator[Stack]:
    shop = ShopRepository(db)
    await seed_demo_shop(shop)
    registry = build_registry()
    llm = ScriptedLLM(script)  # type: ignore[arg-type]
    loop = BoundedToolLoop(llm, registry, ToolExecutor(registry), max_steps=3)
    service = build_chat_service(
        db=db,
        loop=loop,
        model=llm,
        prompts=build_prompt_registry(),
        shop=shop,
        options=ChatOptions(shop_name="Кофейный двор"),
    )
    yield Stack(service, db)
    await service.aclose()


async def _outcomes(db: Database) -> list[tuple[str, str | None, str | None]]:
    rows = await db.fetch_all(
        "SELECT outcome, fact_tools, repeat_of FROM turns ORDER BY started_at"
    )
    return [(r[0], r[1], r[2]) for r in rows]


async def test_greetings_and_misses_are_answered_but_not_resolved(stack: Stack) -> None:
    for text in (
        "Привет!",
        "Делаете ли гравировку на кружке?",
        "Добрый день",
        "Есть ли у вас подарочная упаковка для коробок?",
    ):
        reply = await stack.service.answer(CUSTOMER, text)
        assert reply.answered

    assert [o for o, _, _ in await _outcomes(stack.db)] == [
        "no_facts",
        "dont_know",
        "no_facts",
        "dont_know",
    ]
    service = await stack.stats()
    report = await service.report(service.parse_period("all"))
    assert report.questions.asked == 4 and report.questions.answered == 4
    assert report.outcomes.resolved == 0
    table = "\n".join(render_table(report, "en"))
    assert re.search(r"resolved\s+0  0%", table)
    assert "no handoff, 👎 or repeat in 24 h" in table  # the definition beside the figure
    assert re.search(r"did not know \(/gaps\)\s+2", table)
    priced = StatsService(
        StatsRepository(stack.db), clock=lambda: time.time() + 60, prices=Prices(1.0, 2.0)
    )
    table = "\n".join(render_table(await priced.report(priced.parse_period("all")), "en"))
    assert kv("per resolved question", "—") in table.splitlines()  # none resolved: no figure


async def test_an_answer_from_the_shops_data_is_resolved(stack: Stack) -> None:
    await stack.service.answer(CUSTOMER, "Привет")
    await stack.service.answer(CUSTOMER, "Где мой заказ 8041?")
    outcomes = await _outcomes(stack.db)
    assert outcomes[1][:2] == ("facts", "get_order_status")
    service = await stack.stats()
    report = await service.report(service.parse_period("all"))
    assert (report.questions.asked, report.outcomes.resolved) == (2, 1)
    assert re.search(r"решено\s+1  50%", "\n".join(render_table(report, "ru")))


async def test_the_cost_per_resolved_question_is_the_whole_cost_over_the_resolved_ones(
    stack: Stack,
) -> None:
    """Shown with its definition only when prices are set; the greeting's tokens count
    too (what one resolution really costs)."""
    await stack.service.answer(CUSTOMER, "Привет")
    await stack.service.answer(CUSTOMER, "Где мой заказ 8041?")
    priced = StatsService(
        StatsRepository(stack.db),
        clock=lambda: time.time() + 60,
        prices=Prices(input_per_1m=100_000.0, output_per_1m=200_000.0),
    )
    report = await priced.report(priced.parse_period("all"))
    assert report.cost is not None and report.outcomes.resolved == 1
    # 3 model calls of 10 prompt + 5 completion tokens: 30 x 0.1 + 15 x 0.2
    assert report.cost.amount == pytest.approx(6.0)
    lines = render_table(report, "en")[0].splitlines()
    assert kv("per resolved question", "≈ 6.00 USD") in lines
    assert "   all of it ÷ 1 resolved" in lines
    ru = render_table(report, "ru")[0].splitlines()
    assert kv("за решённый вопрос", "≈ 6,00 USD") in ru

    unpriced = await (await stack.stats()).report(priced.parse_period("all"))
    assert "per resolved question" not in "\n".join(render_table(unpriced, "en"))


async def test_a_dislike_a_repeat_or_a_handoff_unresolves_it(stack: Stack) -> None:
    first = await stack.service.answer(CUSTOMER, "Где мой заказ 8041?")
    # asked again in other words: the first answer did not do it
    again = await stack.service.answer(CUSTOMER, "где заказ 8041???")
    outcomes = await _outcomes(stack.db)
    assert outcomes[1][2] == first.turn_id
    service = await stack.stats()
    figures = (await service.report(service.parse_period("all"))).outcomes
    assert (figures.resolved, figures.repeated) == (1, 1)  # the repeat itself stands

    feedback = FeedbackRepository(stack.db)
    answer = await feedback.answer(again.turn_id)
    assert answer is not None
    await feedback.record(answer, user_id=CUSTOMER.key, rating=-1, rated_at=answer.started_at)
    figures = (await service.report(service.parse_period("all"))).outcomes
    assert (figures.resolved, figures.disliked) == (0, 1)

    other = Caller(key=21, chat_id=21, private_chat=True)
    await stack.service.answer(other, "Где заказ 8041?")
    assert (await service.report(service.parse_period("all"))).outcomes.resolved == 1
    await HandoffRepository(stack.db).open(other.chat_id, source="command", reason=None)
    figures = (await service.report(service.parse_period("all"))).outcomes
    assert (figures.resolved, figures.handed_off_later) == (0, 1)


async def test_a_different_question_is_not_a_repeat(stack: Stack) -> None:
    await stack.service.answer(CUSTOMER, "Где мой заказ 8041?")
    await stack.service.answer(CUSTOMER, "Сколько стоит доставка в Казань?")
    assert [r for _, _, r in await _outcomes(stack.db)] == [None, None]


async def test_export_masks_the_customers_data_unless_asked(
    stack: Stack, db_backend: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    await stack.service.answer(CUSTOMER, "Привет, я Анна Смирнова, мой телефон +7 912 345-67-89")
    await stack.service.answer(CUSTOMER, "Где мой заказ 8041?")
    masked = [c async for c in conversations(OutcomeRepository(stack.db), since=0.0)]
    [conversation] = masked
    dumped = json.dumps(conversation, ensure_ascii=False)
    for private in ("Анна", "Смирнова", "912", "8041"):
        assert private not in dumped, private
    assert conversation["chat"].startswith("chat-")  # a pseudonym, not the chat id
    roles = [m["role"] for m in conversation["messages"]]
    assert roles == ["customer", "bot", "customer", "tool", "bot"]
    assert conversation["messages"][3] == {
        "at": conversation["messages"][3]["at"],
        "role": "tool",
        "tool": "get_order_status",
        "status": "success",
    }
    assert [m.get("outcome") for m in conversation["messages"] if m["role"] == "customer"] == [
        "no_facts",
        "facts",
    ]
    [plain] = [c async for c in conversations(OutcomeRepository(stack.db), since=0.0, masked=False)]
    assert plain["chat"] == CUSTOMER.chat_id and "Анна Смирнова" in json.dumps(
        plain, ensure_ascii=False
    )
    if db_backend != "sqlite":
        return
    # the command: a file of JSON Lines, masked by default; a bad date is one line
    monkeypatch.setenv("DATABASE_PATH", str(tmp_path / "test.sqlite3"))
    out = tmp_path / "export.jsonl"
    args = argparse.Namespace(since="2000-01-01", output=str(out), unmasked=False, language="ru")
    assert await run_export(args) == 0
    [line] = out.read_text(encoding="utf-8").splitlines()
    assert "[телефон]" in line and "912" not in line
    bad = argparse.Namespace(since="yesterday", output=None, unmasked=False, language="en")
    assert await run_export(bad) == 2


async def test_simulate_from_gaps_writes_a_scenario_per_group(
    stack: Stack, db_backend: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    await stack.service.answer(CUSTOMER, "Делаете гравировку на кружках? Я Анна Смирнова")
    await stack.service.answer(CUSTOMER, "Привет")
    if db_backend != "sqlite":
        return
    monkeypatch.setenv("DATABASE_PATH", str(tmp_path / "test.sqlite3"))
    out = tmp_path / "gaps.toml"
    args = argparse.Namespace(from_feedback=False, from_gaps=True, out=out)
    assert await write_drafts(args) == 0
    written = out.read_text(encoding="utf-8")
    scenarios = load_scenarios([out])
    [scenario] = scenarios
    assert scenario.turns == ["Делаете гравировку на кружках? Я [имя]"]
    assert "Анна" not in written


async def test_every_page_of_a_conversation_is_recorded_before_it_is_read(stack: Stack) -> None:
    """/chat's first page, then "◀ Older" back to the start: each page an admin reads is
    one `conversation_views` row (who, which chat, from where), the oldest page ends."""
    questions = [f"Где мой заказ 804{i}?" for i in range(8)]
    for text in questions:
        await stack.service.answer(CUSTOMER, text)
    reader = ConversationReader(OutcomeRepository(stack.db))
    newest = await reader.read(CUSTOMER.chat_id, admin_id=7, via="chat")
    assert newest is not None and newest.older is not None
    said = [line.text for line in newest.lines if line.kind == "user"]
    assert said == questions[2:]  # 12 messages: the last 6 questions with their answers
    assert any(line.kind == "tool" and line.text == "get_order_status" for line in newest.lines)
    oldest = await reader.read(CUSTOMER.chat_id, admin_id=7, via="page", before=newest.older)
    assert oldest is not None and oldest.older is None
    assert [line.text for line in oldest.lines if line.kind == "user"] == questions[:2]
    views = await stack.db.fetch_all(
        "SELECT admin_id, chat_id, via FROM conversation_views ORDER BY id"
    )
    assert [tuple(v) for v in views] == [
        (7, CUSTOMER.chat_id, "chat"),
        (7, CUSTOMER.chat_id, "page"),
    ]
    # a chat the bot never talked in: nothing to read, nothing recorded
    assert await reader.read(99, admin_id=7, via="chat") is None
    assert len(await stack.db.fetch_all("SELECT 1 FROM conversation_views")) == 2


async def test_the_weekly_digest_is_claimed_once_per_week(stack: Stack) -> None:
    """Several instances each check the week; the first claim sends it, the others not."""
    assert await claim_digest(stack.db, "2026-W49", 1000.0) is True
    assert await claim_digest(stack.db, "2026-W49", 1001.0) is False
    assert await claim_digest(stack.db, "2026-W50", 1002.0) is True


async def test_a_day_later_the_same_question_is_a_new_one(stack: Stack) -> None:
    """The 24 h rule both ways: asked again 25 h later it is no repeat, both answers stay
    resolved; a handoff now unresolves only the answer of the last 24 h."""
    await stack.service.answer(CUSTOMER, "Где мой заказ 8041?")
    day = 25 * 3600
    await stack.db.write("UPDATE turns SET started_at = started_at - ?", (day,))
    await stack.service.answer(CUSTOMER, "Где мой заказ 8041?")
    assert [r for _, _, r in await _outcomes(stack.db)] == [None, None]
    service = await stack.stats()
    figures = (await service.report(service.parse_period("all"))).outcomes
    assert (figures.resolved, figures.repeated) == (2, 0)
    await HandoffRepository(stack.db).open(CUSTOMER.chat_id, source="command", reason=None)
    figures = (await service.report(service.parse_period("all"))).outcomes
    assert (figures.resolved, figures.handed_off_later) == (1, 1)
