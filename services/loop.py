"""The bounded tool loop: the application, not the model, decides how far a turn goes.

One turn is at most `max_steps` model calls. Every step but the last offers the tools
with `tool_choice="auto"`; the last one says `"none"`, so a tool only runs while a
model step remains to read its result and a turn normally ends with text. All calls
of one response run through the executor's batch form (independent reads run
concurrently) and each gets exactly one `tool` message, in call order, tied to its id.
Those ids must therefore be distinct, non-empty, printable and at most 256 characters;
a response whose ids are not is a protocol error and none of its calls runs (a result
under a repeated id could be read as another call's data). An id an earlier step of the
turn already used is renamed (turn-unique ids), and arguments too long to be read are
sent back as a short stand-in, so later requests stay valid and small.
A tool that proposed an action the customer must confirm (`ActionProposed`)
suspends the turn: the next step is the last (text only), so the model asks the customer
to confirm and nothing more runs before the press.
A call that already failed in this turn is not run again: the model gets the earlier
error. A call that already succeeded is not run again either: the model gets the earlier
result with the instruction to answer now, and when every call of a step was such a
repeat the next step is the last (text only), so a turn never burns its steps on repeats.

Tool calls written as text (services/text_calls.py: JSON naming a tool, a ```json fence,
`<tool_call>` or `<function=...>` markup — what small local models write instead of a
structured call) are never an answer. With `read_text_calls` (the default), the calls
read from such a text are run exactly like structured ones — the same executor, argument
validation, access rules, limits and audit, under turn-unique ids `text_s<step>_<n>` — and
the conversation carries them as structured calls, so the next step reads their results,
followed by one short system line (`RESULT_NOTE`, in the turn's language when known): reply
to the customer from these results, a "nothing found" or "cannot be done" included, never
only "I cannot help" (the 1.5B model's reflex after such results).
An action tool run this way can only propose (its card); the customer's button stays the
only way to carry it out. A text the loop cannot run (reading is off, it is the last step,
or it is markup with no readable call: a tool schema, a broken call) gets the model a
structured error message it can correct on the next step; on the last step the turn ends
with a protocol error, so the customer gets the bot's polite fallback, never the markup.
A text that only echoes internal tags (`<conversation_summary>`, template tokens) around
a real answer is delivered without them.

The answer's language (services/reply_language.py): with a `language` (the customer's,
decided by the chat service), a final answer whose words are in another language is not
delivered at once: the model is asked once more, text only, with a short note after the
conversation ("Reply in Russian: the customer writes in Russian. …") and its first answer
before it, so it can rewrite what it said. One such retry per turn, beyond `max_steps`,
recorded and counted in the usage like any call (`trace.language_retries`). If the second
answer is in the customer's language it is delivered. If it is still in another one, the
one with the larger share of the customer's language is delivered, the first on a tie:
it was written with the tool results in view, a failed rewrite is no better. If the
retry fails, times out within the turn's time, writes markup or is no answer (it repeats
the customer's message or speaks about the note, as the 1.5B model did in 3 of 8
retries), the first answer is delivered. Streamed drafts of the first answer are never
shown (services/answer_stream.py holds a draft until its language is known).

The whole turn has a deadline; on expiry in-flight work is cancelled and what was started
keeps its records.

Streaming and stop: with a `listener`, each step is streamed where the model supports it
(it has `stream_complete`, as the real client) and the listener sees the step's text as
it is generated (a step that turns into tool calls tells it so). With a `stop` event, setting
it cancels the turn's model and tool work at once; the text of the step being streamed
so far (empty in a tool step) comes back as the answer with stop reason `stopped`, and
the cancelled call keeps its record (error code "cancelled").

`trace.tool_names` lists the tools whose handler ran, in execution order (calls the
executor rejected — unknown tool, invalid arguments — and repeats of a failed call have
audit records but no name there), so it matches what actually touched shop data.

Usage rule: token counts are summed over the model calls that returned a response; if
any of those responses did not report a count, that total is None (unknown stays
unknown — a partial sum would look exact). Failed model calls return no usage and add
nothing; they are still recorded in `trace.model_calls` with status "error".
"""

from __future__ import annotations

import asyncio
import copy
import json
import logging
import time
from collections.abc import Sequence
from dataclasses import dataclass, field, replace
from typing import Any, cast

