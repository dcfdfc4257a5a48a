"""The voice settings."""

from __future__ import annotations

import pytest

from tests.unit.test_config import error_for, make


def test_voice_defaults_transcription_off(monkeypatch: pytest.MonkeyPatch) -> None:
    settings = make(monkeypatch)
    assert settings.transcription_model is None
    assert settings.voice_max_seconds == 60


def test_a_blank_model_is_off(monkeypatch: pytest.MonkeyPatch) -> None:
    assert make(monkeypatch, TRANSCRIPTION_MODEL="  ").transcription_model is None
    assert make(monkeypatch, TRANSCRIPTION_MODEL="whisper-1").transcription_model == "whisper-1"


def test_voice_max_seconds_must_be_positive(monkeypatch: pytest.MonkeyPatch) -> None:
    assert "VOICE_MAX_SECONDS" in error_for(monkeypatch, VOICE_MAX_SECONDS="0")
