"""`--only knowledge`: the run order, the verdict from its runs, and the fake model's
knowledge script (no processes, no timings)."""

from __future__ import annotations

from typing import Any

from bench.driver import (
    FAQ_QUESTIONS,
    KNOWLEDGE_KINDS,
    marker,
    mixed_kinds,
    question,
    reply_matches,
)
from bench.knowledge_turns import SETTINGS, _means, abba, knowledge_rows
from tests.fakes.openai_server import _wanted_calls


def run(setting: str, turns_per_s: float, *, errors: int = 0) -> dict[str, Any]:
    load = {
        "throughput": {"overall": turns_per_s},
        "cpu_ms_per_turn": 1000 / turns_per_s,
        "errors": errors,
        "order_violations": 0,
    }
    return {"setting": setting, "load": load}


def rows(runs: list[dict[str, Any]]) -> list[tuple[str, str, bool | None]]:
    return knowledge_rows({"knowledge": {"chats": 1000, "runs": runs, "means": _means(runs)}})


def test_each_setting_runs_as_often_and_as_early_on_average() -> None:
    order = abba(2)
    assert order == ["on", "off", "on-distinct", "on-distinct", "off", "on"]
    positions = {s: [i for i, x in enumerate(order) if x == s] for s in SETTINGS}
    assert {sum(p) for p in positions.values()} == {5}


def test_knowledge_on_passes_within_ten_percent_of_off_and_never_with_errors() -> None:
    # the machine slows by 6 turns/s per run; "on" costs 5 %, "on-distinct" 20 %
    speeds = {"on": 0.95, "off": 1.0, "on-distinct": 0.8}
    runs = [run(s, (130 - 6 * i) * speeds[s]) for i, s in enumerate(abba(2))]
    on, distinct = rows(runs)
    assert on[2] is True and distinct[2] is False
    assert "95.0%" in on[1]
    runs[0] = run("on", 200, errors=1)
    assert rows(runs)[0][2] is False


def test_a_quarter_of_the_questions_ask_about_delivery_in_varied_words() -> None:
    kinds = [k for chat in range(1, 101) for k in mixed_kinds(chat, 4, KNOWLEDGE_KINDS)]
    assert kinds.count("faq") == len(kinds) // 4
    asked = {question("faq", "8041", "", variant=chat).strip() for chat in range(100)}
    assert asked == set(FAQ_QUESTIONS)


def test_the_knowledge_script_searches_the_customer_s_words_not_the_marker() -> None:
    text = question("faq", "8041", marker(1234), variant=0)
    assert _wanted_calls(text) == [("get_shop_info", {"topic": "доставка"})]
    assert _wanted_calls(text, search="words") == [
        ("search_knowledge", {"query": FAQ_QUESTIONS[0]})
    ]
    assert _wanted_calls(text, search="verbatim") == [("search_knowledge", {"query": text})]
    # an order question still asks for the order, whatever the script
    order = question("one", "8041", marker(7))
    assert _wanted_calls(order, search="words") == _wanted_calls(order)


def test_a_delivery_answer_counts_only_when_it_quotes_something_found() -> None:
    assert reply_matches("faq", "8041", "По данным магазина: доставка: 300 ₽ по Москве")
    assert reply_matches("faq", "8041", "По данным магазина: Destination | Carrier | Price")
    assert not reply_matches("faq", "8041", 'По данным магазина: не найдено: {"query": "…"}')
    assert not reply_matches("faq", "8041", "По данным магазина: нет сведений, я не знаю ответа")
    assert not reply_matches("faq", "8041", "Здравствуйте! Чем могу помочь?")
