"""Webhook against polling, like for like, on a machine whose speed drifts.

Phases that run one after another on a shared machine drift: in our runs the same
phase's CPU per turn moved by 10-25 % within half an hour (docs/benchmarks.md), more than
the two modes differ, so whichever mode ran first in a run tended to win it. `--only
modes` therefore runs fresh bots in ABBA order — webhook, polling, polling, webhook,
repeated `--pairs` times — each doing the same work (the 50-chat latency phase, then the
1,000-chat load), and compares each mode's mean: a drift that is steady over the run adds
the same to both means.
"""

from __future__ import annotations

import statistics
from typing import Any

from bench.instances import BenchLike

MODES = ("webhook", "polling")


def abba_order(pairs: int) -> list[str]:
    """webhook, polling, polling, webhook, webhook, polling, ... — `pairs` runs of each."""
    order: list[str] = []
    for pair in range(pairs):
        order.extend(MODES if pair % 2 == 0 else reversed(MODES))
    return order


async def phase_modes(bench: BenchLike, plan: Any, *, pairs: int = 2) -> dict[str, Any]:
    """Every run of `abba_order(pairs)` on a fresh bot; then the means per mode."""
    runs: list[dict[str, Any]] = []
    for number, mode in enumerate(abba_order(pairs), start=1):
        run = await bench.start_bot(f"modes-{number}-{mode}", webhook=mode == "webhook")
        r: dict[str, Any] = {"mode": mode, "startup": run.startup}
        r["latency"] = await bench.closed_loop(
            run, "latency", range(1, plan.latency_chats + 1), plan.latency_messages
        )
        r["load"] = await bench.closed_loop(
            run, "load", range(200_001, 200_001 + plan.load_chats), plan.load_messages
        )
        r["exit_code"] = await bench.stop_bot(run)
        runs.append(r)
    return {
        "order": [r["mode"] for r in runs],
        "load_chats": plan.load_chats,
        "runs": runs,
        "means": mode_means(runs),
    }


def mode_means(runs: list[dict[str, Any]]) -> dict[str, dict[str, float]]:
    """Per mode: the mean of each run's numbers, and the errors summed."""
    means: dict[str, dict[str, float]] = {}
    for mode in MODES:
        mine = [r for r in runs if r["mode"] == mode]
        if not mine:
            continue
        means[mode] = {
            "runs": len(mine),
            "turns_per_s": statistics.fmean(r["load"]["throughput"]["overall"] for r in mine),
            "steady_turns_per_s": statistics.fmean(r["load"]["throughput"]["steady"] for r in mine),
            "cpu_ms_per_turn": statistics.fmean(r["load"]["cpu_ms_per_turn"] for r in mine),
            "self_p50_ms": statistics.fmean(r["latency"]["self_ms"]["p50"] for r in mine),
            "self_p99_ms": statistics.fmean(r["latency"]["self_ms"]["p99"] for r in mine),
            "errors": sum(
                r["load"]["errors"]
                + r["load"]["order_violations"]
                + r["latency"]["errors"]
                + r["latency"]["order_violations"]
                for r in mine
            ),
        }
    return means


def pair_ratios(runs: list[dict[str, Any]]) -> list[dict[str, float]]:
    """Each ABBA pair (runs 1-2, 3-4, ...): webhook / polling turns/s and CPU per turn."""
    ratios: list[dict[str, float]] = []
    for first, second in zip(runs[0::2], runs[1::2], strict=False):
        by_mode = {first["mode"]: first["load"], second["mode"]: second["load"]}
        if set(by_mode) != set(MODES):
            continue
        w, p = by_mode["webhook"], by_mode["polling"]
        ratios.append(
            {
                "turns_per_s": w["throughput"]["overall"] / p["throughput"]["overall"],
                "cpu_per_turn": w["cpu_ms_per_turn"] / p["cpu_ms_per_turn"],
            }
        )
    return ratios


def modes_rows(runs: dict[str, Any]) -> list[tuple[str, str, bool | None]]:
    """The comparison issue 19 asks for, from `--only modes`."""
    data = runs.get("modes")
    if not data or set(data["means"]) != set(MODES):
        return []
    w, p = data["means"]["webhook"], data["means"]["polling"]
    each = ", ".join(
        f"{r['mode'][0]} {r['load']['throughput']['overall']:.1f}" for r in data["runs"]
    )
    pairs = pair_ratios(data["runs"])
    return [
        (
            "webhook / polling in every ABBA pair: turns/s >= 0.95 at <= 1.03x CPU per turn",
            "; ".join(
                f"pair {n}: {r['turns_per_s']:.3f} turns/s, {r['cpu_per_turn']:.3f} CPU"
                for n, r in enumerate(pairs, start=1)
            ),
            bool(pairs)
            and all(r["turns_per_s"] >= 0.95 and r["cpu_per_turn"] <= 1.03 for r in pairs),
        ),
        (
            f"(issue 19) webhook turns/s >= polling turns/s at {data['load_chats']} chats "
            f"(ABBA, {int(w['runs'])} fresh bots each, means)",
            f"webhook {w['turns_per_s']:.1f} vs polling {p['turns_per_s']:.1f} turns/s "
            f"(steady {w['steady_turns_per_s']:.1f} vs {p['steady_turns_per_s']:.1f}; "
            f"runs in order: {each}); CPU per turn {w['cpu_ms_per_turn']:.2f} vs "
            f"{p['cpu_ms_per_turn']:.2f} ms; {int(w['errors'] + p['errors'])} errors",
            w["turns_per_s"] >= p["turns_per_s"] and w["errors"] + p["errors"] == 0,
        ),
        (
            "(issue 19) bot self-time at the latency phase's chats, webhook vs polling "
            "(means of p50 / p99)",
            f"webhook {w['self_p50_ms']:.1f} / {w['self_p99_ms']:.1f} ms, "
            f"polling {p['self_p50_ms']:.1f} / {p['self_p99_ms']:.1f} ms",
            None,
        ),
    ]
