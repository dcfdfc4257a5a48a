"""`--only modes` and `--only modes-together`: the order, the window both bots share and
the verdicts from their runs (no processes, no timings)."""

from __future__ import annotations

from typing import Any

from bench.modes import (
    FLOOR_PROGRAM,
    Side,
    abba_order,
    both_answering,
    mode_means,
    modes_rows,
    pair_ratios,
    pair_sides,
    together_rows,
)


def run(mode: str, turns_per_s: float, *, errors: int = 0) -> dict[str, Any]:
    load = {
        "throughput": {"overall": turns_per_s, "steady": turns_per_s + 1},
        "cpu_ms_per_turn": 1000 / turns_per_s,
        "errors": errors,
        "order_violations": 0,
    }
    latency = {"self_ms": {"p50": 5.0, "p99": 40.0}, "errors": 0, "order_violations": 0}
    return {"mode": mode, "load": load, "latency": latency}


def test_each_mode_runs_as_often_and_as_early_on_average() -> None:
    assert abba_order(1) == ["webhook", "polling"]
    assert abba_order(2) == ["webhook", "polling", "polling", "webhook"]
    order = abba_order(4)
    positions = {m: [i for i, x in enumerate(order) if x == m] for m in ("webhook", "polling")}
    assert len(positions["webhook"]) == len(positions["polling"]) == 4
    assert sum(positions["webhook"]) == sum(positions["polling"])


def test_a_steady_drift_does_not_decide_the_verdict() -> None:
    # the machine slows by 10 turns/s per run; both modes are equally fast
    runs = [run(m, 120 - 10 * i) for i, m in enumerate(abba_order(2))]
    means = mode_means(runs)
    assert means["webhook"]["turns_per_s"] == means["polling"]["turns_per_s"] == 105
    [_, verdict, _] = modes_rows({"modes": {"load_chats": 1000, "runs": runs, "means": means}})
    assert verdict[2] is True


def test_a_slower_webhook_or_any_error_fails_the_verdict() -> None:
    slower = [run("webhook", 100), run("polling", 110), run("polling", 110), run("webhook", 100)]
    failing = [run("webhook", 120, errors=1), run("polling", 110)]
    for runs in (slower, failing):
        data = {"modes": {"load_chats": 1000, "runs": runs, "means": mode_means(runs)}}
        assert modes_rows(data)[1][2] is False


def test_every_pair_must_reach_the_goal_not_only_the_mean() -> None:
    # the means are equal, but the second pair's webhook is 10 % slower
    runs = [run("webhook", 110), run("polling", 100), run("polling", 110), run("webhook", 99)]
    ratios = pair_ratios(runs)
    assert [round(r["turns_per_s"], 2) for r in ratios] == [1.1, 0.9]
    data = {"modes": {"load_chats": 1000, "runs": runs, "means": mode_means(runs)}}
    assert modes_rows(data)[0][2] is False
    even = [run("webhook", 100), run("polling", 100), run("polling", 100), run("webhook", 98)]
    data = {"modes": {"load_chats": 1000, "runs": even, "means": mode_means(even)}}
    assert modes_rows(data)[0][2] is True


def test_side_by_side_counts_only_the_window_both_bots_were_answering() -> None:
    # polling starts a second later and finishes at 10 s; the webhook goes on alone to 20 s
    webhook = [(0.0, float(t)) for t in range(1, 21)]  # a reply every second, 1..20
    polling = [(1.0, float(t)) for t in range(2, 11)]  # 2..10
    window = both_answering({"webhook": webhook, "polling": polling})
    assert window["seconds"] == 9.0  # from 1 s (the later start) to 10 s (the earlier end)
    assert window["turns_per_s"] == {"webhook": 1.0, "polling": 1.0}
    assert both_answering({"webhook": webhook, "polling": []}) == {}


