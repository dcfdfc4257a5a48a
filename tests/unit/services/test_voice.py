"""`VoiceTranscription` on a real SQLite file with a scripted transcriber.

The transcriber double stands for the model endpoint (as the scripted LLM does for
chat); the notes table, the download callable and the decisions are the real ones.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import pytest

from services.llm.errors import LLMModelNotFound, LLMTimeout
from services.voice import AudioUnavailable, Heard, VoiceNote, VoiceTranscription
from storage.database import Database
from storage.voice import VoiceNoteRepository


@dataclass
class ScriptedTranscriber:
    """Answers each call with the next item: a text, or an exception to raise."""

    script: list[str | Exception] = field(default_factory=list)
    calls: list[tuple[bytes, str, str]] = field(default_factory=list)

    async def transcribe(self, audio: bytes, *, filename: str, model: str) -> str:
        self.calls.append((audio, filename, model))
        item = self.script.pop(0)
        if isinstance(item, Exception):
            raise item
        return item


@dataclass
class Download:
    audio: bytes = b"ogg-bytes"
    error: str | None = None
    calls: int = 0

    async def __call__(self) -> bytes:
        self.calls += 1
        if self.error is not None:
            raise AudioUnavailable(self.error)
        return self.audio


def note(update_id: int = 1, duration_s: int = 5, kind: str = "voice") -> VoiceNote:
    return VoiceNote(update_id, 77, kind, duration_s)  # type: ignore[arg-type]


def service(
    db: Database, transcriber: ScriptedTranscriber, model: str | None = "whisper-1"
) -> VoiceTranscription:
    return VoiceTranscription(transcriber, VoiceNoteRepository(db), model=model, max_seconds=60)


async def rows(db: Database) -> list[tuple[object, ...]]:
    found = await db.fetch_all(
        "SELECT update_id, status, error_code, transcript FROM voice_notes ORDER BY update_id"
    )
    return [tuple(r) for r in found]


async def test_a_note_is_heard_and_its_transcript_kept_until_forgotten(db: Database) -> None:
    transcriber = ScriptedTranscriber(["  Где мой заказ 8041?  "])
    voice = service(db, transcriber)
    heard = await voice.hear(note(), Download())
    assert heard == Heard(text="Где мой заказ 8041?")
    assert transcriber.calls == [(b"ogg-bytes", "voice.ogg", "whisper-1")]
    assert await rows(db) == [(1, "transcribed", None, "Где мой заказ 8041?")]
    await voice.forget(1)
    assert await rows(db) == [(1, "transcribed", None, None)]


async def test_a_video_note_is_sent_as_mp4(db: Database) -> None:
    transcriber = ScriptedTranscriber(["hello"])
    await service(db, transcriber).hear(note(kind="video_note"), Download())
    assert transcriber.calls[0][1] == "video_note.mp4"


async def test_handling_the_same_update_again_uses_the_stored_transcript(db: Database) -> None:
    transcriber = ScriptedTranscriber(["Где мой заказ 8041?"])
    await service(db, transcriber).hear(note(), Download())
    # a restart before the reply was stored: a new service, the same update
    download = Download()
    again = await service(db, transcriber).hear(note(), download)
    assert again == Heard(text="Где мой заказ 8041?")
    assert download.calls == 0 and len(transcriber.calls) == 1


async def test_a_crash_before_the_transcript_was_stored_transcribes_again(db: Database) -> None:
    repo = VoiceNoteRepository(db)
    await repo.receive(1, chat_id=77, kind="voice", duration_s=5, status="received")
    transcriber = ScriptedTranscriber(["again"])
    assert await service(db, transcriber).hear(note(), Download()) == Heard(text="again")


async def test_a_long_note_is_refused_without_a_download(db: Database) -> None:
    transcriber = ScriptedTranscriber()
    download = Download()
    heard = await service(db, transcriber).hear(note(duration_s=61), download)
    assert heard == Heard(too_long=True)
    assert download.calls == 0 and transcriber.calls == []
    assert await rows(db) == [(1, "too_long", None, None)]


async def test_at_the_limit_is_heard(db: Database) -> None:
    heard = await service(db, ScriptedTranscriber(["ok"])).hear(note(duration_s=60), Download())
    assert heard.text == "ok"


async def test_without_a_model_nothing_is_downloaded(db: Database) -> None:
    download = Download()
    heard = await service(db, ScriptedTranscriber(), model=None).hear(note(), download)
    assert heard == Heard(off=True)
    assert download.calls == 0
    assert await rows(db) == [(1, "off", None, None)]


@pytest.mark.parametrize(
    ("outcome", "code"),
    [
        (LLMTimeout("slow", model="whisper-1"), "timeout"),
        (" \u200b\u3164 ", "empty"),
        ("", "empty"),
    ],
)
async def test_failures_are_recorded_with_their_code(
    db: Database, outcome: str | Exception, code: str
) -> None:
    heard = await service(db, ScriptedTranscriber([outcome])).hear(note(), Download())
    assert heard == Heard(failure=code)
    assert await rows(db) == [(1, "failed", code, None)]


async def test_a_failed_download_is_a_failure_without_transcription(db: Database) -> None:
    transcriber = ScriptedTranscriber()
    heard = await service(db, transcriber).hear(note(), Download(error="download_failed"))
    assert heard == Heard(failure="download_failed")
    assert transcriber.calls == []


async def test_a_missing_model_turns_transcription_off_for_the_process(
    db: Database, caplog: pytest.LogCaptureFixture
) -> None:
    transcriber = ScriptedTranscriber([LLMModelNotFound("no such model", model="whisper-9")])
    voice = service(db, transcriber, model="whisper-9")
    assert await voice.hear(note(1), Download()) == Heard(off=True)
    assert not voice.enabled
    download = Download()
    assert await voice.hear(note(2), download) == Heard(off=True)
    assert download.calls == 0 and len(transcriber.calls) == 1
    assert await rows(db) == [(1, "off", None, None), (2, "off", None, None)]
    warnings = [r for r in caplog.records if "TRANSCRIPTION_MODEL" in r.getMessage()]
    assert len(warnings) == 1
