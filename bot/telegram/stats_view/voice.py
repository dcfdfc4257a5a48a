"""The voice-notes section of `/stats`: its words and its rows.

Kept apart from the table's own words so the section can move as a whole: `voice_rows`
gives (label, value, indent) rows and the table lays them out like every other block.
"""

from __future__ import annotations

from dataclasses import dataclass

from bot.telegram.stats_view.wording import format_decimal, format_int
from bot.telegram.texts import Language
from services.stats import VoiceStats


@dataclass(frozen=True, slots=True)
class VoiceWords:
    title: str
    transcribed: str
    failed: str
    too_long: str
    off: str
    audio: str  # length of the transcribed notes
    transcription: str  # time spent transcribing
    seconds: str  # {n}


_WORDS: dict[Language, VoiceWords] = {
    "en": VoiceWords(
        title="VOICE NOTES",
        transcribed="transcribed",
        failed="not understood",
        too_long="too long",
        off="transcription off",
        audio="audio transcribed",
        transcription="transcription time",
        seconds="{n} s",
    ),
    "ru": VoiceWords(
        title="ГОЛОСОВЫЕ",
        transcribed="распознано",
        failed="не разобрано",
        too_long="слишком длинные",
        off="распознавание выкл.",
        audio="длительность",
        transcription="время распознавания",
        seconds="{n} с",
    ),
}

Row = tuple[str, str, int]  # label, value, indent


def voice_rows(voice: VoiceStats, language: Language) -> list[Row]:
    """The section's rows; none when no note arrived in the period."""
    if not voice.received:
        return []
    w = _WORDS[language]

    def count(n: int) -> str:
        return format_int(n, language)

    rows: list[Row] = [(w.title, count(voice.received), 0)]
    rows.append((w.transcribed, count(voice.transcribed), 1))
    rows.append((w.failed, count(voice.failed), 1))
    if voice.too_long:
        rows.append((w.too_long, count(voice.too_long), 1))
    if voice.off:
        rows.append((w.off, count(voice.off), 1))
    rows.append((w.audio, w.seconds.format(n=count(voice.audio_s)), 1))
    spent = format_decimal(voice.transcription_s, language, 1)
    rows.append((w.transcription, w.seconds.format(n=spent), 1))
    return rows
