"""The streamed-answers scenario of the benchmark: `bench.run --only streaming`.

The fake model streams like a real one: 0.5 s to the first token, then 50 tokens/s, and
every text answer is padded to 300 words (a word is one streamed "token"); a request
that is not streamed is answered whole after the same generation time. Customers ask
greetings (one model step, so the answering step's first token is the request's arrival
+ 0.5 s on the fake's clock, the same machine's clock as everything else).

Measured, streaming on (the default) and off (`STREAM_ANSWERS=false`):
- at `latency_chats` chats: update → first visible sign (the "Thinking…" draft, or the
  typing indicator) p50; first draft with answer text − first-token time of the answering
  step, p50; update → final message (the whole answer), p50;
- at `load_chats` chats: throughput (turns/s), streaming on against off (target ≥ 90 %).
"""

from __future__ import annotations

import asyncio
import math
import time
from collections import defaultdict
from collections.abc import Sequence
from typing import Any, Protocol

import aiohttp

from bench.analysis import pcts, throughput
from bench.driver import Driver, Turn, closed_loop_chat
from bench.procs import sample

TOKENS_PER_S = 50.0
FIRST_TOKEN_MS = 500.0
ANSWER_WORDS = 300
STAGGER_S = 2.0


class BenchLike(Protocol):
    """What this scenario uses of bench.run.Bench (kept apart to keep run.py small)."""

    plan: Any
    _openai_root: str

    async def start_bot(self, label: str, **extra: Any) -> Any: ...
    async def stop_bot(self, run: Any) -> int | None: ...
    async def new_timings(self) -> list[dict[str, Any]]: ...
    def driver(self, run: Any) -> Driver: ...
    def _fakes_cpu(self, run: Any) -> float: ...


async def _configure_model(bench: BenchLike, **config: float) -> None:
    async with aiohttp.ClientSession() as http:
        async with http.post(f"{bench._openai_root}/_fake/config", json=config) as response:
            response.raise_for_status()


async def fetch_signs(telegram_url: str) -> list[dict[str, Any]]:
    """Every draft and typing indicator the fake Bot API has recorded, in order."""
    async with aiohttp.ClientSession() as http:
        async with http.get(f"{telegram_url}/_fake/signs?after=0") as response:
            result: list[dict[str, Any]] = (await response.json())["result"]
            return result


async def _closed_loop(
    bench: BenchLike, run: Any, chats: Sequence[int], messages: int
) -> tuple[list[Turn], list[dict[str, Any]]]:
    await bench.new_timings()
    deadline = time.monotonic() + bench.plan.phase_timeout_s
    async with bench.driver(run) as driver:
        await asyncio.gather(
            *(
                closed_loop_chat(
                    driver,
                    chat,
                    ["greet"] * messages,
                    deadline=deadline,
                    start_after_s=position * STAGGER_S / max(1, len(chats)),
                )
                for position, chat in enumerate(chats)
            )
        )
        turns = list(driver.turns)
    return turns, await bench.new_timings()


def _first_token_at(timings: list[dict[str, Any]]) -> dict[str, float]:
    """Marker → when the answering step's first token was due (arrival + 0.5 s)."""
    due: dict[str, float] = {}
    for record in timings:
        if not record.get("tools"):
            continue
        tag = next((w for w in str(record.get("last_user", "")).split() if w.startswith("#")), "")
        if tag:
            due[tag] = float(record["arrived"]) + FIRST_TOKEN_MS / 1000
    return due


def latency_figures(
    turns: list[Turn], timings: list[dict[str, Any]], signs: list[dict[str, Any]]
) -> dict[str, Any]:
    """Per turn: first visible sign, first answer text against the first token, the whole."""
    by_chat: dict[int, list[dict[str, Any]]] = defaultdict(list)
    for sign in signs:
        if isinstance(sign.get("chat_id"), int):
            by_chat[sign["chat_id"]].append(sign)
    first_token = _first_token_at(timings)
    first_sign_ms: list[float] = []
    text_after_token_ms: list[float] = []
    whole_ms: list[float] = []
    for turn in turns:
        if turn.reply_at is None or not turn.ok:
            continue
        whole_ms.append((turn.reply_at - turn.sent_at) * 1000)
        mine = [s for s in by_chat[turn.chat_id] if turn.sent_at <= s["at"] <= turn.reply_at]
        if mine:
            first_sign_ms.append((min(s["at"] for s in mine) - turn.sent_at) * 1000)
        texts = [s["at"] for s in mine if s["method"] == "sendMessageDraft" and s["text"]]
        token = first_token.get(turn.marker)
        if texts and token is not None:
            text_after_token_ms.append((min(texts) - token) * 1000)
    return {
        "turns": len(turns),
        "answered": sum(1 for t in turns if t.ok),
        "first_sign_ms": pcts(first_sign_ms),
        "first_text_after_first_token_ms": pcts(text_after_token_ms),
        "whole_answer_ms": pcts(whole_ms),
        "drafts": sum(1 for s in signs if s["method"] == "sendMessageDraft"),
        "typing": sum(1 for s in signs if s["method"] == "sendChatAction"),
    }


