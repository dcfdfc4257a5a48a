"""Rows of `voice_notes`: one per voice or video note the bot handled.

A row is keyed by the update that carried the note, so handling the same update again
after a crash finds it: a transcript stored before the crash is used instead of
transcribing the note a second time. The transcript stays only until the reply is
stored (`forget_transcript`); the audio is never stored. The counts behind `/stats`
(`status_counts`) are read here too; what they mean is `services.stats`' business.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Literal

from storage.backend import Database

VoiceKind = Literal["voice", "video_note"]
# the vocabulary of voice_notes.status (the CHECK constraint of migration 0010)
RECEIVED = "received"  # being handled: downloaded and transcribed next
TRANSCRIBED = "transcribed"
FAILED = "failed"  # download or transcription failed, or nothing was heard
TOO_LONG = "too_long"  # refused without a download (VOICE_MAX_SECONDS)
OFF = "off"  # transcription is off (no TRANSCRIPTION_MODEL, or the endpoint lacks it)
_NO_LOWER_BOUND = float("-inf")


@dataclass(frozen=True, slots=True)
class VoiceNoteRow:
    update_id: int
    chat_id: int
    kind: str
    duration_s: int
    status: str
    error_code: str | None
    transcription_s: float | None
    transcript: str | None


@dataclass(frozen=True, slots=True)
class VoiceStatusCount:
    """Notes of one status (and error code) received in a period, with their seconds."""

    status: str
    error_code: str | None
    notes: int
    audio_s: int  # the notes' own length, as Telegram states it
    transcription_s: float  # time spent transcribing them


class VoiceNoteRepository:
    """Reads and writes `voice_notes`; `clock()` returns unix seconds."""

    def __init__(self, db: Database, *, clock: Callable[[], float] = time.time) -> None:
        self._db = db
        self._clock = clock

    async def get(self, update_id: int) -> VoiceNoteRow | None:
        row = await self._db.fetch_one(
            "SELECT update_id, chat_id, kind, duration_s, status, error_code, "
            "transcription_s, transcript FROM voice_notes WHERE update_id = ?",
            (update_id,),
        )
        if row is None:
            return None
        return VoiceNoteRow(*tuple(row))

    async def receive(
        self, update_id: int, *, chat_id: int, kind: VoiceKind, duration_s: int, status: str
    ) -> None:
        """Record a note as it arrives (a second call for the same update changes nothing)."""
        await self._db.write(
            "INSERT INTO voice_notes(update_id, chat_id, kind, duration_s, received_at, status) "
            "VALUES (?, ?, ?, ?, ?, ?) ON CONFLICT(update_id) DO NOTHING",
            (update_id, chat_id, kind, duration_s, self._clock(), status),
        )

    async def finish(
        self,
        update_id: int,
        status: str,
        *,
        error_code: str | None = None,
        transcription_s: float | None = None,
        transcript: str | None = None,
    ) -> None:
        await self._db.write(
            "UPDATE voice_notes SET status = ?, error_code = ?, "
            "transcription_s = coalesce(?, transcription_s), transcript = ? "
            "WHERE update_id = ?",
            (status, error_code, transcription_s, transcript, update_id),
        )

    async def forget_transcript(self, update_id: int) -> None:
        """The reply is stored: the transcript is no longer needed here."""
        await self._db.write(
            "UPDATE voice_notes SET transcript = NULL WHERE update_id = ? "
            "AND transcript IS NOT NULL",
            (update_id,),
        )

    async def forget_answered_transcripts(self) -> int:
        """Clear the transcripts of notes whose update is no longer pending (a crash came
        between storing the reply and `forget_transcript`); returns how many."""
        return await self._db.write(
            "UPDATE voice_notes SET transcript = NULL WHERE transcript IS NOT NULL "
            "AND NOT EXISTS (SELECT 1 FROM updates AS u "
            "WHERE u.update_id = voice_notes.update_id AND u.status = 'pending')"
        )

    async def status_counts(self, since: float | None, until: float) -> list[VoiceStatusCount]:
        """Notes received in [since, until) per status and error code (`since=None`: all)."""
        c = self._db.dialect.collate_binary
        rows = await self._db.fetch_all(
            "SELECT status, error_code, count(*), coalesce(sum(duration_s), 0), "
            "coalesce(sum(transcription_s), 0.0) FROM voice_notes "
            "WHERE received_at >= ? AND received_at < ? GROUP BY status, error_code "
            # byte order and NULL first, as SQLite sorts (PostgreSQL: collation, NULL last)
            f"ORDER BY status{c}, error_code{c} NULLS FIRST",
            (_NO_LOWER_BOUND if since is None else since, until),
        )
        return [
            VoiceStatusCount(
                status=r[0],
                error_code=r[1],
                notes=int(r[2]),
                audio_s=int(r[3]),
                transcription_s=float(r[4]),
            )
            for r in rows
        ]
