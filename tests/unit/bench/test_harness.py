"""The bench's own arithmetic and its question markers (no processes, no timings)."""

from __future__ import annotations

import math

from bench.analysis import MARKER_RE, _union_ms, model_time_by_marker, percentile
from bench.driver import KINDS, marker, question, reply_matches
from tests.fakes.openai_server import _wanted_calls


def test_markers_are_unique_and_invisible_to_the_fake_models_keywords() -> None:
    tags = [marker(n) for n in range(5000)]
    assert len(set(tags)) == len(tags)
    for n, tag in enumerate(tags[:500]):
        kind = KINDS[n % 3]
        text = question(kind, "8041", tag)
        assert MARKER_RE.search(text).group(1) == tag  # type: ignore[union-attr]
        # the marker adds no tool call: only the question's own words decide
        assert _wanted_calls(text) == _wanted_calls(question(kind, "8041", ""))


def test_replies_are_told_apart_by_kind_and_order_number() -> None:
    assert reply_matches("greet", "8041", "Здравствуйте! Чем могу помочь?")
    assert reply_matches("one", "2001", 'По данным магазина: {"order_id": "2001"}')
    assert not reply_matches("one", "2002", 'По данным магазина: {"order_id": "2001"}')
    two = 'По данным магазина: {"order_id": "7718"}; {"product": "кофемашина"}'
    assert reply_matches("two", "7718", two)
    assert not reply_matches("one", "7718", two)
    assert not reply_matches("two", "7718", "Сервис временно недоступен")


def test_parallel_tool_time_counts_once() -> None:
    # two calls overlapping for 1 s of 1.5 s, then a later call of 0.5 s
    assert math.isclose(_union_ms([(0.0, 1.0), (0.5, 1.5), (3.0, 3.5)]), 2000.0)


def test_model_time_groups_chat_requests_by_marker_and_skips_summaries() -> None:
    records = [
        {
            "tools": True,
            "last_user": "Где заказ 8041? #bc",
            "model_ms": 1000.0,
            "arrived": 1.0,
            "prompt_chars": 400,
            "tools_chars": 0,
            "messages": 2,
        },
        {
            "tools": True,
            "last_user": "Где заказ 8041? #bc",
            "model_ms": 1001.0,
            "arrived": 2.0,
            "prompt_chars": 800,
            "tools_chars": 0,
            "messages": 4,
        },
        {
            "tools": False,
            "last_user": "Где заказ 8041? #bc",
            "model_ms": 900.0,
            "arrived": 3.0,
            "prompt_chars": 50,
            "tools_chars": 0,
            "messages": 2,
        },
    ]
    times = model_time_by_marker(records)
    assert times["#bc"].round_trips == 2
    assert times["#bc"].model_ms == 2001.0
    assert times["#bc"].first_prompt_tokens == 100 + 8


def test_percentile_is_nearest_rank() -> None:
    values = [float(v) for v in range(1, 101)]
    assert percentile(values, 50) == 50.0
    assert percentile(values, 99) == 99.0
    assert math.isnan(percentile([], 50))


def test_prompt_parts_split_a_request_the_way_the_bot_builds_it() -> None:
    from services.chat import summary_block
    from services.prompt_parts import prompt_parts as parts_of

    messages = [
        {"role": "system", "content": "instruction"},
        {"role": "system", "content": summary_block("earlier facts")},
        {"role": "user", "content": "old question"},
        {"role": "assistant", "content": "old answer"},
        {"role": "user", "content": "new question"},
        {"role": "assistant", "content": None, "tool_calls": [{"id": "c1"}]},
        {"role": "tool", "content": '{"ok": true}'},
    ]
    one = lambda text: 1  # noqa: E731 - every message costs 1 + 4
    parts = parts_of(messages, [{"name": "tool"}], one)  # type: ignore[arg-type]
    assert parts == {"instruction": 5, "tools": 1, "summary": 5, "history": 10, "turn": 15}