from services.llm.errors import LLMError
from services.llm.types import ChatModel, LLMResponse, Message, StepListener, ToolChoice
from services.loop_types import (
    LoopResult,
    LoopTrace,
    ProtocolError,
    StopReason,
    TurnTimeout,
    TurnUnavailable,
    model_call_record,
)
from services.output_guard import quotable_data
from services.reply_language import NAMES, in_other_language, no_answer, note, signals
from services.text_calls import Scan, scan, visible_draft
from storage.records import AuditStatus
from tools.base import ActionProposed, ToolCall, ToolContext, ToolOutcome
from tools.executor import MAX_ARGUMENTS_CHARS, ToolExecutor, audit_record
from tools.registry import ToolRegistry

log = logging.getLogger(__name__)

MAX_STEPS_LIMIT = 5
# the language retry may use this part of the turn's remaining time; after it, the
# first answer is delivered with time to spare
LANGUAGE_RETRY_TIME_SHARE = 0.9
REPEATED_CALL_CODE = "repeated_failed_call"
REPEATED_RESULT_CODE = "repeated_call"
TEXT_CALL_CODE = "text_tool_call"
TEXT_CALL_ID_PREFIX = "text_s"  # ids of calls read from text: text_s<step>_<n>
ANSWER_NOW = (
    "You already made this call with these arguments in this turn; this is its result "
    "again. Do not call the tool again: answer the customer now, from this result."
)
TEXT_CALL_MESSAGE = (
    "Your last message was not shown to the customer: it contained a tool call or internal "
    "markup written as text. To use a tool, call it through the tool-calling interface; "
    "otherwise answer the customer in plain words only, without JSON, tags or tool names."
)
# After the results of calls a model wrote as text (a small local model's habit), one
# short line before its next step: Qwen2.5-Coder-1.5B answered 18 of 23 "nothing found"
# or "refused" results with "I can't assist with that" (docs/simulations.md). Models that
# use the tool-calling interface never get it: no tokens and no change for them.
RESULT_NOTE = (
    "The tool results above are for the customer's last message. Reply to the customer "
    "now, {language}, in plain words, from these results; if nothing was found or it "
    "cannot be done, say so, why, and what they can do. Never reply only that you "
    "cannot help."
)


def result_note(language: str | None) -> str:
    """The line after a text step's tool results, in the turn's language when known."""
    name = NAMES.get(language or "")
    said = f"in {name}" if name else "in the language of the customer's last message"
    return RESULT_NOTE.format(language=said)


# markup that may be dropped from an answer that has words besides it (an echoed tag)
_DROPPABLE = frozenset({"internal_tag", "template_token"})
CANCELLED_CODE = "cancelled"
TURN_TIMEOUT_CODE = "turn_timeout"
# Providers' call ids are short tokens ("call_…", "toolu_…", "functions.name:0").
MAX_CALL_ID_CHARS = 256


@dataclass
class _Turn:
    """State of one `run`: the private conversation, the trace, what already failed."""

    conversation: list[Message]
    context: ToolContext
    deadline: asyncio.Timeout
    trace: LoopTrace = field(default_factory=LoopTrace)
    responses: list[LLMResponse] = field(default_factory=list)
    failed: dict[tuple[str, str], ToolOutcome] = field(default_factory=dict)
    done: dict[tuple[str, str], ToolOutcome] = field(default_factory=dict)  # succeeded
    used_ids: set[str] = field(default_factory=set)  # call ids already answered this turn
    repeated_step: bool = False  # every call of the last text step was a repeat
    listener: _StepText | None = None
    language: str | None = None  # the customer's: the answer's must match (one retry)

    def cancel_code(self) -> str:
        return TURN_TIMEOUT_CODE if self.deadline.expired() else CANCELLED_CODE


class _StepText:
    """Remembers the streamed step's text (the partial answer on stop) and passes it on."""

    def __init__(self, outer: StepListener) -> None:
        self._outer = outer
        self.text = ""

    def on_text(self, text: str) -> None:
        self.text = text
        self._outer.on_text(text)

    def on_tool_call(self) -> None:
        self.text = ""
        self._outer.on_tool_call()


