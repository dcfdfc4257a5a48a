"""The aggregates behind `/stats`, computed inside the database over a period [since, until).

Every figure is an SQL aggregate over an index range, so `/stats all` stays fast on a
history of millions of rows without pulling them into Python:

- tool-call counts come from range counts on (tool_name, status, started_at), one per
  tool, status and chart bucket — index stepping only, no sort;
- percentiles are one `ORDER BY duration LIMIT 1 OFFSET k`: on a long period a walk of
  a (…, duration_ms, …) index from whichever end is nearer to the rank, on a short one
  a sort of the period's own index range (SORT_LIMIT decides);
- distinct chats and users: a skip-scan (next id after the previous one, EXISTS in the
  period) on a long period instead of a DISTINCT sort, a plain DISTINCT on a short one;
- turn failures are read from a partial index that holds only the unusual turns;
- turn totals (count, steps, tool calls, tokens) of whole UTC days come from the daily
  roll-up `turn_totals_daily`, written in each turn's own transaction (so it cannot drift
  from `turns`, crash or not); only the period's ragged first and last day are scanned.

The indexes live at the end of `migrations/0002_conversations.sql`. `since=None` means
"from the beginning". Percentiles use the nearest-rank definition: the value at rank
ceil(p·n) in ascending order, so they are always values that really occurred.

The same SQL runs on SQLite and PostgreSQL (the same figures on the same rows). Where the
dialects differ the text comes from `Dialect`: SQLite keeps its text (`INDEXED BY`, and
`IS NOT 'completed'` as in the partial index of unusual turns, which SQLite uses only for
a query that repeats its condition) and so its plans (tests/unit/storage/
test_stats_plans.py); PostgreSQL needs no hints but a type for each parameter it cannot
infer (inside GREATEST, `?1 + ?3`).
Anything that depends on a collation (the order of equal counts) is sorted in Python.
"""

from __future__ import annotations

import math
from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any

from storage.backend import Database, Dialect
from storage.outcomes import OutcomeFigures, OutcomeRepository
from storage.records import DAY_S, AuditStatus

# The audit statuses a tool call can have (the CHECK constraint of tool_calls.status).
TOOL_STATUSES: tuple[str, ...] = tuple(status.value for status in AuditStatus)
_NO_LOWER_BOUND = float("-inf")
_NO_CODE = "unknown"  # key for a business error / rejection stored without a code
# Up to this many rows in the period, sorting them beats walking a whole ordered index.
SORT_LIMIT = 20_000
# Periods spanning at least this many whole UTC days read turn totals from the daily
# roll-up (`turn_totals_daily`); shorter ones scan their few turns directly.
ROLLUP_MIN_DAYS = 2


@dataclass(frozen=True, slots=True)
class ToolFigures:
    """One tool over the period. Rejected calls never ran, so durations leave them out."""

    tool_name: str
    calls: int
    success: int
    business_errors: dict[str, int]  # error code -> calls
    rejected: dict[str, int]  # unknown_tool / invalid_arguments -> calls
    timeouts: int
    technical_errors: int
    p50_ms: float | None
    p95_ms: float | None

    @property
    def business_error_total(self) -> int:
        return sum(self.business_errors.values())

    @property
    def rejected_total(self) -> int:
        return sum(self.rejected.values())


@dataclass(frozen=True, slots=True, order=True)
class ToolBucketCount:
    """Calls of one tool with one status inside chart bucket number `bucket`."""

    tool_name: str
    status: str
    bucket: int
    calls: int


@dataclass(frozen=True, slots=True)
class ToolUsage:
    tools: list[ToolFigures]
    buckets: list[ToolBucketCount]


@dataclass(frozen=True, slots=True)
class TurnFigures:
    """Turns started in the period. Token sums cover only turns whose usage is known."""

    count: int = 0
    chats: int = 0
    users: int = 0
    answered: int = 0
    failed: int = 0
    answered_by_stop_reason: dict[str, int] = field(default_factory=dict)
    failed_by_error: dict[str, int] = field(default_factory=dict)
    model_steps_total: int = 0
    model_steps_max: int | None = None
    tool_calls_total: int = 0
    p50_ms: float | None = None
    p95_ms: float | None = None
    prompt_tokens: int = 0
    completion_tokens: int = 0
    cached_tokens: int = 0  # part of prompt_tokens, where the provider reported them
    usage_known: int = 0
    usage_unknown: int = 0


