"""Tables of a simulation's runs (`support-bot simulate --runs FILE`), for docs/simulations.md.

    .venv/bin/python scripts/local-model/measure.py runs.jsonl [more.jsonl ...] [--only=ID ...]

pass^1 / pass^k overall and per scenario family (the suite file), tool-choice accuracy
(runs of scenarios that expect a tool whose `tools` expectation held), calls made
through the interface and written as text, replies the customer saw that carry tool
markup or internal tags (services/text_calls.py; the goal is 0), model answers in
another language than the customer's, the model's stock refusals, and the time per
scenario run (`--only=ID`: those scenarios' runs alone, to compare a subset). Then the language
check (REPLY_LANGUAGE_CHECK): answers asked again because their words were in another
language (a plain-text answer followed by one more call in the same turn), how many of
those retries came back in the customer's language, and how much of a delivered answer
was written before its draft could show (`LANGUAGE_WORDS` words carrying a language).
"""

from __future__ import annotations

import json
import re
import sys
from collections import defaultdict
from itertools import pairwise
from pathlib import Path
from statistics import mean
from typing import Any

from services.answer_stream import LANGUAGE_WORDS
from services.reply_language import in_other_language, language_of
from services.text_calls import scan

TOOL_NAMES = (
    "get_order_status",
    "get_my_orders",
    "get_return_policy",
    "get_shop_info",
    "request_human",
    "propose_cancel_order",
    "propose_request_return",
    "propose_change_address",
    "search_knowledge",
    "search_products",
    "get_product",
)
# the model's stock refusal ("I'm sorry, but I can't assist with that."), in both languages
_REFUSAL = re.compile(
    r"can'?t assist|cannot assist|can'?t help with|cannot help with|unable to assist"
    r"|не могу (?:помочь|с этим)",
    re.IGNORECASE,
)
_CYRILLIC = re.compile("[а-яё]", re.IGNORECASE)
_LATIN = re.compile("[a-z]", re.IGNORECASE)


def wrong_language(answer: str, language: str) -> bool:
    cyrillic, latin = len(_CYRILLIC.findall(answer)), len(_LATIN.findall(answer))
    if language == "ru":
        return cyrillic == 0 and latin > 0
    return cyrillic > latin


def marked(shown: str) -> bool:
    return scan(shown, TOOL_NAMES).found or "conversation_summary" in shown


def language_retries(runs: list[dict[str, Any]]) -> tuple[int, int]:
    """(answers asked again for their language, retries in the customer's language)."""
    asked = fixed = 0
    for run in runs:
        for exchange in run["exchanges"]:
            chat = [c for c in exchange["model_calls"] if c["purpose"] == "chat"]
            for call, after in pairwise(chat):
                text = (call["text"] or "").strip()
                if call["finish"] not in ("stop", "length") or not text or call["text_calls"]:
                    continue
                if scan(text, TOOL_NAMES).found:
                    continue  # corrected for markup, not for its language
                if in_other_language(text, run["language"]):
                    asked += 1
                    fixed += not in_other_language(after["text"] or "", run["language"])
    return asked, fixed


def draft_delay(runs: list[dict[str, Any]]) -> tuple[float, float, int]:
    """Mean characters and share of a delivered answer written before its language is
    known (the first draft), over answers in the customer's language; and their count."""
    chars: list[int] = []
    shares: list[float] = []
    for run in runs:
        for exchange in run["exchanges"]:
            answer = exchange["answer"] or ""
            if not answer or in_other_language(answer, run["language"]):
                continue
            words = answer.split(" ")
            for n in range(1, len(words) + 1):
                prefix = " ".join(words[:n])
                if language_of(prefix, at_least=LANGUAGE_WORDS) is not None:
                    chars.append(len(prefix))
                    shares.append(len(prefix) / len(answer))
                    break
    if not chars:
        return 0.0, 0.0, 0
    return mean(chars), mean(shares), len(chars)


def refusals(runs: list[dict[str, Any]]) -> tuple[int, int, int]:
    """(answers, refusals among them, refusals in a turn where a tool ran)."""
    answers = [e for run in runs for e in run["exchanges"] if e["answer"]]
    refused = [e for e in answers if _REFUSAL.search(e["answer"])]
    return len(answers), len(refused), sum(bool(e["tools"]) for e in refused)