class BoundedToolLoop:
    """Runs one customer turn against a `ChatModel` and the tool executor."""

    def __init__(
        self,
        model: ChatModel,
        registry: ToolRegistry,
        executor: ToolExecutor,
        *,
        max_steps: int = 3,
        turn_timeout_s: float = 60.0,
        parallel_tool_calls: bool = True,
        read_text_calls: bool = True,
    ) -> None:
        if not 1 <= max_steps <= MAX_STEPS_LIMIT:
            raise ValueError(f"max_steps must be between 1 and {MAX_STEPS_LIMIT}")
        if turn_timeout_s <= 0:
            raise ValueError("turn_timeout_s must be positive")
        self._model = model
        self._registry = registry
        self._executor = executor
        self._max_steps = max_steps
        self._turn_timeout_s = turn_timeout_s
        self._parallel_tool_calls = parallel_tool_calls
        self._read_text_calls = read_text_calls

    @property
    def max_steps(self) -> int:
        return self._max_steps

    @property
    def tool_names(self) -> tuple[str, ...]:
        """The tools the model is offered, in registration order."""
        return self._registry.names

    @property
    def tool_schemas(self) -> list[dict[str, Any]]:
        """What the model is sent about them (the `tools` of every request)."""
        return self._registry.schemas()

    async def run(
        self,
        messages: Sequence[Message],
        context: ToolContext,
        *,
        prompt_ref: str,
        listener: StepListener | None = None,
        stop: asyncio.Event | None = None,
        language: str | None = None,
    ) -> LoopResult:
        """Answer the conversation in `messages` (never mutated).

        `listener` watches streamed steps, `stop` ends the turn early, an answer not in
        `language` ("ru", "en"; None: not checked) is asked once more (module docstring).
        Raises `TurnUnavailable` (the model failed), `TurnTimeout` (the deadline passed)
        or `ProtocolError` (an answer the loop cannot accept); each carries the trace.
        """
        deadline = asyncio.timeout(self._turn_timeout_s)
        turn = _Turn(
            conversation=copy.deepcopy(list(messages)),
            context=context,
            deadline=deadline,
            language=language,
        )
        if listener is not None:
            turn.listener = _StepText(listener)
        try:
            async with deadline:
                if stop is None:
                    text, stop_reason = await self._steps(turn)
                else:
                    text, stop_reason = await self._steps_until(turn, stop)
        except TimeoutError:
            if not deadline.expired():
                raise
            log.warning(
                "turn %s exceeded %.1fs after %d model steps",
                context.turn_id,
                self._turn_timeout_s,
                turn.trace.model_steps,
            )
            raise TurnTimeout(
                f"turn exceeded {self._turn_timeout_s:g}s", trace=turn.trace
            ) from None
        return LoopResult(
            text=text, stop_reason=stop_reason, trace=turn.trace, prompt_ref=prompt_ref
        )

    async def _steps_until(self, turn: _Turn, stop: asyncio.Event) -> tuple[str, StopReason]:
        """`_steps`, unless `stop` is set first: then the work is cancelled and the text
        streamed so far is the answer."""
        steps = asyncio.create_task(self._steps(turn))
        pressed = asyncio.create_task(stop.wait())
        try:
            await asyncio.wait({steps, pressed}, return_when=asyncio.FIRST_COMPLETED)
            if steps.done():
                return steps.result()
            steps.cancel()
            await asyncio.gather(steps, return_exceptions=True)
            log.info("turn %s stopped by the customer", turn.context.turn_id)
            partial = turn.listener.text if turn.listener is not None else ""
            return visible_draft(partial).strip(), StopReason.STOPPED
        finally:
            for task in (steps, pressed):
                if not task.done():
                    task.cancel()
            await asyncio.gather(steps, pressed, return_exceptions=True)

    async def _steps(self, turn: _Turn) -> tuple[str, StopReason]:
        suspended = False  # an action awaits the customer's confirmation (tools/actions/)
        for step in range(1, self._max_steps + 1):
            final = step == self._max_steps or suspended
            response = await self._call_model(turn, "none" if final else "auto")
            finish = response.finish_reason

            if response.refusal or finish == "content_filter":
                return (response.text or "").strip(), StopReason.REFUSED
            if finish == "tool_calls":
                if final:
                    raise self._protocol(turn, "tool calls on the final step (tool_choice none)")
                if not response.tool_calls:
                    raise self._protocol(turn, "finish_reason tool_calls without tool calls")
                problem = _call_ids_problem(response.tool_calls)
                if problem is not None:
                    raise self._protocol(turn, problem)
                repeats = await self._run_tools(
                    turn, response, _unique_in_turn(response, turn, step)
                )
                suspended = _suspends(turn) or repeats
                continue
            if finish in ("stop", "length"):
                if response.tool_calls:
                    raise self._protocol(turn, f"finish_reason {finish} with tool calls")
                text = (response.text or "").strip()
                if not text:
                    raise self._protocol(turn, f"finish_reason {finish} with empty text")
                found = scan(text, self._registry.names)
                if found.found:
                    answer = await self._written(turn, response, found, final=final, step=step)
                    if answer is None:  # calls run or the model told: the next step goes on
                        suspended = _suspends(turn) or turn.repeated_step
                        continue
                    text = answer
                reason = StopReason.COMPLETED if finish == "stop" else StopReason.TRUNCATED
                return await self._in_language(turn, text, reason)
            raise self._protocol(turn, f"unexpected finish_reason {finish!r}")
        raise AssertionError("unreachable: the final step always returns or raises")

    # ------------------------------------------------------------------ model calls

    async def _call_model(self, turn: _Turn, tool_choice: ToolChoice) -> LLMResponse:
        schemas = self._registry.schemas()
        offer_tools = bool(schemas)
        started_at = time.time()
        started = time.perf_counter()
        turn.trace.model_steps += 1

        def record(error_code: str | None, response: LLMResponse | None) -> None:
            turn.trace.model_calls.append(
                model_call_record(
                    "chat",
                    requested_model=self._model.model_name,
                    started_at=started_at,
                    latency_ms=(time.perf_counter() - started) * 1000,
                    response=response,
                    error_code=error_code,
                )
            )

        options: dict[str, Any] = {
            "tools": schemas if offer_tools else None,
            "tool_choice": tool_choice if offer_tools else None,
            "parallel_tool_calls": (
                self._parallel_tool_calls if offer_tools and tool_choice != "none" else None
            ),
        }
        streamed = getattr(self._model, "stream_complete", None)
        try:
            if turn.listener is not None and streamed is not None:
                response = cast(
                    LLMResponse,
                    await streamed(turn.conversation, listener=turn.listener, **options),
                )
            else:
                response = await self._model.complete(turn.conversation, **options)
        except LLMError as error:
            record(error.code, None)
            log.warning("model call failed: %s (%s)", error.code, error)
            raise TurnUnavailable(str(error), code=error.code, trace=turn.trace) from error
        except asyncio.CancelledError:
            record(turn.cancel_code(), None)
            raise
        record(None, response)
        turn.responses.append(response)
        if response.response_id:
            turn.trace.response_ids.append(response.response_id)
        self._sum_usage(turn)
        return response

    @staticmethod
    def _sum_usage(turn: _Turn) -> None:
        def total(values: list[int | None]) -> int | None:
            return None if any(v is None for v in values) else sum(v for v in values if v)

        turn.trace.prompt_tokens = total([r.prompt_tokens for r in turn.responses])
        turn.trace.completion_tokens = total([r.completion_tokens for r in turn.responses])
        turn.trace.total_tokens = total([r.total_tokens for r in turn.responses])
        turn.trace.cached_tokens = total([r.cached_tokens for r in turn.responses])

    @staticmethod
    def _protocol(turn: _Turn, problem: str) -> ProtocolError:
        log.warning("model broke the tool protocol: %s", problem)
        return ProtocolError(problem, trace=turn.trace)

    # ------------------------------------------------------------------ text calls

    async def _written(
        self, turn: _Turn, response: LLMResponse, found: Scan, *, final: bool, step: int
    ) -> str | None:
        """A text answer with tool calls or markup in it (module docstring): the clean
        answer to deliver, or None when the turn goes on (calls run, or the model was
        sent a correction); raises `ProtocolError` when no step is left to go on."""
        kinds = ", ".join(found.markup)
        turn.repeated_step = False
        if not found.calls and found.has_words and _DROPPABLE.issuperset(found.markup):
            log.info("answer delivered without the markup it echoed (%s)", kinds)
            return found.clean
        if final:
            raise self._protocol(turn, f"the last step wrote tool markup as text ({kinds})")
        if turn.listener is not None:
            turn.listener.on_tool_call()  # nothing of this step is an answer
        if found.calls and self._read_text_calls:
            calls = []
            for index, written in enumerate(found.calls, start=1):
                call_id = f"{TEXT_CALL_ID_PREFIX}{step}_{index}"
                turn.used_ids.add(call_id)
                calls.append(ToolCall(id=call_id, name=written.name, arguments=written.arguments))
            log.info("model wrote %d tool call(s) as text (%s); read them", len(calls), kinds)
            as_calls = replace(
                response, text="", tool_calls=tuple(calls), raw_assistant_message=None
            )
            turn.repeated_step = await self._run_tools(turn, as_calls, calls)
            turn.conversation.append({"role": "system", "content": result_note(turn.language)})
            return None
        log.info("model wrote tool markup as text (%s); asked it to correct", kinds)
        error = {"ok": False, "error": {"code": TEXT_CALL_CODE, "message": TEXT_CALL_MESSAGE}}
        turn.conversation.append({"role": "assistant", "content": response.text or ""})
        turn.conversation.append({"role": "system", "content": json.dumps(error)})
        return None

    # ------------------------------------------------------------------ language

    async def _in_language(
        self, turn: _Turn, text: str, reason: StopReason
    ) -> tuple[str, StopReason]:
        """The answer to deliver: `text`, or — when it is in another language than the
        customer's — the model is asked once more (module docstring)."""
        language = turn.language
        if language is None or not in_other_language(text, language):
            return text, reason
        turn.trace.language_retries += 1
        log.info("turn %s: the answer is not in %s; asked again", turn.context.turn_id, language)
        if turn.listener is not None:
            turn.listener.on_tool_call()  # the first answer is not the one shown
        turn.conversation.append({"role": "assistant", "content": text})
        turn.conversation.append({"role": "system", "content": note(language)})
        left = (turn.deadline.when() or 0.0) - asyncio.get_running_loop().time()
        retry = asyncio.timeout(max(0.0, left * LANGUAGE_RETRY_TIME_SHARE))
        try:
            async with retry:
                response = await self._call_model(turn, "none")
        except TurnUnavailable:
            return text, reason  # logged by _call_model; the first answer is still good
        except TimeoutError:
            if not retry.expired():
                raise
            log.info("turn %s: the language retry ran out of time", turn.context.turn_id)
            return text, reason
        again = self._plain_text(response)
        if again is None or no_answer(again, _customer_text(turn.conversation)):
            log.info("turn %s: the language retry gave no answer", turn.context.turn_id)
            return text, reason
        if not in_other_language(again, language):
            return again, _reason(response)
        if signals(again).share(language) > signals(text).share(language):
            return again, _reason(response)
        log.info("turn %s: the answer stayed in another language", turn.context.turn_id)
        return text, reason

    def _plain_text(self, response: LLMResponse) -> str | None:
        """A text-only answer of `response` (an echoed tag dropped), or None when it is
        none: a refusal, calls, markup, an empty or cut-off text."""
        text = (response.text or "").strip()
        if response.refusal or response.tool_calls or not text:
            return None
        if response.finish_reason not in ("stop", "length"):
            return None
        found = scan(text, self._registry.names)
        if not found.found:
            return text
        if not found.calls and found.has_words and _DROPPABLE.issuperset(found.markup):
            return found.clean
        return None

    # ------------------------------------------------------------------ tool calls

    async def _run_tools(
        self, turn: _Turn, response: LLMResponse, calls: Sequence[ToolCall]
    ) -> bool:
        """Run one response's calls (`calls`: its calls under turn-unique ids) and append
        the assistant message and one `tool` message per call to the conversation.
        True when every call repeated an earlier one of the turn (none ran)."""
        turn.conversation.append(_assistant_message(response, calls))
        # outcomes by position in the response, never by id: each call keeps its own
        outcomes: list[ToolOutcome | None] = [None] * len(calls)
        to_run: list[int] = []
        for index, call in enumerate(calls):
            key = _call_key(call)
            if (earlier := turn.failed.get(key)) is not None:
                outcomes[index] = self._repeat(turn, call, earlier)
            elif (succeeded := turn.done.get(key)) is not None:
                outcomes[index] = self._repeat_result(turn, call, succeeded)
            else:
                to_run.append(index)

        if to_run:
            batch = [calls[index] for index in to_run]
            ran = await self._execute(turn, batch)
            for index, call, outcome in zip(to_run, batch, ran, strict=True):
                outcomes[index] = outcome
                turn.trace.audit_records.append(outcome.audit)
                if outcome.audit.status is not AuditStatus.REJECTED:  # its handler ran
                    self._note_executed(turn, outcome.tool_name)
                if not outcome.ok:
                    turn.failed[_call_key(call)] = outcome
                else:  # shop data the answer may quote (services/output_guard.py)
                    turn.done[_call_key(call)] = outcome
                    turn.context.shop_data.extend(quotable_data(outcome.content, call.arguments))

        for call, maybe in zip(calls, outcomes, strict=True):
            assert maybe is not None
            turn.conversation.append(
                {"role": "tool", "tool_call_id": call.id, "content": maybe.content}
            )
        return not to_run

    async def _execute(self, turn: _Turn, batch: list[ToolCall]) -> list[ToolOutcome]:
        started_at = time.time()
        started = time.perf_counter()
        try:
            return await self._executor.execute_batch(batch, turn.context)
        except asyncio.CancelledError:
            # The batch was cut by the deadline: every started call keeps a record.
            code = turn.cancel_code()
            for call in batch:
                self._note_executed(turn, call.name)
                turn.trace.audit_records.append(
                    audit_record(
                        call,
                        turn.context,
                        started_at=started_at,
                        duration_ms=(time.perf_counter() - started) * 1000,
                        status=AuditStatus.TIMEOUT,
                        error_code=code,
                    )
                )
            raise

    def _note_executed(self, turn: _Turn, name: str) -> None:
        if self._registry.get(name) is not None:
            turn.trace.tool_names.append(name)

    @staticmethod
    def _repeat(turn: _Turn, call: ToolCall, earlier: ToolOutcome) -> ToolOutcome:
        """The earlier error for a repeated failing call, under the new call id."""
        log.info("tool %s: repeated failing call %s not run again", earlier.tool_name, call.id)
        return _not_run_again(turn, call, earlier, REPEATED_CALL_CODE, earlier.content)

    @staticmethod
    def _repeat_result(turn: _Turn, call: ToolCall, earlier: ToolOutcome) -> ToolOutcome:
        """The earlier result of a repeated successful call, with the instruction to
        answer now; the tool does not run again (no second read, no second proposal)."""
        log.info("tool %s: repeated call %s given its earlier result", earlier.tool_name, call.id)
        try:
            content: Any = json.loads(earlier.content)
        except ValueError:
            content = earlier.content
        if isinstance(content, dict):
            content = {**content, "repeated_call": ANSWER_NOW}
        else:
            content = {"result": content, "repeated_call": ANSWER_NOW}
        text = json.dumps(content, ensure_ascii=False)
        return _not_run_again(turn, call, earlier, REPEATED_RESULT_CODE, text)


