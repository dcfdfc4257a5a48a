"""`--only modes`: the ABBA order and the verdict from its runs (no processes, no timings)."""

from __future__ import annotations

from typing import Any

from bench.modes import abba_order, mode_means, modes_rows, pair_ratios


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
