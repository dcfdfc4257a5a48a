"""Folds history that left the window into the session's running summary.

Runs in the background after a turn has been answered, so it never delays a reply.
It folds in batches (hysteresis): nothing while the messages after the summary fit
HISTORY_TOKEN_BUDGET; once they outgrow it, the oldest ones until what is left fits
HISTORY_FOLD_TO_PERCENT of the budget. One fold then makes room for several questions,
instead of a summary call after almost every question once the window is full, and the
prompt carries less history on average. The window never includes messages a summary
covers: the summary records the last message it covers, so the two never overlap.

At most one summarisation runs per session; a turn stored while it runs gets it to run
once more when it ends (what it read may predate that turn). Background runs share a few
slots (`max_concurrent`), so a burst of folds queues instead of flooding the model; but a
turn that must wait for its session's summary (`settle`) lets that run start at once:
the waiting turn's own place among the turns in flight is spent on it, and a customer
never waits behind other sessions' folds. A failure (model error, empty
answer) keeps the previous summary and the pairs stay unfolded, so the next turn's run
retries them.
Each model call leaves an `llm_calls` row with purpose 'summary'.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import time
from collections.abc import AsyncIterator, Callable, Sequence
from enum import StrEnum

from services.data_blocks import defuse_tags
from services.history import (
    HistoryPair,
    leaves_out,
    select_window,
    to_pairs,
    truncate_to_tokens,
    window_read_limit,
)
from services.llm.errors import LLMError
from services.llm.types import ChatModel, LLMResponse, Message
from services.loop_types import model_call_record
from services.prompts import PromptRegistry
from storage.conversations import ConversationRepository, SessionSummary, StoredMessage
from storage.records import ModelCallRecord, TurnRecorder

log = logging.getLogger(__name__)

SUMMARY_PROMPT_ID = "conversation_summary"
SUMMARY_PURPOSE = "summary"


class SummaryOutcome(StrEnum):
    NOTHING_TO_FOLD = "nothing_to_fold"
    UPDATED = "updated"
    FAILED = "failed"


class ConversationSummarizer:
    """Keeps each session's summary up to date with what fell out of its window."""

    def __init__(
        self,
        *,
        model: ChatModel,
        prompts: PromptRegistry,
        conversations: ConversationRepository,
        recorder: TurnRecorder,
        history_token_budget: int,
        summary_max_tokens: int,
        fold_to_percent: int = 50,
        max_chunks_per_run: int = 4,
        max_concurrent: int = 4,
        settle_within_s: float = 15.0,
        clock: Callable[[], float] = time.time,
    ) -> None:
        self._model = model
        self._prompts = prompts
        self._conversations = conversations
        self._recorder = recorder
        self._budget = history_token_budget
        # what a fold leaves unfolded: the newest messages that fit this part of the budget
        self._fold_to = max(1, history_token_budget * fold_to_percent // 100)
        self._max_tokens = summary_max_tokens
        # the prompt asks for words: a Russian word with its space is about 3.5 estimated
        # tokens (services/history.py), an English one about 1.5, so a quarter of the cap
        # keeps a Russian summary within it; the result is still cut to the cap afterwards
        self._max_words = max(10, summary_max_tokens // 4)
        self._max_chunks = max_chunks_per_run
        self._slots = asyncio.Semaphore(max_concurrent)
        self._settle_within_s = settle_within_s
        self._clock = clock
        self._tasks: dict[int, asyncio.Task[None]] = {}
        self._again: set[int] = set()  # scheduled while their run was in progress
        # set when a turn waits for the session's run: it starts without waiting for a slot
        self._wanted: dict[int, asyncio.Event] = {}
        self._closing = False

    # --- what a turn's prompt remembers -------------------------------------------

    async def memory(self, session_id: int) -> tuple[SessionSummary | None, list[HistoryPair]]:
        """The summary and the window a turn's prompt holds, with no hole between them.

        When the window leaves out messages the summary does not cover yet, the turn
        waits (bounded, `settle`) for the summary to fold them; if it cannot, a WARNING
        says how many messages the model will not see — never silently.
        """
        summary, read, window = await self._read_memory(session_id)
        limit = window_read_limit(self._budget)
        if not leaves_out(read, window, read_limit=limit):
            return summary, window
        if await self.settle(session_id, within_s=self._settle_within_s):
            summary, read, window = await self._read_memory(session_id)
        if leaves_out(read, window, read_limit=limit):
            shown = sum(1 if not p.complete else 2 for p in window)
            log.warning(
                "session %s: the summary is behind; at least %d earlier messages are in "
                "neither the window nor the summary of this turn",
                session_id,
                len(read) - shown,
            )
        return summary, window

    async def _read_memory(
        self, session_id: int
    ) -> tuple[SessionSummary | None, list[StoredMessage], list[HistoryPair]]:
        summary = await self._conversations.summary(session_id)
        covers = summary.covers_message_id if summary is not None else 0
        read = await self._conversations.recent_messages(
            session_id, after_id=covers, limit=window_read_limit(self._budget)
        )
        return summary, read, select_window(to_pairs(read), self._budget)

    # --- background scheduling ------------------------------------------------------

    def schedule(self, session_id: int) -> bool:
        """Start a background catch-up for the session; if one is already running, it runs
        once more when it ends (it may have read the history before this turn was stored,
        and would otherwise leave the pairs this turn pushed out of the window unfolded)."""
        if self._closing:
            return False
        running = self._tasks.get(session_id)
        if running is not None and not running.done():
            self._again.add(session_id)
            return False
        task = asyncio.create_task(self._background(session_id), name=f"summary-{session_id}")
        self._tasks[session_id] = task
        task.add_done_callback(lambda done: self._forget(session_id, done))
        return True

    async def settle(self, session_id: int, *, within_s: float) -> bool:
        """Let the session's summary catch up before a turn reads it; True when it did.

        A turn whose window leaves out messages the summary does not cover yet (a long
        handoff to a person schedules no summary; a quick next message may overtake the
        background run) waits here, at most `within_s`, for the running catch-up or a new
        one. The catch-up is not cancelled when the wait ends: it finishes in the
        background and the next turn benefits.
        """
        running = self._tasks.get(session_id)
        if running is None or running.done():
            self.schedule(session_id)
            running = self._tasks.get(session_id)
        if running is None:  # closing
            return False
        self._wanted.setdefault(session_id, asyncio.Event()).set()
        done, _ = await asyncio.wait({running}, timeout=within_s)
        return bool(done)

    def _forget(self, session_id: int, task: asyncio.Task[None]) -> None:
        if self._tasks.get(session_id) is task:
            del self._tasks[session_id]
            self._wanted.pop(session_id, None)

    async def _background(self, session_id: int) -> None:
        try:
            async with self._slot(session_id):
                await self.catch_up(session_id)
                while session_id in self._again and not self._closing:
                    self._again.discard(session_id)
                    await self.catch_up(session_id)
        except asyncio.CancelledError:
            raise
        except Exception:  # a background task has nobody to raise to
            log.exception("summary of session %s failed", session_id)
        finally:
            self._again.discard(session_id)

    @contextlib.asynccontextmanager
    async def _slot(self, session_id: int) -> AsyncIterator[None]:
        """One of the background slots, or none once a turn waits for this session."""
        wanted = self._wanted.setdefault(session_id, asyncio.Event())
        acquiring = asyncio.ensure_future(self._slots.acquire())
        waking = asyncio.ensure_future(wanted.wait())
        held = False
        try:
            try:
                await asyncio.wait({acquiring, waking}, return_when=asyncio.FIRST_COMPLETED)
            finally:
                waking.cancel()
                # a slot handed to a still pending acquire goes to the next in line when
                # it is cancelled (asyncio's Semaphore gives it back); a done one is kept
                acquiring.cancel()
                held = acquiring.done() and not acquiring.cancelled()
            yield
        finally:
            if held:
                self._slots.release()

    async def wait_idle(self) -> None:
        """Wait until no summarisation is running (tests, shutdown)."""
        while self._tasks:
            await asyncio.gather(*list(self._tasks.values()), return_exceptions=True)

    async def aclose(self, timeout_s: float = 10.0) -> None:
        """Refuse new work, wait up to `timeout_s` for running summaries, cancel the rest."""
        self._closing = True
        tasks = list(self._tasks.values())
        if not tasks:
            return
        _done, pending = await asyncio.wait(tasks, timeout=timeout_s)
        for task in pending:
            task.cancel()
        if pending:
            log.warning("cancelled %d unfinished summaries at shutdown", len(pending))
            await asyncio.gather(*pending, return_exceptions=True)

    # --- the work -------------------------------------------------------------------

    async def catch_up(self, session_id: int) -> SummaryOutcome:
        """Fold chunk after chunk until nothing is left, a call fails, or the run limit.

        Only a history that outgrew the budget starts a run; once started, the run folds
        down to the lower mark (`fold_to_percent`), chunk by chunk.
        """
        outcome = SummaryOutcome.NOTHING_TO_FOLD
        for chunk in range(self._max_chunks):
            outcome = await self.fold_once(session_id, started=chunk > 0)
            if outcome is not SummaryOutcome.UPDATED:
                break
        return outcome

    async def fold_once(self, session_id: int, *, started: bool = False) -> SummaryOutcome:
        """Fold the oldest unsummarised pairs (one bounded chunk) when the history after
        the summary outgrew the budget, or when a run that it `started` goes on."""
        summary = await self._conversations.summary(session_id)
        covers = summary.covers_message_id if summary is not None else 0
        pairs = await self._pairs_to_fold(session_id, covers, started=started)
        if not pairs:
            return SummaryOutcome.NOTHING_TO_FOLD
        rendered = self._prompts.render(SUMMARY_PROMPT_ID, max_words=self._max_words)
        messages: list[Message] = [
            {"role": "system", "content": rendered.text},
            {
                "role": "user",
                "content": summary_request_text(
                    summary.content if summary is not None else None, pairs
                ),
            },
        ]
        text = await self._call_model(session_id, messages)
        if text is None:
            return SummaryOutcome.FAILED
        await self._conversations.save_summary(
            session_id,
            content=truncate_to_tokens(text, self._max_tokens),
            covers_message_id=pairs[-1].last_id,
            prompt_ref=rendered.ref,
        )
        return SummaryOutcome.UPDATED

    async def _pairs_to_fold(
        self, session_id: int, covers: int, *, started: bool
    ) -> list[HistoryPair]:
        limit = window_read_limit(self._budget)
        recent = await self._conversations.recent_messages(session_id, after_id=covers, limit=limit)
        if not recent:
            return []
        units = to_pairs(recent)
        if not started and not leaves_out(
            recent, select_window(units, self._budget), read_limit=limit
        ):
            return []  # it all still fits the budget: no fold yet
        kept = select_window(units, self._fold_to)
        # everything older than what stays unfolded; with nothing kept (the newest pair
        # alone exceeds the lower mark) that is everything read
        before_id = kept[0].first_id if kept else recent[-1].id + 1
        candidates = await self._conversations.messages_between(
            session_id,
            after_id=covers,
            before_id=before_id,
            limit=limit,
        )
        chunk: list[HistoryPair] = []
        used = 0
        for pair in to_pairs(candidates):
            if chunk and used + pair.tokens > self._budget:
                break
            chunk.append(pair)
            used += pair.tokens
        return chunk

    async def _call_model(self, session_id: int, messages: list[Message]) -> str | None:
        started_at = self._clock()
        t0 = time.perf_counter()
        try:
            response = await self._model.complete_text(messages, max_tokens=self._max_tokens)
        except asyncio.CancelledError:
            raise
        except Exception as error:
            code = error.code if isinstance(error, LLMError) else "error"
            if isinstance(error, LLMError):
                log.warning("summary call for session %s failed: %s", session_id, code)
            else:
                log.exception("summary call for session %s failed unexpectedly", session_id)
            await self._record(session_id, self._usage(started_at, t0, error_code=code))
            return None
        text = (response.text or "").strip()
        error_code = None if text else "empty_summary"
        await self._record(session_id, self._usage(started_at, t0, error_code, response))
        if error_code is not None:
            log.warning("summary call for session %s returned no text", session_id)
            return None
        return text

    def _usage(
        self,
        started_at: float,
        t0: float,
        error_code: str | None,
        response: LLMResponse | None = None,
    ) -> ModelCallRecord:
        measured_ms = (time.perf_counter() - t0) * 1000.0
        return model_call_record(
            SUMMARY_PURPOSE,
            requested_model=self._model.model_name,
            started_at=started_at,
            # the client's own measurement when it reported one
            latency_ms=(response.latency_ms if response else 0.0) or measured_ms,
            response=response,
            error_code=error_code,
        )

    async def _record(self, session_id: int, call: ModelCallRecord) -> None:
        try:
            await self._recorder.save_model_call(call, session_id=session_id)
        except Exception:  # losing a usage row must not lose the summary
            log.exception("could not record the summary call of session %s", session_id)


# customer text inside these blocks is defused so it cannot close them
_DATA_TAGS = ("previous_summary", "messages")


def summary_request_text(previous: str | None, pairs: Sequence[HistoryPair]) -> str:
    """The data the summary prompt works on: the previous summary and the pairs to fold."""
    previous_text = defuse_tags(previous or "", *_DATA_TAGS)
    lines = ["<previous_summary>", previous_text, "</previous_summary>", "<messages>"]
    for pair in pairs:
        for message in pair.as_messages():
            speaker = "customer" if message["role"] == "user" else "assistant"
            lines.append(f"{speaker}: {defuse_tags(message['content'], *_DATA_TAGS)}")
    lines.append("</messages>")
    return "\n".join(lines)