def _not_run_again(
    turn: _Turn, call: ToolCall, earlier: ToolOutcome, code: str, content: str
) -> ToolOutcome:
    """A repeated call answered without running: audited as rejected with `code`."""
    audit = audit_record(
        call,
        turn.context,
        started_at=time.time(),
        duration_ms=0.0,
        status=AuditStatus.REJECTED,
        error_code=code,
    )
    turn.trace.audit_records.append(audit)
    return ToolOutcome(
        call_id=call.id,
        tool_name=earlier.tool_name,
        content=content,
        ok=earlier.ok,
        audit=audit,
    )


def _customer_text(conversation: Sequence[Message]) -> str:
    """The customer's message this turn answers (the last `user` message)."""
    for message in reversed(conversation):
        if message.get("role") == "user":
            return str(message.get("content") or "")
    return ""


def _reason(response: LLMResponse) -> StopReason:
    return StopReason.COMPLETED if response.finish_reason == "stop" else StopReason.TRUNCATED


def _suspends(turn: _Turn) -> bool:
    """A tool proposed an action (`ActionProposed`): the turn ends suspended — the next
    step is the last, text only, and the customer's press decides what happens."""
    return any(isinstance(note, ActionProposed) for note in turn.context.notes)


def _call_key(call: ToolCall) -> tuple[str, str]:
    """Tool name + arguments, JSON-normalised so key order and spacing do not matter.

    Arguments longer than the executor's bound are keyed by their raw text unparsed;
    so are arguments the parser cannot read (not JSON, nested too deeply).
    """
    raw = call.arguments
    if not isinstance(raw, str) or len(raw) > MAX_ARGUMENTS_CHARS:
        return str(call.name), str(raw)
    try:
        normalised = json.dumps(json.loads(raw), sort_keys=True, ensure_ascii=False)
    except (ValueError, RecursionError):
        normalised = raw
    return str(call.name), normalised


