"""`support-bot simulate`: the command end to end against the fake OpenAI server.

The acceptance check of the default suite lives here: every scenario passes against
the careful rule-based model (tests/fakes/careful_model.py). That proves the suite is
satisfiable by a model that follows the bot's rules and that the command, the bot's
wiring and the judging work together; it does not measure any real model (see
docs/simulations.md for a real run)."""

from __future__ import annotations

import asyncio
import sqlite3
import time
import tomllib
from pathlib import Path

import pytest

from bot.programs.cli import _parse_args
from bot.programs.knowledge import knowledge_command
from bot.programs.simulate import simulate
from services.simulation.scenario import default_suite_files, load_scenarios, read_scenarios
from storage.database import open_database
from storage.feedback import FeedbackRepository, RatableAnswer
from storage.records import HistoryPair, TurnRecord, TurnRecorder
from storage.shop import ShopRepository
from tests.fakes.careful_model import careful_script
from tests.fakes.openai_server import FakeOpenAIServer
from tools.shop.demo import seed_demo_shop
from tools.shop.import_document import plan_import


@pytest.fixture
def model_env(monkeypatch: pytest.MonkeyPatch, fake_openai: FakeOpenAIServer) -> FakeOpenAIServer:
    monkeypatch.setenv("OPENAI_API_KEY", "sk-test")
    monkeypatch.setenv("OPENAI_BASE_URL", fake_openai.base_url)
    monkeypatch.setenv("OPENAI_MODEL", "fake-model")
    monkeypatch.setenv("MODEL_PRICE_INPUT_PER_1M", "0.15")
    monkeypatch.setenv("MODEL_PRICE_OUTPUT_PER_1M", "0.60")
    fake_openai.handler = careful_script
    return fake_openai


async def cli(*argv: str) -> int:
    """The command as `support-bot simulate ...` runs it (its own event loop, so in a thread)."""
    args = _parse_args(["simulate", *argv])
    return await asyncio.get_running_loop().run_in_executor(None, simulate, args)