async def _one_setting(bench: BenchLike, label: str, **extra: str) -> dict[str, Any]:
    plan = bench.plan
    run = await bench.start_bot(label, **extra)
    result: dict[str, Any] = {"startup": run.startup}
    messages = max(2, plan.latency_messages // 3)  # 4 in the full run: 300 words take 6.5 s
    turns, timings = await _closed_loop(bench, run, range(1, plan.latency_chats + 1), messages)
    result["latency"] = latency_figures(turns, timings, await fetch_signs(run.telegram_url))
    load_chats = range(200_001, 200_001 + plan.load_chats)
    bot_before, fakes_before = sample(run.bot.pid).cpu_s, bench._fakes_cpu(run)
    turns, _ = await _closed_loop(bench, run, load_chats, max(2, plan.load_messages // 2))
    bot_cpu = sample(run.bot.pid).cpu_s - bot_before
    answered = sum(1 for t in turns if t.ok)
    result["load"] = {
        "planned": len(turns),
        "answered": answered,
        "bot_cpu_ms_per_turn": 1000 * bot_cpu / answered if answered else math.nan,
        "fakes_cpu_s": bench._fakes_cpu(run) - fakes_before,
        "throughput": throughput(turns),
        "whole_answer_ms": pcts(
            [(t.reply_at - t.sent_at) * 1000 for t in turns if t.reply_at is not None and t.ok]
        ),
    }
    result["exit_code"] = await bench.stop_bot(run)
    print(f"[{label}] {summary_line(result)}", flush=True)
    return result


def summary_line(result: dict[str, Any]) -> str:
    lat, load = result["latency"], result["load"]
    return (
        f"first sign p50 {lat['first_sign_ms']['p50']:.0f} ms, first text - first token p50 "
        f"{lat['first_text_after_first_token_ms']['p50']:.0f} ms, whole answer p50 "
        f"{lat['whole_answer_ms']['p50']:.0f} ms; load {load['answered']}/{load['planned']} "
        f"at {load['throughput']['overall']:.1f} turns/s, whole answer p50 "
        f"{load['whole_answer_ms']['p50']:.0f} ms, bot cpu/turn "
        f"{load['bot_cpu_ms_per_turn']:.1f} ms, fakes cpu {load['fakes_cpu_s']:.1f} s"
    )


async def phase_streaming(bench: BenchLike, plan: Any) -> dict[str, Any]:
    """Streaming on, then off, against a model that streams at a realistic rate."""
    await _configure_model(
        bench,
        latency_ms=0.0,
        tokens_per_s=TOKENS_PER_S,
        first_token_ms=FIRST_TOKEN_MS,
        answer_words=ANSWER_WORDS,
    )
    try:
        on = await _one_setting(bench, "streaming-on")
        off = await _one_setting(bench, "streaming-off", STREAM_ANSWERS="false")
    finally:
        await _configure_model(
            bench, latency_ms=plan.latency_ms, tokens_per_s=0.0, first_token_ms=0.0, answer_words=0
        )
    return {"on": on, "off": off}


def streaming_rows(runs: dict[str, Any], plan: Any) -> list[tuple[str, str, bool | None]]:
    """The issue's targets for the streaming scenario."""
    data = runs.get("streaming")
    if not data:
        return []
    on, off = data["on"], data["off"]
    sign = on["latency"]["first_sign_ms"]["p50"]
    text = on["latency"]["first_text_after_first_token_ms"]["p50"]
    tput_on = on["load"]["throughput"]["overall"]
    tput_off = off["load"]["throughput"]["overall"]
    ratio = tput_on / tput_off if tput_off else math.nan
    chats = plan.latency_chats
    return [
        (
            f"streaming: update -> first visible sign p50 <= 100 ms at {chats} chats",
            f"p50 {sign:.0f} ms (streaming off, typing: "
            f"{off['latency']['first_sign_ms']['p50']:.0f} ms)",
            sign <= 100,
        ),
        (
            "streaming: first answer text <= first token of the answering step + 300 ms (p50)",
            f"first token + {text:.0f} ms; whole answer p50 "
            f"{on['latency']['whole_answer_ms']['p50']:.0f} ms on, "
            f"{off['latency']['whole_answer_ms']['p50']:.0f} ms off",
            text <= 300,
        ),
        (
            f"streaming: throughput at {plan.load_chats} chats >= 90 % of streaming off",
            f"{tput_on:.1f} vs {tput_off:.1f} turns/s ({ratio * 100:.0f} %); bot CPU per "
            f"turn {on['load']['bot_cpu_ms_per_turn']:.1f} vs "
            f"{off['load']['bot_cpu_ms_per_turn']:.1f} ms; "
            f"answered {on['load']['answered']}/{on['load']['planned']} on, "
            f"{off['load']['answered']}/{off['load']['planned']} off",
            ratio >= 0.9,
        ),
    ]