def _call_ids_problem(calls: Sequence[ToolCall]) -> str | None:
    """Why the call ids of one response cannot be answered, or None when they can.

    Each `tool` message answers one call by its id, so ids must be distinct, non-empty
    text; the model could not tell apart results sent under a repeated id. The ids are
    the model's own (they are in its assistant message), so the loop does not rename
    them within a response: such a response is a protocol error and none of its calls
    runs (an id an EARLIER step used is renamed, see `_unique_in_turn`). The problem
    text never contains an id (it is untrusted model output).
    """
    seen: set[str] = set()
    for index, call in enumerate(calls, start=1):
        call_id = call.id
        if not isinstance(call_id, str) or not call_id:
            return f"tool call {index} of {len(calls)} has no id"
        if len(call_id) > MAX_CALL_ID_CHARS or not call_id.isprintable():
            return (
                f"tool call {index} of {len(calls)} has an id that is longer than "
                f"{MAX_CALL_ID_CHARS} characters or holds control characters"
            )
        if call_id in seen:
            return f"tool call {index} of {len(calls)} repeats the id of an earlier call"
        seen.add(call_id)
    return None


def _unique_in_turn(response: LLMResponse, turn: _Turn, step: int) -> list[ToolCall]:
    """The response's calls under ids no earlier step of the turn used.

    Some models number their calls afresh in every response ("call_0" again); sent back
    as they are, one request would hold two calls and two results under one id, which
    strict providers reject and any model could confuse. An earlier step is answered
    already, so renaming the later call (in the assistant message too) changes nothing
    the model relies on.
    """
    unique: list[ToolCall] = []
    for index, call in enumerate(response.tool_calls, start=1):
        call_id = call.id
        suffix = 0
        while call_id in turn.used_ids:
            suffix += 1
            call_id = f"call_s{step}_{index}" + (f"_{suffix}" if suffix > 1 else "")
        turn.used_ids.add(call_id)
        unique.append(call if call_id == call.id else replace(call, id=call_id))
    return unique


