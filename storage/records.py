"""What happened in each turn, stored for `/stats` and for audit.

One turn is written in ONE transaction: its `turns` row, the audit rows of its tool
calls, the usage rows of its model calls, its share of the day's totals for /stats
(`turn_totals_daily`) and, when the turn was answered, its history pair. So the records,
the roll-up and the history never disagree, and a crash leaves either all of a turn or
none of it. Unknown token counts stay NULL, never 0.

The row types (`TurnRecord`, `AuditRecord`, `ModelCallRecord`, `AuditStatus`) live here,
in the lowest layer, because they are what storage stores: tools and services build them
and import them from here, so no layer has to mirror another's types.
"""

from __future__ import annotations

import logging
import math
from collections.abc import Sequence
from dataclasses import dataclass
from enum import StrEnum
from typing import Protocol

from storage.backend import Database, Dialect, Statement
from storage.conversations import pair_statements
from storage.database import is_unique_violation

log = logging.getLogger(__name__)


class AuditStatus(StrEnum):
    """The vocabulary of `tool_calls.status`: how one tool call ended."""

    SUCCESS = "success"
    BUSINESS_ERROR = "business_error"
    REJECTED = "rejected"
    TIMEOUT = "timeout"
    TECHNICAL_ERROR = "technical_error"


@dataclass(frozen=True, slots=True)
class AuditRecord:
    """One row of `tool_calls`: no raw arguments or results (they may hold personal data).

    Built by the tool executor (`tools.executor.audit_record`); `turn_id` and
    `session_id` are informative only: the row takes the ids of the turn it is saved with.
    """

    call_id: str
    tool_name: str
    user_id: int
    chat_id: int
    turn_id: str | None
    session_id: int | None
    started_at: float  # unix seconds
    duration_ms: float
    status: AuditStatus
    error_code: str | None = None


@dataclass(frozen=True, slots=True)
class ModelCallRecord:
    """One row of `llm_calls` (built by `services.loop_types.model_call_record`)."""

    purpose: str  # "chat" | "summary"
    requested_model: str
    model: str | None
    started_at: float
    latency_ms: float
    status: str  # "ok" | "error"
    error_code: str | None = None
    finish_reason: str | None = None
    prompt_tokens: int | None = None
    completion_tokens: int | None = None
    total_tokens: int | None = None
    cached_tokens: int | None = None  # part of prompt_tokens; None = not reported
    response_id: str | None = None

    @property
    def fallback(self) -> bool:
        return self.model is not None and self.model != self.requested_model


@dataclass(frozen=True, slots=True)
class TurnRecord:
    """One row of `turns`."""

    id: str
    session_id: int
    chat_id: int
    user_id: int
    started_at: float  # unix seconds
    duration_ms: float
    status: str  # "answered" | "failed"
    stop_reason: str | None  # completed | truncated | refused | error
    error_code: str | None
    model_steps: int
    tool_calls: int
    prompt_tokens: int | None
    completion_tokens: int | None
    total_tokens: int | None
    prompt: str  # system prompt id@version
    request_key: str | None = None  # what the turn answered (e.g. "telegram:<update_id>")
    cached_tokens: int | None = None  # cached input tokens (part of prompt_tokens)
    # what the turn offered besides its text, as JSON (services/offers.py); None: nothing
    offers: str | None = None
    # what became of the question (services/outcomes.py) and the tools it stood on
    outcome: str | None = None
    fact_tools: str | None = None
    repeat_of: str | None = None  # the chat's earlier turn this question asks again


@dataclass(frozen=True, slots=True)
class AnsweredTurn:
    """An answered turn found by its request key: what the customer was told."""

    turn_id: str
    stop_reason: str | None
    answer: str | None  # None when nothing entered the history (refused, withheld)
    offers: str | None = None  # as stored with the turn (TurnRecord.offers)


@dataclass(frozen=True, slots=True)
class HistoryPair:
    """The user message and the final answer that an answered turn adds to history."""

    user_text: str
    assistant_text: str
    user_transcribed: bool = False  # the user's message was heard in a voice note


class RecordObserver(Protocol):
    """Told about every record once it is committed (the bot's metrics, bot/runtime/metrics.py).

    Called after the transaction, so a write retried after a storage fault is observed
    once; called inline, so it must be cheap and must not block.
    """

    def turn_saved(
        self,
        turn: TurnRecord,
        audit_records: Sequence[AuditRecord],
        model_calls: Sequence[ModelCallRecord],
    ) -> None: ...

    def model_call_saved(self, call: ModelCallRecord) -> None: ...