@dataclass(frozen=True, slots=True)
class FeedbackFigures:
    """Ratings of the answers given in the period (each answer once, its latest rating)."""

    up: int = 0
    down: int = 0

    @property
    def rated(self) -> int:
        return self.up + self.down


@dataclass(frozen=True, slots=True)
class TokenFigures:
    """Tokens of calls whose usage is known (`cached` is part of `prompt`)."""

    prompt: int = 0
    completion: int = 0
    cached: int = 0


@dataclass(frozen=True, slots=True)
class QuestionBucket:
    """Turns started inside chart bucket number `bucket`, and how many went unanswered."""

    bucket: int
    turns: int
    not_answered: int


@dataclass(frozen=True, slots=True)
class ModelFigures:
    """Model calls in the period that matter to an admin."""

    fallback_answers: int = 0  # chat calls answered by a fallback model
    summaries_ok: int = 0
    summaries_failed: int = 0


@dataclass(frozen=True, slots=True)
class _Totals:
    """Sums over turns (raw or rolled up by day); they add up across disjoint ranges."""

    count: int = 0
    model_steps: int = 0
    max_model_steps: int | None = None
    tool_calls: int = 0
    prompt_tokens: int = 0
    completion_tokens: int = 0
    usage_unknown: int = 0
    cached_tokens: int = 0

    @classmethod
    def of(cls, row: Any) -> _Totals:
        if row is None or not row[0]:
            return cls()
        return cls(
            count=int(row[0]),
            model_steps=int(row[1] or 0),
            max_model_steps=None if row[2] is None else int(row[2]),
            tool_calls=int(row[3] or 0),
            prompt_tokens=int(row[4] or 0),
            completion_tokens=int(row[5] or 0),
            usage_unknown=int(row[6] or 0),
            cached_tokens=int(row[7] or 0),
        )

    def __add__(self, other: _Totals) -> _Totals:
        maxima = [m for m in (self.max_model_steps, other.max_model_steps) if m is not None]
        return _Totals(
            count=self.count + other.count,
            model_steps=self.model_steps + other.model_steps,
            max_model_steps=max(maxima) if maxima else None,
            tool_calls=self.tool_calls + other.tool_calls,
            prompt_tokens=self.prompt_tokens + other.prompt_tokens,
            completion_tokens=self.completion_tokens + other.completion_tokens,
            usage_unknown=self.usage_unknown + other.usage_unknown,
            cached_tokens=self.cached_tokens + other.cached_tokens,
        )


def _floats(dialect: Dialect, count: int) -> tuple[str, ...]:
    """`?1` … `?count` written as float parameters of `dialect` (index 0 is `?1`).

    PostgreSQL must know a parameter's type when it plans: inside GREATEST, or in
    `?1 + ?3`, it cannot infer one (it would pick text, or integer next to `i + 2`).
    """
    return tuple(dialect.float_param.replace("?", f"?{n}") for n in range(1, count + 1))


def _bucket_ranges(dialect: Dialect) -> str:
    """The chart buckets as a recursive CTE `buckets(i, lo, hi)` over ?1 bucket_start,
    ?2 the period's start, ?3 bucket width, ?4 the period's end (see `tool_usage`)."""
    start, low, width, until = _floats(dialect, 4)
    greatest, least = dialect.greatest, dialect.least
    return f"""
              buckets(i, lo, hi) AS (
                SELECT 0, {greatest}({start}, {low}), {least}({start} + {width}, {until})
                UNION ALL
                SELECT i + 1, hi, {least}({start} + (i + 2) * {width}, {until})
                FROM buckets WHERE hi < {until}
              )"""


