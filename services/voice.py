"""Voice notes: what a customer said, as text for a normal turn.

`VoiceTranscription.hear` decides everything about one note except how its audio is
fetched (the bot downloads it through the Bot API and hands a `download` callable in):

- transcription is off without a model (`TRANSCRIPTION_MODEL` unset), and for the rest
  of the process once the endpoint answers that it has no such model (logged once) —
  then the bot keeps its "text only" reply;
- a note longer than `max_seconds` is refused before anything is downloaded;
- the audio lives in memory only, for the length of the request, and is never logged;
- a transcript that is empty (nothing visible) or a transcription that fails is a
  failure the bot answers politely; no model turn ever runs on empty text;
- every note leaves a `voice_notes` row for /stats, and the transcript waits in it until
  the reply is stored (`forget`), so a restart after a crash in between uses it instead of
  transcribing again; a crash before it simply downloads and transcribes again.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import Protocol

from services.llm.errors import LLMError, LLMModelNotFound
from services.text_visibility import has_visible_text
from storage.database import StorageRetry
from storage.voice import (
    FAILED,
    OFF,
    RECEIVED,
    TOO_LONG,
    TRANSCRIBED,
    VoiceKind,
    VoiceNoteRepository,
)

log = logging.getLogger(__name__)

# error codes of a failed note (voice_notes.error_code)
DOWNLOAD_FAILED = "download_failed"
TOO_BIG = "too_big"
EMPTY = "empty"


class Transcriber(Protocol):
    """What the service needs from services.llm.client.OpenAIChatModel."""

    async def transcribe(self, audio: bytes, *, filename: str, model: str) -> str: ...


class AudioUnavailable(Exception):
    """The note's audio could not be fetched; `code` says why (safe to store and log)."""

    def __init__(self, code: str) -> None:
        super().__init__(code)
        self.code = code


@dataclass(frozen=True, slots=True)
class VoiceNote:
    """One note as the update states it (the audio is fetched only if it is needed)."""

    update_id: int
    chat_id: int
    kind: VoiceKind
    duration_s: int

    @property
    def filename(self) -> str:
        # the transcription endpoint reads the format from the extension
        return "voice.ogg" if self.kind == "voice" else "video_note.mp4"


@dataclass(frozen=True, slots=True)
class Heard:
    """The outcome of one note: exactly one of the four cases is true."""

    text: str | None = None  # the transcript, with visible text
    failure: str | None = None  # why nothing usable was heard (an error code)
    too_long: bool = False  # refused unheard: longer than the limit
    off: bool = False  # transcription is off: the bot's "text only" reply


class VoiceTranscription:
    """Turns voice notes into text (see the module docstring)."""

    def __init__(
        self,
        transcriber: Transcriber,
        notes: VoiceNoteRepository,
        *,
        model: str | None,
        max_seconds: int = 60,
        storage_retry: StorageRetry | None = None,
    ) -> None:
        self._transcriber = transcriber
        self._notes = notes
        self._model = model or None
        self.max_seconds = max_seconds
        self._retry = storage_retry or StorageRetry()

    @property
    def enabled(self) -> bool:
        return self._model is not None

    async def hear(self, note: VoiceNote, download: Callable[[], Awaitable[bytes]]) -> Heard:
        """What was said in `note`; `download()` fetches its audio (or raises
        `AudioUnavailable`) and is called only when the note is to be transcribed."""
        if self._model is None:
            await self._receive(note, OFF)
            return Heard(off=True)
        if note.duration_s > self.max_seconds:
            await self._receive(note, TOO_LONG)
            return Heard(too_long=True)
        earlier = await self._notes.get(note.update_id)
        if earlier is not None and earlier.status == TRANSCRIBED and earlier.transcript:
            log.info("voice note of update %s: transcribed before a restart", note.update_id)
            return Heard(text=earlier.transcript)
        if earlier is not None and earlier.status == FAILED:
            return Heard(failure=earlier.error_code or FAILED)
        await self._receive(note, RECEIVED)
        try:
            audio = await download()
        except AudioUnavailable as exc:
            return await self._fail(note, exc.code, None)
        return await self._transcribe(note, audio, self._model)

    async def forget(self, update_id: int) -> None:
        """The reply to the note is stored: drop the transcript kept for a restart."""
        await self._retry.run(
            f"clearing the transcript of update {update_id}",
            lambda: self._notes.forget_transcript(update_id),
        )

    async def forget_answered(self) -> None:
        """At start-up: drop transcripts a crash left behind after their reply was stored."""
        cleared = await self._notes.forget_answered_transcripts()
        if cleared:
            log.info("voice notes: cleared %d transcript(s) of answered notes", cleared)

    async def _transcribe(self, note: VoiceNote, audio: bytes, model: str) -> Heard:
        started = time.perf_counter()
        try:
            said = await self._transcriber.transcribe(audio, filename=note.filename, model=model)
        except LLMModelNotFound:
            if self._model is not None:
                log.warning(
                    "the model endpoint has no transcription model %s "
                    "(TRANSCRIPTION_MODEL): voice notes get the text-only reply until restart",
                    model,
                )
            self._model = None
            await self._finish(note, OFF)
            return Heard(off=True)
        except LLMError as exc:
            return await self._fail(note, exc.code, time.perf_counter() - started)
        seconds = time.perf_counter() - started
        text = said.strip()
        if not has_visible_text(text):
            return await self._fail(note, EMPTY, seconds)
        await self._finish(note, TRANSCRIBED, seconds=seconds, transcript=text)
        log.info("voice note of update %s: transcribed in %.1f s", note.update_id, seconds)
        return Heard(text=text)

    async def _fail(self, note: VoiceNote, code: str, seconds: float | None) -> Heard:
        log.warning("voice note of update %s not understood (%s)", note.update_id, code)
        await self._finish(note, FAILED, error_code=code, seconds=seconds)
        return Heard(failure=code)

    async def _receive(self, note: VoiceNote, status: str) -> None:
        await self._retry.run(
            f"recording the voice note of update {note.update_id}",
            lambda: self._notes.receive(
                note.update_id,
                chat_id=note.chat_id,
                kind=note.kind,
                duration_s=note.duration_s,
                status=status,
            ),
        )

    async def _finish(
        self,
        note: VoiceNote,
        status: str,
        *,
        error_code: str | None = None,
        seconds: float | None = None,
        transcript: str | None = None,
    ) -> None:
        await self._retry.run(
            f"recording the voice note of update {note.update_id}",
            lambda: self._notes.finish(
                note.update_id,
                status,
                error_code=error_code,
                transcription_s=seconds,
                transcript=transcript,
            ),
        )