class TurnRecorder:
    """Writes `turns`, `tool_calls` and `llm_calls` rows."""

    def __init__(self, db: Database, *, observer: RecordObserver | None = None) -> None:
        self._db = db
        self._observer = observer

    async def answered_turn(self, request_key: str) -> AnsweredTurn | None:
        """The answered turn of `request_key`, if one was stored."""
        row = await self._db.fetch_one(
            "SELECT t.id, t.stop_reason, m.content, t.offers FROM turns AS t "
            "LEFT JOIN messages AS m ON m.turn_id = t.id AND m.role = 'assistant' "
            "WHERE t.request_key = ? AND t.status = 'answered'",
            (request_key,),
        )
        if row is None:
            return None
        return AnsweredTurn(turn_id=row[0], stop_reason=row[1], answer=row[2], offers=row[3])

    async def recent_questions(
        self, chat_id: int, *, since: float, limit: int = 3
    ) -> list[tuple[str, str]]:
        """The chat's latest questions since `since` that reached the history, newest
        first, as (turn id, the customer's words): what a new question may repeat."""
        rows = await self._db.fetch_all(
            "SELECT t.id, m.content FROM turns AS t"
            " JOIN messages AS m ON m.turn_id = t.id AND m.role = 'user'"
            " WHERE t.chat_id = ? AND t.started_at >= ?"
            " ORDER BY t.started_at DESC LIMIT ?",
            (chat_id, since, limit),
        )
        return [(str(r[0]), str(r[1])) for r in rows]

    async def save_turn(
        self,
        turn: TurnRecord,
        *,
        audit_records: Sequence[AuditRecord] = (),
        model_calls: Sequence[ModelCallRecord] = (),
        history: HistoryPair | None = None,
    ) -> bool:
        """Store the turn with its records in one transaction; True if stored now.

        False when this turn, or an answered turn for the same request, is already
        stored: a retry after a COMMIT whose outcome was lost (the connection dropped
        while PostgreSQL committed), or a second instance that ran the same update after
        its claim expired. The unique key refuses the copy and the stored turn stands.
        """
        try:
            await self._insert_turn(turn, audit_records, model_calls, history)
        except Exception as exc:
            if is_unique_violation(exc) and await self._already_stored(turn):
                log.warning("turn %s was already stored; keeping the stored one", turn.id)
                return False
            raise
        if self._observer is not None:
            try:
                self._observer.turn_saved(turn, audit_records, model_calls)
            except Exception:  # metrics never cost a stored turn its reply
                log.exception("the record observer failed on turn %s", turn.id)
        return True

    async def _already_stored(self, turn: TurnRecord) -> bool:
        """Whether `turn` itself, or an answered turn of its request, is stored."""
        row = await self._db.fetch_one(
            "SELECT 1 FROM turns WHERE id = ? OR (request_key = ? AND status = 'answered')",
            (turn.id, turn.request_key),
        )
        return row is not None

    async def _insert_turn(
        self,
        turn: TurnRecord,
        audit_records: Sequence[AuditRecord],
        model_calls: Sequence[ModelCallRecord],
        history: HistoryPair | None,
    ) -> None:
        statements: list[Statement] = [
            _turn_insert(turn),
            _daily_totals(self._db.dialect, turn),
            *(_audit_insert(audit, turn) for audit in audit_records),
            *(
                _model_call_insert(call, turn_id=turn.id, session_id=turn.session_id)
                for call in model_calls
            ),
        ]
        if history is not None:
            statements += pair_statements(
                session_id=turn.session_id,
                user_text=history.user_text,
                assistant_text=history.assistant_text,
                turn_id=turn.id,
                created_at=turn.started_at + turn.duration_ms / 1000.0,
                user_transcribed=history.user_transcribed,
            )
        # every turn writes this, so it is one round trip for the one writer
        await self._db.write_all(statements)

    async def save_model_call(
        self, call: ModelCallRecord, *, session_id: int | None, turn_id: str | None = None
    ) -> None:
        """A model call outside a turn's transaction (the summarizer's)."""
        await self._db.write(*_model_call_insert(call, turn_id=turn_id, session_id=session_id))
        if self._observer is not None:
            try:
                self._observer.model_call_saved(call)
            except Exception:
                log.exception("the record observer failed on a model call")