def pass_rates(runs: list[dict[str, Any]]) -> tuple[float, float, int]:
    by_scenario: dict[str, list[bool]] = defaultdict(list)
    for run in runs:
        by_scenario[run["scenario"]].append(run["passed"])
    p1 = mean(sum(v) / len(v) for v in by_scenario.values())
    pk = mean(1.0 if all(v) else 0.0 for v in by_scenario.values())
    return p1, pk, len(by_scenario)


def main(args: list[str]) -> None:
    only = {a.removeprefix("--only=") for a in args if a.startswith("--only=")}
    paths = [a for a in args if not a.startswith("--only=")]
    runs = [json.loads(line) for p in paths for line in Path(p).read_text().splitlines() if line]
    runs = [run for run in runs if not only or run["scenario"] in only]
    trials = max(run["trial"] for run in runs)
    exchanges = [(run, e) for run in runs for e in run["exchanges"]]
    answers = [(run, e) for run, e in exchanges if e["answer"]]
    calls = [c for _, e in exchanges for c in e["model_calls"] if c["purpose"] == "chat"]
    tool_runs = [run for run in runs if "tools" in run["expects"]]
    tool_ok = [run for run in tool_runs if not any(f["kind"] == "tools" for f in run["failures"])]
    p1, pk, n = pass_rates(runs)
    print(
        f"| scenarios | runs | pass^1 | pass^{trials} | tool choice | structured calls "
        "| calls written as text | replies with markup or tags | wrong-language answers "
        "| model calls | s per run (mean / max) |"
    )
    print("|---|---|---|---|---|---|---|---|---|---|---|")
    seconds = [run["seconds"] for run in runs]
    print(
        f"| {n} | {len(runs)} | {p1:.2f} | {pk:.2f} | {len(tool_ok)}/{len(tool_runs)} "
        f"| {sum(c['structured_calls'] for c in calls)} | {sum(c['text_calls'] for c in calls)} "
        f"| {sum(marked(e['shown']) for _, e in exchanges)} of {len(exchanges)} "
        f"| {sum(wrong_language(e['answer'], r['language']) for r, e in answers)} "
        f"of {len(answers)} | {len(calls)} | {mean(seconds):.1f} / {max(seconds):.1f} |"
    )
    answered, refused, after_tool = refusals(runs)
    print()
    print(
        f'Refusals ("I can\'t assist with that" and the like): {refused} of {answered} '
        f"answers, {after_tool} of them in a turn where a tool had returned its result."
    )
    asked, fixed = language_retries(runs)
    chars, share, drafts = draft_delay(runs)
    print()
    print(
        f"Answers asked again for their language: {asked}; the retry in the customer's "
        f"language: {fixed}. A draft in the customer's language first shows after "
        f"{chars:.0f} characters on average, {share:.0%} of the answer "
        f"({drafts} answers; shorter ones show no draft, only the answer)."
    )
    print()
    print(f"| family | scenarios | pass^1 | pass^{trials} | mean s per run |")
    print("|---|---|---|---|---|")
    families: dict[str, list[dict[str, Any]]] = defaultdict(list)
    for run in runs:
        families[Path(run["source"]).stem or "?"].append(run)
    for family, members in sorted(families.items()):
        f1, fk, fn = pass_rates(members)
        print(
            f"| {family} | {fn} | {f1:.2f} | {fk:.2f} | {mean(r['seconds'] for r in members):.1f} |"
        )
    print()
    print(f"| scenario | pass^1 | pass^{trials} | failed expectations (all trials) |")
    print("|---|---|---|---|")
    by_id: dict[str, list[dict[str, Any]]] = defaultdict(list)
    for run in runs:
        by_id[run["scenario"]].append(run)
    for sid, members in by_id.items():
        s1, sk, _ = pass_rates(members)
        kinds = sorted(
            {f["kind"] for r in members for f in r["failures"]}
            | {"crash" for r in members if r["crash"]}
        )
        print(f"| {sid} | {s1:.2f} | {sk:.0f} | {', '.join(kinds) or '-'} |")


if __name__ == "__main__":
    main(sys.argv[1:])
