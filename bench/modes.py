"""Webhook against polling, like for like, on a machine whose speed drifts.

Phases that run one after another on a shared machine drift: in our runs the same
phase's CPU per turn moved by 10-25 % within half an hour (docs/benchmarks.md), more than
the two modes differ, so whichever mode ran first in a run tended to win it. `--only
modes` therefore runs fresh bots in ABBA order — webhook, polling, polling, webhook,
repeated `--pairs` times — each doing the same work (the 50-chat latency phase, then the
1,000-chat load), and compares each mode's mean: a drift that is steady over the run adds
the same to both means.

The machine's speed also moves within minutes, so a pair's two runs (2-3 minutes each)
can differ by 15 % with the same code. `--only modes-together` removes that: in each
pair a webhook bot and a polling bot run at the same time, each answering the same
customers' questions (half the load's chats) through its own fake Bot API, so both see
the same machine. Both start at once; the pairs alternate which one's customers the
driver sets going first. Each pair's turns/s are counted over the window in which both
bots were answering (the one that finishes first would otherwise leave the other the
whole machine).

`--control polling` (or `webhook`) runs the same pairs with two bots of one mode: the
pairs of identical bots show how far a pair scatters with no difference to find.
`--floor openai` (or `aiohttp`) pairs the bot (polling) with `bench.naive_bot`, the
support bot anyone would write first, calling the model through the SDK (or plain
aiohttp, the lean floor): what the bot's guarantees cost against it.
"""

from __future__ import annotations

import asyncio
import json
import statistics
from pathlib import Path
from typing import Any, NamedTuple

from bench.instances import BenchLike

MODES = ("webhook", "polling")
FLOOR_PROGRAM = "bench.naive_bot"
FLOOR_CLIENTS = ("openai", "aiohttp")  # how the floor bot calls the model


class Side(NamedTuple):
    """One bot of a side-by-side pair: how it takes updates, which program it is, and
    settings of its own."""

    webhook: bool
    program: str = "bot"
    env: tuple[tuple[str, str], ...] = ()


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


def pair_sides(control: str | None = None, *, floor: str | None = None) -> dict[str, Side]:
    """The two bots of a side-by-side pair, by name. Webhook against polling; with
    `control` two bots of that mode (named `<mode>-a`, `-b`); with `floor` (a model
    client of `FLOOR_CLIENTS`) the bot (polling) against the naive floor bot."""
    if floor is not None:
        if floor not in FLOOR_CLIENTS:
            raise ValueError(f"--floor takes one of {', '.join(FLOOR_CLIENTS)}, not {floor!r}")
        naive = Side(False, FLOOR_PROGRAM, (("NAIVE_MODEL_CLIENT", floor),))
        return {"bot": Side(webhook=False), f"naive-{floor}": naive}
    if control is None:
        return {mode: Side(webhook=mode == "webhook") for mode in MODES}
    if control not in MODES:
        raise ValueError(f"--control takes one of {', '.join(MODES)}, not {control!r}")
    return {f"{control}-{side}": Side(webhook=control == "webhook") for side in "ab"}


