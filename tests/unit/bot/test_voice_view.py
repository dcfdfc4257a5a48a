"""What a customer and an admin read about voice notes: the heard line above an answer,
the voice texts and their placeholders, and the voice section of `/stats`."""

from __future__ import annotations

import pytest

from bot.runtime.feature_catalog import words_of
from bot.telegram.features.registry import FEATURES
from bot.telegram.formatting import TELEGRAM_TEXT_LIMIT, Rendered, messages_under_heading, utf16_len
from bot.telegram.routers.voice import HEARD_QUOTE_CHARS, VOICE_WORDS, heard_line
from bot.telegram.stats_view.table import TABLE_WIDTH, render_table
from bot.telegram.stats_view.voice import voice_rows
from bot.telegram.texts import EN, RU, TextsError, build_text_table
from services.stats import Period, StatsReport, VoiceStats
from storage.voice import VoiceStatusCount


def test_the_heard_line_quotes_briefly_and_escapes() -> None:
    line = heard_line(RU, "ru", "Где   заказ\n<b>8041</b>?")
    assert line.plain == "Распознано: «Где заказ <b>8041</b>?»"
    assert line.html == "<i>Распознано: «Где заказ &lt;b&gt;8041&lt;/b&gt;?»</i>"
    english = heard_line(EN, "en", "x" * 1000)
    assert english.plain.startswith("Heard: “x") and english.plain.endswith("…”")
    assert len(english.plain) == len("Heard: “”") + HEARD_QUOTE_CHARS


def test_an_answer_under_a_heading_stays_within_the_limit() -> None:
    heading = Rendered("<i>Heard: “q”</i>", "Heard: “q”")
    parts = messages_under_heading(heading, "word " * 2000)
    assert parts[0].html.startswith("<i>Heard: “q”</i>\n\n")
    assert all(utf16_len(p.html) <= TELEGRAM_TEXT_LIMIT for p in parts)
    assert len(parts) == 3
    assert messages_under_heading(heading, "Short.")[0].plain == "Heard: “q”\n\nShort."


def test_the_voice_limit_is_filled_in_and_required_in_overrides() -> None:
    """The voice words are the feature's (`VOICE_WORDS`), reworded in TEXTS_FILE by the
    same keys as before they moved there."""
    assert "45" in RU.of(VOICE_WORDS).voice_too_long_for(45)
    assert "45" in EN.of(VOICE_WORDS).voice_too_long_for(45)
    features = words_of(FEATURES)
    table = build_text_table(
        overrides={"en": {"voice_too_long": "Up to {limit} s, please."}}, features=features
    )
    en = table.by_language["en"].of(VOICE_WORDS)
    assert en.voice_too_long_for(30) == "Up to 30 s, please."
    assert table.by_language["ru"].of(VOICE_WORDS) == VOICE_WORDS["ru"]
    with pytest.raises(TextsError, match="voice_too_long: must contain the placeholder"):
        build_text_table(overrides={"ru": {"voice_too_long": "Слишком длинно."}}, features=features)
    with pytest.raises(TextsError, match=r"voice_heard: unknown placeholder \{limit\}"):
        build_text_table(overrides={"ru": {"voice_heard": "{limit}:"}}, features=features)


def _stats() -> VoiceStats:
    return VoiceStats.from_counts(
        [
            VoiceStatusCount("failed", "empty", 1, 2, 0.4),
            VoiceStatusCount("failed", "timeout", 2, 9, 60.0),
            VoiceStatusCount("off", None, 1, 5, 0.0),
            VoiceStatusCount("too_long", None, 1, 600, 0.0),
            VoiceStatusCount("transcribed", None, 3, 40, 4.25),
        ]
    )


def test_voice_stats_from_the_status_counts() -> None:
    stats = _stats()
    assert (stats.received, stats.transcribed, stats.failed) == (8, 3, 3)
    assert (stats.too_long, stats.off) == (1, 1)
    assert stats.audio_s == 40  # only what was transcribed
    assert stats.transcription_s == pytest.approx(64.65)


def test_the_voice_section_in_both_languages() -> None:
    period = Period("24h", 0.0, 86_400.0)
    report = StatsReport(period=period, since=0.0, until=86_400.0, voice=_stats())
    assert not report.is_empty
    [english] = render_table(report, "en")
    lines = [" ".join(line.split()) for line in english.splitlines()]
    for expected in (
        "VOICE NOTES 8",
        "transcribed 3",
        "not understood 3",
        "too long 1",
        "transcription off 1",
        "audio transcribed 40 s",
        "transcription time 64.7 s",
    ):
        assert expected in lines, expected
    assert max(len(line) for line in english.splitlines()) <= TABLE_WIDTH
    assert "timeout" not in english  # an owner's view: no raw error codes
    [russian] = render_table(report, "ru")
    assert "ГОЛОСОВЫЕ" in russian and "64,7 с" in russian


def test_no_voice_notes_no_section() -> None:
    assert voice_rows(VoiceStats(), "en") == []
    report = StatsReport(period=Period("24h", 0.0, 1.0), since=0.0, until=1.0)
    assert report.is_empty