# What an assistant message says instead of arguments too long to be read: the model
# got the error, and resending a megabyte on every later step helps nobody.
def _stand_in(arguments: str) -> str:
    if not isinstance(arguments, str) or len(arguments) <= MAX_ARGUMENTS_CHARS:
        return arguments
    return json.dumps({"omitted": f"arguments of {len(arguments)} characters, not read"})


def _assistant_message(response: LLMResponse, calls: Sequence[ToolCall]) -> Message:
    """The assistant message as received (or rebuilt when a double gave none), with the
    turn-unique call ids and a short stand-in for arguments too long to be read."""
    raw = response.raw_assistant_message
    entries = raw.get("tool_calls") if raw is not None else None
    if raw is not None and isinstance(entries, list) and len(entries) == len(calls):
        message = copy.deepcopy(raw)
        entries = cast(list[dict[str, Any]], message["tool_calls"])
        for entry, call in zip(entries, calls, strict=True):
            entry["id"] = call.id
            function = entry.get("function")
            if isinstance(function, dict):
                function["arguments"] = _stand_in(function.get("arguments", ""))
        return message
    rebuilt: Message = {
        "role": "assistant",
        "content": response.text or "",  # never null: llama-cpp-python's server refuses it
        "tool_calls": [
            {
                "id": call.id,
                "type": "function",
                "function": {"name": call.name, "arguments": _stand_in(call.arguments)},
            }
            for call in calls
        ],
    }
    return rebuilt