async def phase_modes_together(
    bench: BenchLike,
    plan: Any,
    *,
    pairs: int = 2,
    control: str | None = None,
    floor: str | None = None,
) -> dict[str, Any]:
    """`pairs` pairs of bots answering at the same time (see `pair_sides`)."""
    sides = pair_sides(control, floor=floor)
    chats = range(200_001, 200_001 + max(1, plan.load_chats // 2))
    results: list[dict[str, Any]] = []
    for number in range(1, pairs + 1):
        order = list(sides) if number % 2 else list(reversed(sides))
        started = await asyncio.gather(
            *(
                bench.start_bot(
                    f"together-{number}-{side}",
                    webhook=sides[side].webhook,
                    program=sides[side].program,
                    **dict(sides[side].env),
                )
                for side in order
            )
        )
        runs = dict(zip(order, started, strict=True))
        loads = await asyncio.gather(
            *(bench.closed_loop(runs[side], "load", chats, plan.load_messages) for side in order)
        )
        pair: dict[str, Any] = {
            "first": order[0],
            "load": dict(zip(order, loads, strict=True)),
        }
        pair["exit_codes"] = {side: await bench.stop_bot(runs[side]) for side in order}
        replies = {
            side: await asyncio.to_thread(
                reply_times, bench.out / f"turns-{runs[side].label}-load.jsonl"
            )
            for side in order
        }
        pair["both_answering"] = both_answering(replies)
        results.append(pair)
    return {
        "load_chats_each": len(chats),
        "sides": list(sides),
        "control": control,
        "floor": floor,
        "pairs": results,
    }


def reply_times(path: Path) -> list[tuple[float, float]]:
    """(sent, replied) per answered turn, from a phase's per-turn file."""
    times: list[tuple[float, float]] = []
    with open(path, encoding="utf-8") as rows:
        for line in rows:
            row = json.loads(line)
            times.append((row["sent_at"], row["sent_at"] + row["e2e_ms"] / 1000.0))
    return times


def both_answering(replies: dict[str, list[tuple[float, float]]]) -> dict[str, Any]:
    """Each mode's turns/s over the window in which both bots were answering: from the
    later first question to the earlier last reply."""
    if any(not times for times in replies.values()):
        return {}
    start = max(min(sent for sent, _ in times) for times in replies.values())
    end = min(max(replied for _, replied in times) for times in replies.values())
    seconds = end - start
    if seconds <= 0:
        return {}
    return {
        "seconds": seconds,
        "turns_per_s": {
            mode: sum(1 for _, replied in times if start < replied <= end) / seconds
            for mode, times in replies.items()
        },
    }


def together_rows(runs: dict[str, Any]) -> list[tuple[str, str, bool | None]]:
    """The first side against the second from `--only modes-together`: the goal's verdict
    for webhook against polling; for a control or the floor, the ratios alone (no
    verdict)."""
    data = runs.get("modes-together")
    if not data or not data["pairs"]:
        return []
    first, second = data.get("sides", MODES)
    measured: list[str] = []
    ratios: list[float] = []
    passed = True
    errors = 0
    for number, pair in enumerate(data["pairs"], start=1):
        a, b = pair["load"][first], pair["load"][second]
        window = pair["both_answering"]
        errors += a["errors"] + a["order_violations"] + b["errors"] + b["order_violations"]
        if not window:
            passed = False
            measured.append(f"pair {number}: no common window")
            continue
        turns = window["turns_per_s"][first] / window["turns_per_s"][second]
        cpu = a["cpu_ms_per_turn"] / b["cpu_ms_per_turn"]
        ratios.append(turns)
        passed = passed and turns >= 0.95 and cpu <= 1.03
        measured.append(
            f"pair {number} ({pair['first']} first): {turns:.3f} turns/s "
            f"({window['turns_per_s'][first]:.1f} vs {window['turns_per_s'][second]:.1f}"
            f" over {window['seconds']:.0f} s), {cpu:.3f} CPU "
            f"({a['cpu_ms_per_turn']:.2f} vs {b['cpu_ms_per_turn']:.2f} ms)"
        )
    spread = (
        f"; median {statistics.median(ratios):.3f}, range {min(ratios):.3f}-{max(ratios):.3f}"
        if ratios
        else ""
    )
    details = "; ".join(measured) + spread + f"; {errors} errors"
    if data.get("floor"):
        return [
            (
                f"the bot / the naive floor bot ({data['floor']} client) side by side (polling,"
                f" {data['load_chats_each']} chats each): turns/s and CPU per turn, the bot's"
                " over the floor's",
                details,
                None,
            )
        ]
    if data.get("control"):
        return [
            (
                f"control: {first} / {second} side by side ({data['load_chats_each']} chats "
                "each, the same bot twice): how far a pair scatters",
                details,
                None,
            )
        ]
    return [
        (
            f"webhook / polling side by side ({data['load_chats_each']} chats each), in every "
            "pair: turns/s >= 0.95 at <= 1.03x CPU per turn, 0 errors",
            details,
            passed and errors == 0,
        )
    ]


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
