"""A shop's history for /stats, written through the repositories the bot itself uses.

Forty days of it before `NOW`: every turn outcome the owner's report tells apart
(completed, truncated, refused, withheld, stopped with and without text, failed for
each kind of reason, usage unknown), tool calls of several tools with every audit status
(business errors with and without a code, invented tool names, invalid arguments), chat
calls answered by a fallback model, summaries that worked and failed, ratings (one
changed), `/new` resets, handoffs from each source, and voice notes of each status.
Times fall on both sides of UTC and New York midnights and on several days, so the
periods, the daily roll-up's ragged ends and the chart buckets of a time zone all matter.

Durations and token counts are exact binary fractions, so a sum is the same number
whichever order a database adds it in.
"""

from __future__ import annotations

from dataclasses import dataclass

from storage.backend import Database
from storage.conversations import ConversationRepository
from storage.feedback import FeedbackRepository
from storage.handoffs import HandoffRepository
from storage.records import (
    AuditRecord,
    AuditStatus,
    HistoryPair,
    ModelCallRecord,
    TurnRecord,
    TurnRecorder,
)
from storage.voice import FAILED, OFF, TOO_LONG, TRANSCRIBED, VoiceNoteRepository

NOW = 1_800_000_000.0  # 2027-01-15 08:00 UTC, 03:00 in New York
HOUR = 3600.0
DAY = 86_400.0

# (stop reason, or error code of a failed turn; status), taken in turn by the turns
_TURN_OUTCOMES = (
    ("completed", "answered"),
    ("completed", "answered"),
    ("truncated", "answered"),
    ("refused", "answered"),
    ("withheld", "answered"),
    ("stopped", "answered"),  # with the text streamed so far
    ("stopped", "answered"),  # before any text: the "stopped" note (_STOPPED_SILENT)
    ("unavailable", "failed"),
    ("turn_timeout", "failed"),
    ("internal_error", "failed"),
    ("completed", "answered"),
)
_STOPPED_SILENT = 6  # the index in _TURN_OUTCOMES of the stop before any text
# hours before NOW at which a turn starts: inside 24 h, around midnights, days and weeks back
_TURN_AGES_H = (
    0.25, 1.5, 2.0, 5.0, 7.99, 8.0, 8.01, 12.5, 23.9, 24.0, 24.1, 27.0, 31.0, 32.0, 47.5,
    50.0, 71.0, 96.0, 100.0, 130.0, 167.9, 168.0, 171.0, 200.0, 250.0, 320.0, 400.0,
    480.0, 560.0, 600.0, 700.0, 719.9, 720.0, 721.0, 800.0, 900.0, 950.0,
)  # fmt: skip
_TOOLS = ("get_order_status", "get_return_policy", "get_shop_info", "request_human")
_AUDIT_OUTCOMES = (
    (AuditStatus.SUCCESS, None),
    (AuditStatus.SUCCESS, None),
    (AuditStatus.BUSINESS_ERROR, "not_found"),
    (AuditStatus.BUSINESS_ERROR, "rate_limited"),
    (AuditStatus.BUSINESS_ERROR, None),  # a business error stored without a code
    (AuditStatus.TIMEOUT, "timeout"),
    (AuditStatus.TECHNICAL_ERROR, "unavailable"),
    (AuditStatus.REJECTED, "invalid_arguments"),
)
_INVENTED_TOOLS = ("search_web", "create_order")  # every call rejected as unknown_tool


class Clock:
    """The repositories' clock, set by the seeding to each event's time."""

    def __init__(self) -> None:
        self.now = NOW

    def __call__(self) -> float:
        return self.now


@dataclass(frozen=True, slots=True)
class Seeded:
    """What was written, for tests that check a figure is not trivially zero."""

    turns: int
    tool_calls: int
    voice_notes: int


async def seed_history(db: Database) -> Seeded:
    """Write the whole history into `db` (an empty, migrated database of either backend)."""
    clock = Clock()
    conversations = ConversationRepository(db, clock=clock)
    recorder = TurnRecorder(db)
    feedback = FeedbackRepository(db)
    tool_calls = 0
    for n, age_h in enumerate(_TURN_AGES_H):
        started = NOW - age_h * HOUR
        clock.now = started
        chat = 100 + n % 7
        user = chat if n % 5 else 900 + n % 3  # some chats are groups with other members
        session = await conversations.open_session(chat)
        audits = _audits(n, started, chat, user)
        tool_calls += len(audits)
        turn = _turn(n, started, session, chat, user, tool_calls=len(audits))
        await recorder.save_turn(
            turn,
            audit_records=audits,
            model_calls=_chat_calls(n, started),
            history=_history(n, turn),
        )
        if n % 6 == 0:
            await recorder.save_model_call(_summary_call(n, started), session_id=session)
        if n % 4 == 0:
            answer = await feedback.answer(turn.id)
            if answer is not None:
                await feedback.record(answer, user_id=user, rating=1, rated_at=started + 60)
                if n % 8 == 0:  # changed their mind: counts once, as the latest rating
                    await feedback.record(answer, user_id=user, rating=-1, rated_at=started + 90)
        if n % 9 == 4:
            clock.now = started + 120.0
            await conversations.reset(chat)
    await _seed_handoffs(db, clock)
    notes = await _seed_voice(db, clock)
    return Seeded(turns=len(_TURN_AGES_H), tool_calls=tool_calls, voice_notes=notes)