def pair(webhook_turns_per_s: float, *, cpu_ratio: float = 1.0, errors: int = 0) -> dict[str, Any]:
    def load(cpu_ms: float, errors: int) -> dict[str, Any]:
        return {"cpu_ms_per_turn": cpu_ms, "errors": errors, "order_violations": 0}

    return {
        "first": "webhook",
        "load": {"webhook": load(10.0 * cpu_ratio, errors), "polling": load(10.0, 0)},
        "both_answering": {
            "seconds": 60.0,
            "turns_per_s": {"webhook": webhook_turns_per_s, "polling": 100.0},
        },
    }


def test_side_by_side_every_pair_must_reach_the_goal_with_no_errors() -> None:
    def verdict(*pairs: dict[str, Any]) -> bool | None:
        [row] = together_rows({"modes-together": {"load_chats_each": 500, "pairs": list(pairs)}})
        return row[2]

    assert verdict(pair(96.0), pair(101.0, cpu_ratio=1.03)) is True
    assert verdict(pair(110.0), pair(94.0)) is False  # one pair below 0.95
    assert verdict(pair(100.0), pair(100.0, cpu_ratio=1.05)) is False  # CPU per turn
    assert verdict(pair(100.0, errors=1)) is False
    assert together_rows({}) == []


def test_a_control_pairs_two_bots_of_one_mode_and_gives_no_verdict() -> None:
    assert pair_sides() == {"webhook": Side(webhook=True), "polling": Side(webhook=False)}
    assert pair_sides("polling") == {"polling-a": Side(False), "polling-b": Side(False)}
    assert pair_sides("webhook") == {"webhook-a": Side(True), "webhook-b": Side(True)}
    try:
        pair_sides("both")
    except ValueError as exc:
        assert "webhook, polling" in str(exc)
    else:
        raise AssertionError("an unknown mode was taken")

    def control_pair(a_turns_per_s: float) -> dict[str, Any]:
        load = {"cpu_ms_per_turn": 10.0, "errors": 0, "order_violations": 0}
        return {
            "first": "polling-a",
            "load": {"polling-a": load, "polling-b": load},
            "both_answering": {
                "seconds": 60.0,
                "turns_per_s": {"polling-a": a_turns_per_s, "polling-b": 100.0},
            },
        }

    data = {
        "load_chats_each": 500,
        "sides": ["polling-a", "polling-b"],
        "control": "polling",
        "pairs": [control_pair(97.0), control_pair(101.0), control_pair(90.0)],
    }
    [(label, measured, verdict)] = together_rows({"modes-together": data})
    assert label.startswith("control: polling-a / polling-b")
    assert "median 0.970, range 0.900-1.010" in measured
    assert verdict is None  # identical bots: nothing to pass or fail


def test_the_floor_pairs_the_polling_bot_with_the_naive_bot_and_gives_no_verdict() -> None:
    sides = pair_sides(floor="aiohttp")
    naive = Side(False, program=FLOOR_PROGRAM, env=(("NAIVE_MODEL_CLIENT", "aiohttp"),))
    assert sides == {"bot": Side(webhook=False), "naive-aiohttp": naive}
    try:
        pair_sides(floor="httpx")
    except ValueError as exc:
        assert "openai, aiohttp" in str(exc)
    else:
        raise AssertionError("an unknown client was taken")
    load = {"cpu_ms_per_turn": 10.0, "errors": 0, "order_violations": 0}
    floor_pair = {
        "first": "bot",
        "load": {"bot": {**load, "cpu_ms_per_turn": 8.0}, "naive-aiohttp": load},
        "both_answering": {
            "seconds": 60.0,
            "turns_per_s": {"bot": 110.0, "naive-aiohttp": 100.0},
        },
    }
    data = {"load_chats_each": 500, "sides": list(sides), "floor": "aiohttp", "pairs": [floor_pair]}
    [(label, measured, verdict)] = together_rows({"modes-together": data})
    assert label.startswith("the bot / the naive floor bot")
    assert "1.100 turns/s" in measured and "0.800 CPU" in measured
    assert verdict is None
