"""Scores of a simulation, the terminal table and the Markdown report.

pass^1 of a scenario is the share of its trials that passed (the chance one
conversation goes right); pass^k is 1 when all k trials passed, else 0 (τ-bench's
pass^k with k = the number of trials). Overall figures are the means over the
scenarios. Cost is the bot's tokens (the tool loop and summaries, not the simulated
customer's) as the model reported them, at MODEL_PRICE_*. Tokens by part (instruction,
tools, summary, history, turn: services/prompt_parts.py) are the bot's own estimate of
each request, per scenario and in total: where a question's tokens go, whatever the
model reports (a fake model reports a constant).
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import dataclass, field

from services.prompt_parts import PARTS, add_parts
from services.simulation.runner import RunResult
from services.simulation.transcript import Transcript
from services.stats import Prices
from storage.stats import TokenFigures

RESULT_CHARS = 400  # a tool result in the report is cut to this many characters


@dataclass(frozen=True, slots=True)
class ScenarioScore:
    scenario_id: str
    model: str
    trials: int
    passed: int
    tokens: TokenFigures = field(default_factory=TokenFigures)
    parts: dict[str, int] | None = None  # estimated, all its trials
    questions: int = 0  # the customer's messages, all its trials
    cost: float | None = None

    @property
    def pass_1(self) -> float:
        return self.passed / self.trials if self.trials else 0.0

    @property
    def pass_k(self) -> float:
        return 1.0 if self.trials and self.passed == self.trials else 0.0


@dataclass(frozen=True, slots=True)
class ModelScore:
    model: str
    scenarios: tuple[ScenarioScore, ...]
    tokens: TokenFigures
    model_calls: int
    seconds: float
    cost: float | None
    parts: dict[str, int] | None = None

    @property
    def questions(self) -> int:
        return sum(s.questions for s in self.scenarios)

    @property
    def pass_1(self) -> float:
        return (
            sum(s.pass_1 for s in self.scenarios) / len(self.scenarios) if self.scenarios else 0.0
        )

    @property
    def pass_k(self) -> float:
        return (
            sum(s.pass_k for s in self.scenarios) / len(self.scenarios) if self.scenarios else 0.0
        )


def _tokens(transcripts: Sequence[Transcript]) -> TokenFigures:
    calls = [call for t in transcripts for call in t.model_calls]
    return TokenFigures(
        prompt=sum(c.prompt_tokens for c in calls),
        completion=sum(c.completion_tokens for c in calls),
        cached=sum(c.cached_tokens for c in calls),
    )


def _parts(transcripts: Sequence[Transcript]) -> dict[str, int]:
    total = dict.fromkeys(PARTS, 0)
    for call in (c for t in transcripts for c in t.model_calls):
        add_parts(total, call.parts)
    return total


def _scenario_score(
    sid: str, model: str, runs: Sequence[RunResult], prices: Prices | None
) -> ScenarioScore:
    mine = [r for r in runs if r.scenario.id == sid]
    transcripts = [r.transcript for r in mine]
    tokens = _tokens(transcripts)
    return ScenarioScore(
        sid,
        model,
        trials=len(mine),
        passed=sum(1 for r in mine if r.passed),
        tokens=tokens,
        parts=_parts(transcripts),
        questions=sum(len(t.exchanges) for t in transcripts),
        cost=None if prices is None else prices.cost(tokens),
    )


def scores(results: Sequence[RunResult], prices: Prices | None = None) -> list[ModelScore]:
    """One score per model, in the order the models ran, scenarios in their order."""
    models = list(dict.fromkeys(result.model for result in results))
    out = []
    for model in models:
        runs = [r for r in results if r.model == model]
        ids = list(dict.fromkeys(r.scenario.id for r in runs))
        per_scenario = tuple(_scenario_score(sid, model, runs, prices) for sid in ids)
        tokens = _tokens([r.transcript for r in runs])
        out.append(
            ModelScore(
                model=model,
                scenarios=per_scenario,
                tokens=tokens,
                model_calls=sum(len(r.transcript.model_calls) for r in runs),
                seconds=sum(r.transcript.duration_s for r in runs),
                cost=None if prices is None else prices.cost(tokens),
                parts=_parts([r.transcript for r in runs]),
            )
        )
    return out


def below(model_scores: Sequence[ModelScore], min_pass: float) -> list[ScenarioScore]:
    """The scenarios whose pass^1 is below `min_pass` (the exit status depends on them)."""
    return [s for m in model_scores for s in m.scenarios if s.pass_1 < min_pass - 1e-9]


def _cost(score: ModelScore | ScenarioScore, prices: Prices | None) -> str:
    if score.cost is None or prices is None:
        return "n/a (no MODEL_PRICE_*)"
    digits = 4 if score.cost >= 0.01 else 6  # a short local run costs fractions of a cent
    return f"{score.cost:.{digits}f} {prices.currency}"


def _by_part(parts: dict[str, int] | None) -> str:
    parts = parts or {}
    return ", ".join(f"{part} {parts.get(part, 0)}" for part in PARTS)


def terminal_table(model_scores: Sequence[ModelScore], prices: Prices | None = None) -> str:
    """Scenarios down, models across: pass^1 and pass^k of each; then the totals."""
    if not model_scores:
        return "no scenarios were run"
    ids = list(dict.fromkeys(s.scenario_id for m in model_scores for s in m.scenarios))
    width = max(len("scenario"), *(len(i) for i in ids))
    heads = [f"{m.model[:24]:>24}" for m in model_scores]
    lines = [f"{'scenario':<{width}}  " + "  ".join(heads)]
    sub = " " * width + "  " + "  ".join(f"{'pass^1  pass^k':>24}" for _ in model_scores)
    lines.append(sub)
    for sid in ids:
        cells = []
        for m in model_scores:
            s = next((s for s in m.scenarios if s.scenario_id == sid), None)
            cells.append(f"{'-':>24}" if s is None else f"{s.pass_1:>14.2f}  {s.pass_k:>6.2f}")
        lines.append(f"{sid:<{width}}  " + "  ".join(cells))
    lines.append(
        f"{'overall':<{width}}  "
        + "  ".join(f"{m.pass_1:>14.2f}  {m.pass_k:>6.2f}" for m in model_scores)
    )
    for m in model_scores:
        lines.append(
            f"{m.model}: {m.model_calls} model calls, {m.tokens.prompt} prompt + "
            f"{m.tokens.completion} completion tokens, cost {_cost(m, prices)}, {m.seconds:.1f} s"
        )
        lines.append(f"  prompt tokens by part (estimated): {_by_part(m.parts)}")
    return "\n".join(lines)


def _cut(text: str | None, limit: int = RESULT_CHARS) -> str:
    if text is None:
        return "(no result sent back)"
    return text if len(text) <= limit else text[:limit] + f"… ({len(text)} characters)"


def _quote(text: str) -> str:
    return "\n".join("> " + line if line else ">" for line in text.splitlines() or [""])


def transcript_markdown(transcript: Transcript) -> list[str]:
    lines: list[str] = []
    for index, exchange in enumerate(transcript.exchanges, 1):
        lines.append(f"**Customer ({index}):**")
        lines.append(_quote(exchange.customer))
        for tool in exchange.tools:
            lines.append(
                f"- tool{' (written as text)' if tool.written else ''} `{tool.name}` "
                f"`{_cut(tool.raw_arguments, 200)}` → `{_cut(tool.result)}`"
            )
        calls = ", ".join(
            f"{c.purpose}:{c.error or c.finish_reason or 'no finish reason'}"
            for c in exchange.model_calls
        )
        lines.append(f"- model calls: {len(exchange.model_calls)} ({calls or 'none'})")
        how = exchange.error_code or exchange.stop_reason or "?"
        shown_by = "the model's answer" if exchange.answer else "the bot's own text"
        lines.append(
            f"- stop: {how}; shown: {shown_by}{'; handoff opened' if exchange.handoff else ''}"
        )
        lines.append(f"**Bot ({index}):**")
        lines.append(_quote(exchange.shown))
        lines.append("")
    if transcript.note:
        lines.append(f"_Ended: {transcript.note}._")
    if transcript.order_status:
        lines.append(
            "Orders afterwards: " + json.dumps(transcript.order_status, ensure_ascii=False)
        )
    if transcript.actions:
        lines.append(
            "Actions afterwards: "
            + ", ".join(f"{a.action} {a.order_id}: {a.status}" for a in transcript.actions)
        )
    return lines


def runs_jsonl(results: Sequence[RunResult]) -> str:
    """Every run as one JSON line (passing runs too): what the customer saw, the tools
    (`written`: a call the model wrote as text and the loop read), each model call's
    finish and call counts, the failures and the time — for measuring a model beyond
    pass rates (scripts/local-model/measure.py, docs/simulations.md)."""
    lines = []
    for result in results:
        scenario, transcript = result.scenario, result.transcript
        exchanges = [
            {
                "customer": e.customer,
                "shown": e.shown,
                "answer": e.answer,
                "stop": e.stop_reason,
                "error_code": e.error_code,
                "handoff": e.handoff,
                "tools": [
                    {"name": t.name, "arguments": t.raw_arguments, "written": t.written}
                    for t in e.tools
                ],
                "model_calls": [
                    {
                        "purpose": c.purpose,
                        "finish": c.finish_reason,
                        "error": c.error,
                        "text": _cut(c.text, 600) if c.text else None,
                        "structured_calls": len(c.tool_calls),
                        "text_calls": len(c.text_calls),
                        "ms": round(c.latency_ms),
                    }
                    for c in e.model_calls
                ],
            }
            for e in transcript.exchanges
        ]
        run = {
            "scenario": scenario.id,
            "source": scenario.source,
            "language": scenario.customer.language,
            "expects": sorted(k for k, v in scenario.expect.model_dump().items() if v),
            "model": result.model,
            "trial": result.trial,
            "passed": result.passed,
            "failures": [{"kind": f.kind, "detail": f.detail} for f in result.failures],
            "seconds": round(transcript.duration_s, 2),
            "crash": transcript.crash,
            "exchanges": exchanges,
        }
        lines.append(json.dumps(run, ensure_ascii=False))
    return "\n".join(lines) + ("\n" if lines else "")


def markdown_report(
    results: Sequence[RunResult],
    model_scores: Sequence[ModelScore],
    *,
    trials: int,
    min_pass: float,
    prices: Prices | None = None,
    command: str = "",
    stopped_because: Sequence[str] = (),
    shop: str = "",
) -> str:
    """The whole report: the scores, then every failing run with what failed and its
    transcript. `stopped_because`: why runs were left out (a time limit, a silent
    endpoint), one line each, said at the top; `shop`: which shop the scenarios ran on
    (one line)."""
    lines = _report_header(command, shop, stopped_because, trials, min_pass)
    lines += _model_table(model_scores, prices)
    lines += _scenario_table(model_scores)
    lines += _parts_table(model_scores, prices)
    lines += _failing_runs(results)
    return "\n".join(lines) + "\n"


def _report_header(
    command: str, shop: str, stopped_because: Sequence[str], trials: int, min_pass: float
) -> list[str]:
    """What was run, on which shop, and why it stopped early: read before any score."""
    lines = ["# Simulation report", ""]
    if command:
        lines += [f"Command: `{command}`", ""]
    if shop:
        lines += [shop[:1].upper() + shop[1:], ""]
    lines += [f"**Stopped early:** {line}" for line in stopped_because]
    lines += [""] if stopped_because else []
    lines += [f"Trials per scenario: {trials}; required pass^1 per scenario: {min_pass:.2f}", ""]
    return lines


def _model_table(model_scores: Sequence[ModelScore], prices: Prices | None) -> list[str]:
    """One row per model: how often it passed and what it cost, to compare models."""
    lines = [
        "| model | scenarios | pass^1 | pass^k | model calls | tokens (prompt + completion) "
        "| cost | time |"
    ]
    lines += ["|---|---|---|---|---|---|---|---|"]
    for m in model_scores:
        lines.append(
            f"| {m.model} | {len(m.scenarios)} | {m.pass_1:.2f} | {m.pass_k:.2f} "
            f"| {m.model_calls} | "
            f"{m.tokens.prompt} + {m.tokens.completion} | {_cost(m, prices)} | {m.seconds:.1f} s |"
        )
    return lines


def _scenario_table(model_scores: Sequence[ModelScore]) -> list[str]:
    """One row per scenario, one column per model: which scenarios a model fails."""
    lines = ["", "## Scenarios", ""]
    lines += [
        "| scenario | " + " | ".join(f"{m.model} pass^1 / pass^k" for m in model_scores) + " |"
    ]
    lines += ["|---|" + "---|" * len(model_scores)]
    ids = list(dict.fromkeys(s.scenario_id for m in model_scores for s in m.scenarios))
    for sid in ids:
        cells = []
        for m in model_scores:
            s = next((s for s in m.scenarios if s.scenario_id == sid), None)
            cells.append("-" if s is None else f"{s.pass_1:.2f} / {s.pass_k:.0f}")
        lines.append(f"| {sid} | " + " | ".join(cells) + " |")
    return lines


def _parts_table(model_scores: Sequence[ModelScore], prices: Prices | None) -> list[str]:
    """Where each scenario's tokens went, by part, and what it cost: what to shorten."""
    lines = ["", "## Tokens by part", ""]
    lines.append(
        "Prompt tokens by part are the bot's estimate of each request (fitted to OpenAI's "
        "cl100k_base; the summary calls' prompts count as summary), summed over the "
        "trials; the reported tokens and the cost are the model's own count."
    )
    lines.append("")
    lines.append(
        "| model | scenario | questions | "
        + " | ".join(PARTS)
        + " | per question | reported prompt + completion | cost |"
    )
    lines.append("|---" * (len(PARTS) + 6) + "|")

    def row(model: str, name: str, score: ModelScore | ScenarioScore) -> str:
        parts = score.parts or {}
        per_question = round(sum(parts.values()) / score.questions) if score.questions else 0
        cells = " | ".join(str(parts.get(p, 0)) for p in PARTS)
        return (
            f"| {model} | {name} | {score.questions} | {cells} | {per_question} "
            f"| {score.tokens.prompt} + {score.tokens.completion} | {_cost(score, prices)} |"
        )

    for m in model_scores:
        lines += [row(m.model, s.scenario_id, s) for s in m.scenarios]
        lines.append(row(m.model, "**all**", m))
    return lines


def _failing_runs(results: Sequence[RunResult]) -> list[str]:
    """Every failing run with what failed and its transcript: what an owner fixes from."""
    failing = [r for r in results if not r.passed]
    lines = ["", f"## Failing runs ({len(failing)})", ""]
    if not failing:
        lines.append("None: every run met every expectation.")
    for result in failing:
        title = result.scenario.title or result.scenario.id
        lines += [
            f"### {result.scenario.id} — {result.model}, trial {result.trial}",
            "",
            f"{title}",
            "",
        ]
        lines.append("Failed expectations:")
        lines += [f"- **{f.kind}**: {f.detail}" for f in result.failures]
        lines.append("")
        lines += transcript_markdown(result.transcript)
        lines.append("")
    return lines