def nearest_rank(percent: int, count: int) -> int:
    """1-based rank of the `percent`-th percentile among `count` values (integer maths)."""
    return max(1, (percent * count + 99) // 100)


class StatsRepository:
    """Read-only SQL for `/stats`; knows tables and indexes, not what the figures mean."""

    def __init__(self, db: Database) -> None:
        self._db = db
        self._dialect = db.dialect

    async def first_activity(self) -> float | None:
        """When the first turn or tool call started (None on an empty history)."""
        row = await self._db.fetch_one(
            "SELECT MIN(t) FROM ("
            " SELECT MIN(started_at) AS t FROM turns"
            " UNION ALL SELECT MIN(started_at) FROM tool_calls) AS firsts"
        )
        return None if row is None or row[0] is None else float(row[0])

    async def tool_usage(
        self, since: float | None, until: float, *, bucket_s: float, bucket_start: float
    ) -> ToolUsage:
        """Per-tool figures plus counts per chart bucket.

        Buckets are [bucket_start + i·bucket_s, …+bucket_s) clipped to [since, until);
        `bucket_start` must be <= every call counted, so together they cover the period.
        """
        if bucket_s <= 0:
            raise ValueError("bucket_s must be positive")
        low = _NO_LOWER_BOUND if since is None else since
        start, low_param, _, until_param = _floats(self._dialect, 4)
        rows = await self._db.fetch_all(
            f"""
            WITH RECURSIVE
              names(name) AS (
                SELECT MIN(tool_name) FROM tool_calls
                UNION ALL
                SELECT (SELECT MIN(tool_name) FROM tool_calls WHERE tool_name > names.name)
                FROM names WHERE names.name IS NOT NULL
              ),
              statuses(status) AS (
                VALUES ('success'), ('business_error'), ('rejected'), ('timeout'),
                       ('technical_error')
              ),
              pairs(name, status) AS (  -- only what occurred in the period: one seek each
                SELECT name, status FROM names, statuses
                WHERE name IS NOT NULL AND EXISTS (
                  SELECT 1 FROM tool_calls AS c
                  WHERE c.tool_name = names.name AND c.status = statuses.status
                    AND c.started_at >= {self._dialect.greatest}({start}, {low_param})
                    AND c.started_at < {until_param})
              ),{_bucket_ranges(self._dialect)}
            SELECT name, status, i, calls FROM (
              SELECT name, status, i,
                     (SELECT COUNT(*) FROM tool_calls AS c
                      WHERE c.tool_name = pairs.name AND c.status = pairs.status
                        AND c.started_at >= buckets.lo AND c.started_at < buckets.hi) AS calls
              FROM pairs, buckets
            ) AS counted
            WHERE calls > 0
            """,
            (bucket_start, low, bucket_s, until),
        )
        # ordered here: PostgreSQL returns the rows in no particular order
        buckets = sorted(ToolBucketCount(r[0], r[1], int(r[2]), int(r[3])) for r in rows)
        by_tool: dict[str, dict[str, int]] = {}
        for b in buckets:
            statuses = by_tool.setdefault(b.tool_name, dict.fromkeys(TOOL_STATUSES, 0))
            statuses[b.status] += b.calls
        tools = [await self._figures(n, by_tool[n], low, until) for n in sorted(by_tool)]
        return ToolUsage(tools=tools, buckets=buckets)

    async def _figures(
        self, name: str, counts: dict[str, int], low: float, until: float
    ) -> ToolFigures:
        """One tool's row: its calls by status, error codes and durations."""
        business = await self._error_codes(name, "business_error", low, until, counts)
        rejected = await self._error_codes(name, "rejected", low, until, counts)
        ran = sum(counts.values()) - counts["rejected"]
        return ToolFigures(
            tool_name=name,
            calls=sum(counts.values()),
            success=counts["success"],
            business_errors=business,
            rejected=rejected,
            timeouts=counts["timeout"],
            technical_errors=counts["technical_error"],
            p50_ms=await self._tool_duration_at(name, low, until, 50, ran),
            p95_ms=await self._tool_duration_at(name, low, until, 95, ran),
        )

    async def _error_codes(
        self, tool: str, status: str, low: float, until: float, counts: dict[str, int]
    ) -> dict[str, int]:
        if counts[status] == 0:
            return {}
        rows = await self._db.fetch_all(
            "SELECT COALESCE(error_code, ?), COUNT(*) FROM tool_calls"
            " WHERE tool_name = ? AND status = ? AND started_at >= ? AND started_at < ?"
            " GROUP BY 1",
            (_NO_CODE, tool, status, low, until),
        )
        return _most_first((str(r[0]), int(r[1])) for r in rows)

    async def _tool_duration_at(
        self, tool: str, low: float, until: float, percent: int, count: int
    ) -> float | None:
        if count == 0:
            return None
        rank = nearest_rank(percent, count)
        if count <= SORT_LIMIT:
            # few rows in the period: read its index range and sort it
            row = await self._db.fetch_one(
                "SELECT duration_ms FROM tool_calls"
                f" {self._dialect.indexed_by('tool_calls_stats_status')}"
                " WHERE tool_name = ?"
                " AND status IN ('success', 'business_error', 'timeout', 'technical_error')"
                " AND started_at >= ? AND started_at < ?"
                " ORDER BY duration_ms LIMIT 1 OFFSET ?",
                (tool, low, until, rank - 1),
            )
            return None if row is None else float(row[0])
        # many rows: walk (tool_name, duration_ms, …) in order from the nearer end; `+`
        # keeps the planner off the time index, whose sort would cost more than the walk
        ascending = rank - 1 <= count - rank
        row = await self._db.fetch_one(
            "SELECT duration_ms FROM tool_calls"
            f" {self._dialect.indexed_by('tool_calls_stats_duration')}"
            " WHERE tool_name = ? AND status <> 'rejected'"
            " AND +started_at >= ? AND +started_at < ?"
            f" ORDER BY duration_ms {'ASC' if ascending else 'DESC'} LIMIT 1 OFFSET ?",
            (tool, low, until, rank - 1 if ascending else count - rank),
        )
        return None if row is None else float(row[0])

    async def _turn_totals(self, low: float, until: float) -> _Totals:
        """The period's turn totals: whole UTC days from `turn_totals_daily`, the ragged
        first and last day from the turns' covering index."""
        first_day = low if low == _NO_LOWER_BOUND else math.ceil(low / DAY_S) * DAY_S
        end_day = math.floor(until / DAY_S) * DAY_S
        if end_day - first_day < ROLLUP_MIN_DAYS * DAY_S:
            return await self._raw_totals(low, until)
        row = await self._db.fetch_one(
            "SELECT SUM(turns), SUM(model_steps), MAX(max_model_steps), SUM(tool_calls),"
            " SUM(prompt_tokens), SUM(completion_tokens), SUM(usage_unknown), SUM(cached_tokens)"
            " FROM turn_totals_daily WHERE day >= ? AND day < ?",
            (first_day, end_day),
        )
        days = _Totals.of(row)
        head = await self._raw_totals(low, first_day) if low < first_day else _Totals()
        tail = await self._raw_totals(end_day, until)
        return days + head + tail

    async def _raw_totals(self, low: float, until: float) -> _Totals:
        row = await self._db.fetch_one(
            """
            SELECT COUNT(*),
                   SUM(model_steps), MAX(model_steps), SUM(tool_calls),
                   SUM(prompt_tokens) FILTER (WHERE completion_tokens IS NOT NULL),
                   SUM(completion_tokens) FILTER (WHERE prompt_tokens IS NOT NULL),
                   COUNT(*) FILTER (WHERE prompt_tokens IS NULL OR completion_tokens IS NULL),
                   SUM(cached_tokens) FILTER (
                     WHERE prompt_tokens IS NOT NULL AND completion_tokens IS NOT NULL)
            FROM turns WHERE started_at >= ? AND started_at < ?
            """,
            (low, until),
        )
        return _Totals.of(row)

    async def turn_figures(self, since: float | None, until: float) -> TurnFigures:
        low = _NO_LOWER_BOUND if since is None else since
        totals = await self._turn_totals(low, until)
        count = totals.count
        if count == 0:
            return TurnFigures()
        # Only unusual turns are in this partial index; the WHERE repeats its condition.
        unusual = await self._db.fetch_all(
            f"""
            SELECT status, stop_reason, error_code, COUNT(*) FROM turns
            WHERE (status <> 'answered' OR stop_reason {self._dialect.is_distinct} 'completed')
              AND started_at >= ? AND started_at < ?
            GROUP BY 1, 2, 3
            """,
            (low, until),
        )
        answered_by: dict[str, int] = {}
        failed_by: dict[str, int] = {}
        unusual_total = 0
        for status, stop_reason, error_code, n in unusual:
            unusual_total += n
            if status == "answered":
                key = stop_reason or _NO_CODE
                answered_by[key] = answered_by.get(key, 0) + n
            else:
                key = error_code or stop_reason or _NO_CODE
                failed_by[key] = failed_by.get(key, 0) + n
        completed = count - unusual_total
        if completed:
            answered_by["completed"] = completed
        unknown = totals.usage_unknown
        chats, users = await self._distinct_chats_and_users(low, until, count)
        return TurnFigures(
            count=count,
            chats=chats,
            users=users,
            answered=sum(answered_by.values()),
            failed=sum(failed_by.values()),
            answered_by_stop_reason=_most_first(answered_by.items()),
            failed_by_error=_most_first(failed_by.items()),
            model_steps_total=totals.model_steps,
            model_steps_max=totals.max_model_steps,
            tool_calls_total=totals.tool_calls,
            p50_ms=await self._turn_duration_at(low, until, 50, count),
            p95_ms=await self._turn_duration_at(low, until, 95, count),
            prompt_tokens=totals.prompt_tokens,
            completion_tokens=totals.completion_tokens,
            cached_tokens=totals.cached_tokens,
            usage_known=count - unknown,
            usage_unknown=unknown,
        )

    async def _distinct_chats_and_users(
        self, low: float, until: float, count: int
    ) -> tuple[int, int]:
        if count <= SORT_LIMIT:
            row = await self._db.fetch_one(
                "SELECT COUNT(DISTINCT chat_id), COUNT(DISTINCT user_id) FROM turns"
                " WHERE started_at >= ? AND started_at < ?",
                (low, until),
            )
            return (int(row[0]), int(row[1])) if row else (0, 0)
        chats = await self._skip_scan_count("chat_id", low, until)
        users = await self._skip_scan_count("user_id", low, until)
        return chats, users

    async def _skip_scan_count(self, column: str, low: float, until: float) -> int:
        """Distinct ids with a turn in the period: jump id to id, check each with EXISTS."""
        if column not in ("chat_id", "user_id"):  # a column name cannot be a parameter
            raise ValueError(column)
        row = await self._db.fetch_one(
            f"""
            WITH RECURSIVE ids(id) AS (
              SELECT MIN({column}) FROM turns
              UNION ALL
              SELECT (SELECT MIN({column}) FROM turns WHERE {column} > ids.id)
              FROM ids WHERE ids.id IS NOT NULL
            )
            SELECT COUNT(*) FROM ids
            WHERE id IS NOT NULL AND EXISTS (
              SELECT 1 FROM turns AS t
              WHERE t.{column} = ids.id AND t.started_at >= ? AND t.started_at < ?)
            """,
            (low, until),
        )
        return int(row[0]) if row else 0

    async def _turn_duration_at(
        self, low: float, until: float, percent: int, count: int
    ) -> float | None:
        rank = nearest_rank(percent, count)
        if count <= SORT_LIMIT:
            row = await self._db.fetch_one(
                "SELECT duration_ms FROM turns WHERE started_at >= ? AND started_at < ?"
                " ORDER BY +duration_ms LIMIT 1 OFFSET ?",
                (low, until, rank - 1),
            )
            return None if row is None else float(row[0])
        ascending = rank - 1 <= count - rank
        row = await self._db.fetch_one(
            f"SELECT duration_ms FROM turns {self._dialect.indexed_by('turns_stats_duration')}"
            " WHERE +started_at >= ? AND +started_at < ?"
            f" ORDER BY duration_ms {'ASC' if ascending else 'DESC'} LIMIT 1 OFFSET ?",
            (low, until, rank - 1 if ascending else count - rank),
        )
        return None if row is None else float(row[0])

    async def model_figures(self, since: float | None, until: float) -> ModelFigures:
        low = _NO_LOWER_BOUND if since is None else since
        fallback = await self._db.fetch_one(
            "SELECT COUNT(*) FROM llm_calls"
            " WHERE purpose = 'chat' AND fallback = 1 AND started_at >= ? AND started_at < ?",
            (low, until),
        )
        summaries = await self._db.fetch_all(
            "SELECT status, COUNT(*) FROM llm_calls"
            " WHERE purpose = 'summary' AND started_at >= ? AND started_at < ?"
            " GROUP BY status",
            (low, until),
        )
        by_status = {str(r[0]): int(r[1]) for r in summaries}
        return ModelFigures(
            fallback_answers=int(fallback[0]) if fallback else 0,
            summaries_ok=by_status.get("ok", 0),
            summaries_failed=by_status.get("error", 0),
        )

    async def resets(self, since: float | None, until: float) -> int:
        """Sessions closed by `/new` in the period."""
        low = _NO_LOWER_BOUND if since is None else since
        row = await self._db.fetch_one(
            "SELECT COUNT(*) FROM sessions"
            " WHERE close_reason = 'reset' AND closed_at >= ? AND closed_at < ?",
            (low, until),
        )
        return int(row[0]) if row else 0

    async def feedback_figures(self, since: float | None, until: float) -> FeedbackFigures:
        """👍 and 👎 of the answers given in the period: two range counts on one index."""
        low = _NO_LOWER_BOUND if since is None else since
        rows = await self._db.fetch_all(
            "SELECT rating, COUNT(*) FROM answer_feedback"
            " WHERE answered_at >= ? AND answered_at < ? GROUP BY rating",
            (low, until),
        )
        by_rating = {int(r[0]): int(r[1]) for r in rows}
        return FeedbackFigures(up=by_rating.get(1, 0), down=by_rating.get(-1, 0))

    async def summary_tokens(self, since: float | None, until: float) -> TokenFigures:
        """Tokens of the conversation summaries made in the period (they cost too)."""
        low = _NO_LOWER_BOUND if since is None else since
        row = await self._db.fetch_one(
            "SELECT SUM(prompt_tokens), SUM(completion_tokens), SUM(cached_tokens)"
            f" FROM llm_calls {self._dialect.indexed_by('llm_calls_stats_summary')}"
            " WHERE purpose = 'summary' AND started_at >= ? AND started_at < ?"
            " AND prompt_tokens IS NOT NULL AND completion_tokens IS NOT NULL",
            (low, until),
        )
        if row is None:
            return TokenFigures()
        return TokenFigures(int(row[0] or 0), int(row[1] or 0), int(row[2] or 0))

    async def question_buckets(
        self, since: float | None, until: float, *, bucket_s: float, bucket_start: float
    ) -> list[QuestionBucket]:
        """Turns and unanswered turns per chart bucket (same buckets as `tool_usage`).

        Each bucket is two range counts: all turns on the time index, the unanswered
        (failed, refused or withheld) on the partial index of unusual turns.
        """
        if bucket_s <= 0:
            raise ValueError("bucket_s must be positive")
        low = _NO_LOWER_BOUND if since is None else since
        dialect = self._dialect
        is_not = dialect.is_distinct  # SQLite: "IS NOT", as in the partial index
        rows = await self._db.fetch_all(
            f"""
            WITH RECURSIVE{_bucket_ranges(dialect)}
            SELECT i,
                   (SELECT COUNT(*) FROM turns AS t {dialect.indexed_by("turns_started_at")}
                    WHERE t.started_at >= buckets.lo AND t.started_at < buckets.hi),
                   (SELECT COUNT(*) FROM turns AS u
                    WHERE (u.status <> 'answered' OR u.stop_reason {is_not} 'completed')
                      AND (u.status = 'failed' OR u.stop_reason IN ('refused', 'withheld'))
                      AND u.started_at >= buckets.lo AND u.started_at < buckets.hi)
            FROM buckets
            """,
            (bucket_start, low, bucket_s, until),
        )
        return [QuestionBucket(int(r[0]), int(r[1]), int(r[2])) for r in rows if r[1]]

    async def outcome_figures(
        self, since: float | None, until: float, window_s: float
    ) -> OutcomeFigures:
        """The questions by outcome and how many were resolved (storage/outcomes.py)."""
        return await OutcomeRepository(self._db).figures(since, until, window_s)

    async def stopped_turns(self, since: float | None, until: float) -> tuple[int, int]:
        """Turns the customer stopped (stop button of a streamed answer) in the period, and
        how many of them had answer text by then (the rest got the short "stopped" note)."""
        low = _NO_LOWER_BOUND if since is None else since
        row = await self._db.fetch_one(
            "SELECT COUNT(*), COUNT(m.id) FROM turns AS t"
            " LEFT JOIN messages AS m ON m.turn_id = t.id AND m.role = 'assistant'"
            " WHERE t.stop_reason = 'stopped' AND t.started_at >= ? AND t.started_at < ?",
            (low, until),
        )
        return (int(row[0]), int(row[1])) if row else (0, 0)


def _most_first(counts: Iterable[tuple[str, int]]) -> dict[str, int]:
    """Counts by key, largest first; equal counts in code-point order of their keys.

    The order is decided here, not by the database: PostgreSQL would order text by its
    collation (which differs between servers) and group rows in no particular order.
    """
    return dict(sorted(counts, key=lambda kv: (-kv[1], kv[0])))