def _turn(
    n: int, started: float, session: int, chat: int, user: int, *, tool_calls: int
) -> TurnRecord:
    reason, status = _TURN_OUTCOMES[n % len(_TURN_OUTCOMES)]
    failed = status == "failed"
    usage_known = n % 3 != 2
    return TurnRecord(
        id=f"turn-{n:03d}",
        session_id=session,
        chat_id=chat,
        user_id=user,
        started_at=started,
        duration_ms=250.0 * (1 + (n * 7) % 23),
        status=status,
        stop_reason="error" if failed else reason,
        error_code=reason if failed else None,
        model_steps=1 + n % 4,
        tool_calls=tool_calls,
        prompt_tokens=1000 + 16 * n if usage_known else None,
        completion_tokens=(100 + n if usage_known else None) if n % 7 else 64,
        total_tokens=None,
        prompt="support_chat@1",
        request_key=f"telegram:{5000 + n}",
        cached_tokens=(256 if n % 2 else None) if usage_known else None,
    )


def _history(n: int, turn: TurnRecord) -> HistoryPair | None:
    """Answered turns whose text reached the customer enter the history (as the chat service
    does); a refusal, a withheld answer, a stop before any text and a failure do not."""
    if turn.status != "answered" or turn.stop_reason in ("refused", "withheld"):
        return None
    if n % len(_TURN_OUTCOMES) == _STOPPED_SILENT:
        return None
    return HistoryPair(user_text="where is my order?", assistant_text="on its way")


def _audits(n: int, started: float, chat: int, user: int) -> list[AuditRecord]:
    audits = []
    for k in range(n % 4):
        status, code = _AUDIT_OUTCOMES[(n + k) % len(_AUDIT_OUTCOMES)]
        audits.append(
            AuditRecord(
                call_id=f"call-{n}-{k}",
                tool_name=_TOOLS[(n + 2 * k) % len(_TOOLS)],
                user_id=user,
                chat_id=chat,
                turn_id=None,
                session_id=None,
                started_at=started + 0.5 * (k + 1),
                duration_ms=0.5 if status is AuditStatus.REJECTED else 8.0 * (1 + (n + k) % 9),
                status=status,
                error_code=code,
            )
        )
    if n % 10 == 3:  # the model made a tool up
        audits.append(
            AuditRecord(
                call_id=f"call-{n}-x",
                tool_name=_INVENTED_TOOLS[n // 10 % 2],
                user_id=user,
                chat_id=chat,
                turn_id=None,
                session_id=None,
                started_at=started + 3.0,
                duration_ms=0.25,
                status=AuditStatus.REJECTED,
                error_code="unknown_tool",
            )
        )
    return audits


def _chat_calls(n: int, started: float) -> list[ModelCallRecord]:
    fallback = n % 5 == 1
    return [
        ModelCallRecord(
            purpose="chat",
            requested_model="primary",
            model="backup" if fallback else "primary",
            started_at=started,
            latency_ms=125.0,
            status="ok",
            prompt_tokens=500,
            completion_tokens=50,
            total_tokens=550,
        )
    ]


def _summary_call(n: int, started: float) -> ModelCallRecord:
    ok = n % 12 != 6
    return ModelCallRecord(
        purpose="summary",
        requested_model="primary",
        model="primary" if ok else None,
        started_at=started + 30.0,
        latency_ms=500.0,
        status="ok" if ok else "error",
        error_code=None if ok else "unavailable",
        prompt_tokens=2048 if ok else None,
        completion_tokens=128 if ok else None,
        cached_tokens=1024 if ok and n % 4 == 0 else None,
    )


async def _seed_handoffs(db: Database, clock: Clock) -> None:
    handoffs = HandoffRepository(db, clock=clock)
    plan = (
        # chat, source, hours ago, replied after (s), closed after (s)
        (301, "command", 3.0, 90.0, 600.0),
        (302, "button", 30.0, 45.5, None),  # still open
        (303, "model", 100.0, None, 3600.0),  # closed unanswered
        (304, "model", 500.0, 30.25, 120.0),
        (305, "command", 0.5, None, None),
    )
    for chat, source, age_h, reply_s, close_s in plan:
        started = NOW - age_h * HOUR
        clock.now = started
        handoff, _ = await handoffs.open(chat, source=source, reason=None)
        if reply_s is not None:
            clock.now = started + reply_s
            await handoffs.mark_replied(handoff.id)
        if close_s is not None:
            clock.now = started + close_s
            await handoffs.close(chat, reason="command")


async def _seed_voice(db: Database, clock: Clock) -> int:
    voice = VoiceNoteRepository(db, clock=clock)
    plan = (
        # hours ago, kind, seconds, status, error, transcription time
        (0.75, "voice", 12, TRANSCRIBED, None, 1.5),
        (2.5, "video_note", 30, TRANSCRIBED, None, 2.25),
        (4.0, "voice", 7, FAILED, "empty", 0.75),
        (26.0, "voice", 400, TOO_LONG, None, None),
        (60.0, "voice", 9, OFF, None, None),
        (300.0, "voice", 20, TRANSCRIBED, None, 3.0),
        (800.0, "video_note", 15, FAILED, "unavailable", 5.5),
    )
    for update_id, (age_h, kind, seconds, status, error, took) in enumerate(plan, start=7000):
        clock.now = NOW - age_h * HOUR
        await voice.receive(
            update_id, chat_id=100, kind=kind, duration_s=seconds, status="received"
        )
        await voice.finish(update_id, status, error_code=error, transcription_s=took)
    return len(plan)