DAY_S = 86_400.0


def day_of(started_at: float) -> float:
    """The UTC midnight (unix seconds) of the day `started_at` falls in."""
    return math.floor(started_at / DAY_S) * DAY_S


def _turn_insert(turn: TurnRecord) -> Statement:
    return (
        "INSERT INTO turns(id, session_id, chat_id, user_id, started_at, duration_ms, "
        "status, stop_reason, error_code, model_steps, tool_calls, prompt_tokens, "
        "completion_tokens, total_tokens, prompt, request_key, cached_tokens, offers, "
        "outcome, fact_tools, repeat_of) "
        "VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
        (
            turn.id,
            turn.session_id,
            turn.chat_id,
            turn.user_id,
            turn.started_at,
            turn.duration_ms,
            turn.status,
            turn.stop_reason,
            turn.error_code,
            turn.model_steps,
            turn.tool_calls,
            turn.prompt_tokens,
            turn.completion_tokens,
            turn.total_tokens,
            turn.prompt,
            turn.request_key,
            turn.cached_tokens,
            turn.offers,
            turn.outcome,
            turn.fact_tools,
            turn.repeat_of,
        ),
    )


def _daily_totals_upsert(dialect: Dialect) -> str:
    """The roll-up's upsert; the updated columns are qualified by the table, as PostgreSQL
    requires (a bare `turns` there is ambiguous with `excluded.turns`)."""
    t = "turn_totals_daily"
    return (
        f"INSERT INTO {t} (day, turns, model_steps, max_model_steps, tool_calls,"
        " prompt_tokens, completion_tokens, cached_tokens, usage_unknown)"
        " VALUES (?, 1, ?, ?, ?, ?, ?, ?, ?)"
        f" ON CONFLICT(day) DO UPDATE SET turns = {t}.turns + 1,"
        f" model_steps = {t}.model_steps + excluded.model_steps,"
        f" max_model_steps = {dialect.greatest}({t}.max_model_steps, excluded.max_model_steps),"
        f" tool_calls = {t}.tool_calls + excluded.tool_calls,"
        f" prompt_tokens = {t}.prompt_tokens + excluded.prompt_tokens,"
        f" completion_tokens = {t}.completion_tokens + excluded.completion_tokens,"
        f" cached_tokens = {t}.cached_tokens + excluded.cached_tokens,"
        f" usage_unknown = {t}.usage_unknown + excluded.usage_unknown"
    )


def _daily_totals(dialect: Dialect, turn: TurnRecord) -> Statement:
    """The turn's share of `turn_totals_daily`, in the turn's own transaction (/stats)."""
    known = turn.prompt_tokens is not None and turn.completion_tokens is not None
    return (
        _daily_totals_upsert(dialect),
        (
            day_of(turn.started_at),
            turn.model_steps,
            turn.model_steps,
            turn.tool_calls,
            (turn.prompt_tokens or 0) if known else 0,
            (turn.completion_tokens or 0) if known else 0,
            (turn.cached_tokens or 0) if known else 0,
            0 if known else 1,
        ),
    )


def _audit_insert(audit: AuditRecord, turn: TurnRecord) -> Statement:
    # the turn's own ids win: the audit row belongs to the turn it is stored with
    return (
        "INSERT INTO tool_calls(turn_id, session_id, chat_id, user_id, call_id, tool_name, "
        "started_at, duration_ms, status, error_code) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
        (
            turn.id,
            turn.session_id,
            audit.chat_id,
            audit.user_id,
            audit.call_id,
            audit.tool_name,
            audit.started_at,
            audit.duration_ms,
            str(audit.status),
            audit.error_code,
        ),
    )


def _model_call_insert(
    call: ModelCallRecord, *, turn_id: str | None, session_id: int | None
) -> Statement:
    return (
        "INSERT INTO llm_calls(turn_id, session_id, purpose, requested_model, model, fallback, "
        "started_at, latency_ms, status, error_code, finish_reason, prompt_tokens, "
        "completion_tokens, total_tokens, response_id, cached_tokens) "
        "VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
        (
            turn_id,
            session_id,
            call.purpose,
            call.requested_model,
            call.model,
            1 if call.fallback else 0,
            call.started_at,
            call.latency_ms,
            call.status,
            call.error_code,
            call.finish_reason,
            call.prompt_tokens,
            call.completion_tokens,
            call.total_tokens,
            call.response_id,
            call.cached_tokens,
        ),
    )