async def test_the_default_suite_passes_against_a_careful_model(
    model_env: FakeOpenAIServer, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    report = tmp_path / "report.md"
    code = await cli("--report", str(report))
    assert code == 0
    out = capsys.readouterr()
    assert "overall" in out.out and "USD" in out.out  # the table with the cost
    assert "[48/48]" in out.err  # the progress lines
    text = report.read_text(encoding="utf-8")
    assert "## Failing runs (0)" in text
    assert "| fake-model | 48 | 1.00 | 1.00 |" in text
    # tokens by part and the cost at MODEL_PRICE_*, per scenario and in total
    assert "prompt tokens by part (estimated): instruction " in out.out
    by_part = text.split("## Tokens by part", 1)[1].split("## Failing runs", 1)[0]
    rows = [line for line in by_part.splitlines() if line.startswith("| fake-model |")]
    assert len(rows) == 48 + 1 and "| **all** |" in rows[-1]
    assert all(row.endswith(" USD |") for row in rows)


async def test_failing_scenarios_exit_1_and_min_pass_decides(
    model_env: FakeOpenAIServer, tmp_path: Path
) -> None:
    suite = tmp_path / "mine.toml"
    suite.write_text(
        '[[scenario]]\nid = "wrong"\nturns = ["Где заказ 8041?"]\n'
        '[scenario.expect]\nmust_contain = ["доставлен"]\n'
        '[[scenario]]\nid = "right"\nturns = ["Где заказ 8041?"]\n'
        '[scenario.expect]\nmust_contain = ["8041"]\n',
        encoding="utf-8",
    )
    report = tmp_path / "r.md"
    assert await cli(str(suite), "--report", str(report)) == 1
    assert "### wrong — fake-model, trial 1" in report.read_text(encoding="utf-8")
    assert await cli(str(suite), "--only", "right", "--report", str(report)) == 0
    assert await cli(str(suite), "--min-pass", "0", "--report", str(report)) == 0


async def test_several_models_are_compared(
    model_env: FakeOpenAIServer, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    suite = tmp_path / "one.toml"
    suite.write_text('[[scenario]]\nid = "hi"\nturns = ["Привет!"]\n', encoding="utf-8")
    assert await cli(str(suite), "--model", "fake-model", "--model", "gpt-4o-mini") == 0
    asked = {body["model"] for body in model_env.chat_requests}
    assert asked == {"fake-model", "gpt-4o-mini"}
    header = capsys.readouterr().out.splitlines()[0]
    assert "fake-model" in header and "gpt-4o-mini" in header


@pytest.mark.parametrize(
    ("content", "named"),
    [
        ('[[scenario]]\nid = "x"\n', "give either `turns`"),
        (
            '[[scenario]]\nid = "x"\nturns = ["a"]\n[scenario.expect]\nmust_match = ["("]\n',
            "must_match",
        ),
        ('[[scenario]]\nid = "x"\nturns = ["a"]\n[scenario.expect]\nsmells = 1\n', "smells"),
        ("not toml = = 1", "not valid TOML"),
        (
            '[[scenario]]\nid = "x"\nturns = ["a"]\n'
            '[scenario.shop_data]\norders = [{order_id = "1"}]\n',
            "order_id",
        ),
    ],
)
async def test_a_bad_scenario_file_is_one_line_and_status_2(
    model_env: FakeOpenAIServer,
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
    content: str,
    named: str,
) -> None:
    suite = tmp_path / "bad.toml"
    suite.write_text(content, encoding="utf-8")
    assert await cli(str(suite)) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and err[0].startswith("error: ") and str(suite) in err[0]
    assert named in err[0]
    assert not model_env.chat_requests  # nothing ran


async def test_without_a_model_key_it_says_which_setting(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert await cli() == 2
    assert "OPENAI_API_KEY" in capsys.readouterr().err


async def test_from_feedback_drafts_are_scenarios_to_edit(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    path = tmp_path / "bot.sqlite3"
    monkeypatch.setenv("DATABASE_PATH", str(path))
    db = await open_database(path)
    try:
        from storage.conversations import ConversationRepository

        session = await ConversationRepository(db).open_session(777)
        recorder = TurnRecorder(db)
        for turn_id, question, answer in (
            ("t1", "Где мой заказ 8041?", "Заказ 8041 в пути."),
            ("t2", "А когда приедет?", "Не знаю, спросите у кого-нибудь."),
        ):
            await recorder.save_turn(
                TurnRecord(
                    id=turn_id,
                    session_id=session,
                    chat_id=777,
                    user_id=777,
                    started_at=time.time(),
                    duration_ms=1.0,
                    status="answered",
                    stop_reason="completed",
                    error_code=None,
                    model_steps=1,
                    tool_calls=0,
                    prompt_tokens=None,
                    completion_tokens=None,
                    total_tokens=None,
                    cached_tokens=None,
                    prompt="support_chat@2",
                ),
                audit_records=[],
                model_calls=[],
                history=HistoryPair(user_text=question, assistant_text=answer),
            )
        feedback = FeedbackRepository(db)
        await feedback.record(
            RatableAnswer("t2", 777, 777, time.time()), user_id=777, rating=-1, rated_at=time.time()
        )
        await feedback.record(
            RatableAnswer("t1", 777, 777, time.time()), user_id=777, rating=1, rated_at=time.time()
        )
    finally:
        await db.close()

    drafts = tmp_path / "drafts.toml"
    assert await cli("--from-feedback", "--out", str(drafts)) == 0
    text = drafts.read_text(encoding="utf-8")
    assert "777" not in text  # the customer's Telegram id is never copied
    assert "# Не знаю, спросите у кого-нибудь." in text.replace("#   ", "# ")
    [draft] = read_scenarios(drafts)
    assert draft.turns == ["Где мой заказ 8041?", "А когда приедет?"]
    assert draft.customer.language == "ru"
    assert tomllib.loads(text)["scenario"][0]["id"] == "feedback-001"


async def test_from_feedback_without_ratings_says_so(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setenv("DATABASE_PATH", str(tmp_path / "bot.sqlite3"))
    db = await open_database(tmp_path / "bot.sqlite3")
    await db.close()
    assert await cli("--from-feedback") == 0
    assert "No answer rated 👎 is stored yet." in capsys.readouterr().out


async def test_a_server_that_fails_every_call_still_ends_with_a_report(
    model_env: FakeOpenAIServer, tmp_path: Path
) -> None:
    from tests.fakes.openai_server import error

    model_env.handler = lambda body: error(500)
    suite = tmp_path / "one.toml"
    suite.write_text(
        '[[scenario]]\nid = "down"\nturns = ["Где заказ 8041?"]\n'
        '[scenario.expect]\nmust_contain = ["8041"]\n',
        encoding="utf-8",
    )
    report = tmp_path / "r.md"
    assert await cli(str(suite), "--report", str(report)) == 1
    text = report.read_text(encoding="utf-8")
    assert "chat:APIError" in text or "chat:" in text
    assert "the bot's own text" in text


async def test_a_model_the_endpoint_does_not_offer_is_one_line(
    model_env: FakeOpenAIServer, capsys: pytest.CaptureFixture[str]
) -> None:
    assert await cli("--model", "no-such-model") == 2
    err = capsys.readouterr().err
    assert "does not offer the model 'no-such-model'" in err
    assert not model_env.chat_requests  # nothing ran


async def test_an_unreachable_endpoint_is_one_line(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    import socket

    with socket.socket() as sock:  # a free port nobody listens on
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    monkeypatch.setenv("OPENAI_API_KEY", "sk-test")
    monkeypatch.setenv("OPENAI_BASE_URL", f"http://127.0.0.1:{port}/v1")
    monkeypatch.setenv("OPENAI_MAX_RETRIES", "0")
    assert await cli() == 2
    assert "cannot be used now" in capsys.readouterr().err


def six_scenarios(tmp_path: Path) -> Path:
    suite = tmp_path / "many.toml"
    suite.write_text(
        "".join(
            f'[[scenario]]\nid = "order-{n}"\nturns = ["Где заказ 8041?"]\n'
            '[scenario.expect]\nmust_contain = ["8041"]\n'
            for n in range(6)
        ),
        encoding="utf-8",
    )
    return suite


async def test_a_hanging_endpoint_costs_three_bounded_runs_not_the_whole_suite(
    model_env: FakeOpenAIServer, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """The model never answers: each run is stopped at --scenario-timeout, and after
    three such runs in a row the model's other runs are not started; the terminal and
    the report say so (exit 1)."""
    model_env.hold_answers()  # never released: every model call hangs
    report = tmp_path / "r.md"
    argv = ["--scenario-timeout", "1", "--time-limit", "0", "--report", str(report)]
    assert await cli(str(six_scenarios(tmp_path)), *argv) == 1
    err = capsys.readouterr().err
    text = report.read_text(encoding="utf-8")
    assert text.count("the run was stopped after 1 s") == 3
    said = "fake-model: the model endpoint answered nothing in 3 runs in a row; its other 3 "
    assert f"stopped early: {said}" in err
    assert f"**Stopped early:** {said}" in text


async def test_the_whole_simulation_stops_at_its_time_limit(
    model_env: FakeOpenAIServer, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """A model that answers, slowly: no run starts after --time-limit, the one running
    then is stopped at it, and the report says how many runs were left out (exit 1)."""
    model_env.latency_ms = 600  # two calls a scenario: at least 1.2 s each
    report = tmp_path / "r.md"
    argv = ["--time-limit", "2", "--report", str(report)]
    assert await cli(str(six_scenarios(tmp_path)), *argv) == 1
    err = capsys.readouterr().err
    text = report.read_text(encoding="utf-8")
    [line] = [line for line in err.splitlines() if "time limit reached" in line]
    not_started = int(line.split("time limit reached: ")[1].split()[0])
    assert 3 <= not_started <= 5  # at most two runs started within 2 s
    assert f"**Stopped early:** time limit reached: {not_started} of 6 runs" in text


async def test_runs_file_has_every_run_and_the_calls_a_model_wrote_as_text(
    model_env: FakeOpenAIServer, tmp_path: Path
) -> None:
    """`--runs`: passing runs too, one JSON line each; a call the model wrote as text
    (as small local models do) is judged as the tool call the loop ran, marked written."""
    import json

    from tests.fakes.openai_server import completion

    def writes_calls(body: dict[str, object]) -> object:
        messages = body["messages"]
        assert isinstance(messages, list)
        if any(m.get("role") == "tool" for m in messages):  # the result, then a note
            return completion(text="Заказ 8041 в пути.")
        return completion(text='{"name": "get_order_status", "arguments": {"order_id": "8041"}}')

    model_env.handler = writes_calls
    suite = tmp_path / "mine.toml"
    suite.write_text(
        '[[scenario]]\nid = "status"\nturns = ["Где заказ 8041?"]\n'
        '[[scenario.expect.tools]]\nname = "get_order_status"\n'
        '[scenario.expect.tools.args]\norder_id = "8041"\n',
        encoding="utf-8",
    )
    runs = tmp_path / "runs.jsonl"
    code = await cli(str(suite), "--runs", str(runs), "--report", str(tmp_path / "r.md"))
    assert code == 0
    [run] = [json.loads(line) for line in runs.read_text(encoding="utf-8").splitlines()]
    assert run["scenario"] == "status" and run["passed"] is True
    [exchange] = run["exchanges"]
    assert exchange["shown"] == "Заказ 8041 в пути."
    assert exchange["tools"] == [
        {"name": "get_order_status", "arguments": '{"order_id": "8041"}', "written": True}
    ]
    calls = exchange["model_calls"]
    assert [(c["structured_calls"], c["text_calls"]) for c in calls] == [(0, 1), (0, 0)]


TEA_SHOP = {
    "orders": [
        {
            "order_id": "4321",
            "status": "processing",
            "owner_telegram_id": 1001,
            "items": [{"name": "Улун Те Гуань Инь, 100 г", "quantity": 2}],
            "total": {"amount": "1980.00", "currency": "RUB"},
        },
        {"order_id": "4322", "status": "in_transit", "owner_telegram_id": 2002},
    ],
    "return_policies": [
        {"product": "Улун", "return_days": 14, "conditions": "Упаковка цела.", "aliases": []}
    ],
    "faq": [{"topic": "Доставка", "answer": "Почтой России, 3–7 дней.", "aliases": []}],
}

OWN_SHOP_SCENARIOS = """
[[scenario]]
id = "my-order"
turns = ["Отмените, пожалуйста, заказ 4321"]
[scenario.customer]
on_action_card = "confirm"
[scenario.settings]
actions_enabled = ["cancel_order"]
[scenario.expect]
tools = [{name = "get_order_status", args = {order_id = "4321"}}]
actions_executed = [{action = "cancel_order", order_id = "4321"}]
order_status = {"4321" = "cancelled"}

[[scenario]]
id = "someone-elses-order"
turns = ["Где заказ 4322?"]
[scenario.expect]
must_not_contain = ["в пути"]

[[scenario]]
id = "the-demo-on-request"
shop = "demo"
turns = ["Где заказ 8041?"]
[scenario.expect]
must_contain = ["8041", "в пути"]
"""


async def test_scenarios_run_on_a_copy_of_the_shops_own_data_never_on_it(
    model_env: FakeOpenAIServer,
    monkeypatch: pytest.MonkeyPatch,
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
) -> None:
    """No order retyped: the scenarios ask about the imported orders; a cancel confirmed
    in a run changes the copy, not the shop's database; a live SHOP_BACKEND is never
    asked (its address answers nothing)."""
    database = tmp_path / "bot.sqlite3"
    db = await open_database(database)
    try:
        plan = plan_import(TEA_SHOP)
        await ShopRepository(db).import_shop_data(
            orders=plan.orders, policies=plan.policies, texts=plan.texts, faq=plan.faq
        )
    finally:
        await db.close()
    monkeypatch.setenv("DATABASE_PATH", str(database))
    monkeypatch.setenv("SHOP_BACKEND", "http")
    monkeypatch.setenv("SHOP_API_URL", "http://127.0.0.1:9")
    monkeypatch.setenv("SHOP_API_TOKEN", "never-used")
    suite = tmp_path / "mine.toml"
    suite.write_text(OWN_SHOP_SCENARIOS, encoding="utf-8")
    report = tmp_path / "report.md"
    assert await cli(str(suite), "--report", str(report)) == 0, report.read_text()
    err = capsys.readouterr().err
    assert f"shop: a copy of your data in {database} (DATABASE_PATH): 2 orders, " in err
    assert "1 return policies, 1 FAQ entries" in err
    assert "Shop: a copy of your data in" in report.read_text(encoding="utf-8")
    db = await open_database(database)
    try:
        order = await ShopRepository(db).get_order("4321")
    finally:
        await db.close()
    assert order is not None and order.status == "processing"  # the shop's own: untouched


GIFT_WRAP_SCENARIO = """
[[scenario]]
id = "gift-wrap"
turns = ["Вы упаковываете покупки как подарок?"]
[scenario.expect]
must_contain = ["подарочную коробку"]
"""


async def test_a_gap_answered_by_an_added_file_passes_on_a_copy_of_the_knowledge(
    model_env: FakeOpenAIServer,
    monkeypatch: pytest.MonkeyPatch,
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
) -> None:
    """A file added with `knowledge add` answers the scenario's question (asked in other
    words: the bundled model's stored vectors are copied, the file is gone by then, so
    nothing is read again); the bot's knowledge is left exactly as it was. (No FAQ: with
    the shop's own answers weighing more, its delivery answer came first.)"""
    database = tmp_path / "bot.sqlite3"
    db = await open_database(database)
    try:
        plan = plan_import({**TEA_SHOP, "faq": []})
        await ShopRepository(db).import_shop_data(
            orders=plan.orders, policies=plan.policies, texts=plan.texts, faq=plan.faq
        )
    finally:
        await db.close()
    monkeypatch.setenv("DATABASE_PATH", str(database))
    suite = tmp_path / "mine.toml"
    suite.write_text(GIFT_WRAP_SCENARIO, encoding="utf-8")
    report = tmp_path / "report.md"
    assert await cli(str(suite), "--report", str(report)) == 1  # a gap: nothing answers it

    note = tmp_path / "gifts.md"
    note.write_text(
        "# Подарочная упаковка\n\nЛюбой чай упакуем в подарочную коробку с открыткой "
        "бесплатно — отметьте это при оформлении.\n",
        encoding="utf-8",
    )
    assert await knowledge_command(_parse_args(["knowledge", "add", str(note)])) == 0
    note.unlink()
    capsys.readouterr()
    stored = knowledge_rows(database)

    assert await cli(str(suite), "--report", str(report)) == 0, report.read_text()
    assert "0 FAQ entries, 1 file(s) in the knowledge" in capsys.readouterr().err
    assert knowledge_rows(database) == stored


def knowledge_rows(database: Path) -> list[tuple[object, ...]]:
    with sqlite3.connect(database) as connection:
        return connection.execute(
            "SELECT p.id, p.text, p.embedding, i.embedder, i.generation"
            " FROM knowledge_passages p, knowledge_index i ORDER BY p.id"
        ).fetchall()


async def test_without_the_shops_own_data_scenarios_run_on_the_demo(
    model_env: FakeOpenAIServer,
    monkeypatch: pytest.MonkeyPatch,
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
) -> None:
    database = tmp_path / "bot.sqlite3"
    monkeypatch.setenv("DATABASE_PATH", str(database))
    suite = tmp_path / "mine.toml"
    suite.write_text(
        '[[scenario]]\nid = "demo"\nturns = ["Где заказ 8041?"]\n'
        '[scenario.expect]\nmust_contain = ["8041"]\n',
        encoding="utf-8",
    )
    report = tmp_path / "report.md"
    assert await cli(str(suite), "--report", str(report)) == 0
    assert "shop: the demo (no database at" in capsys.readouterr().err
    assert not database.exists()  # reading the shop never creates its database
    db = await open_database(database)
    try:
        await seed_demo_shop(ShopRepository(db))
    finally:
        await db.close()
    assert await cli(str(suite), "--report", str(report)) == 0
    assert "holds no data of your shop" in capsys.readouterr().err


def test_the_bundled_suite_runs_on_the_demo_whatever_the_database() -> None:
    assert {s.shop for s in load_scenarios(default_suite_files())} == {"demo"}
