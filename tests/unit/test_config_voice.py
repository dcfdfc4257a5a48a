"""The voice settings: the voice feature's own group, read by the names owners set."""

from __future__ import annotations

import pytest

from bot.runtime.config import SettingsError, load_feature_settings
from bot.telegram.features.voice import VoiceSettings


def voice(monkeypatch: pytest.MonkeyPatch, **env: str) -> VoiceSettings:
    for key, value in env.items():
        monkeypatch.setenv(key, value)
    return load_feature_settings(VoiceSettings)


def test_voice_defaults_transcription_off(monkeypatch: pytest.MonkeyPatch) -> None:
    settings = voice(monkeypatch)
    assert settings.transcription_model is None
    assert settings.voice_max_seconds == 60


def test_a_blank_model_is_off(monkeypatch: pytest.MonkeyPatch) -> None:
    assert voice(monkeypatch, TRANSCRIPTION_MODEL="  ").transcription_model is None
    assert voice(monkeypatch, TRANSCRIPTION_MODEL="whisper-1").transcription_model == "whisper-1"


def test_voice_max_seconds_must_be_positive(monkeypatch: pytest.MonkeyPatch) -> None:
    with pytest.raises(SettingsError) as info:
        voice(monkeypatch, VOICE_MAX_SECONDS="0")
    assert "VOICE_MAX_SECONDS" in str(info.value) and "\n" not in str(info.value)


def test_the_names_in_a_dot_env_file_are_read(monkeypatch: pytest.MonkeyPatch) -> None:
    """An owner's `.env` keeps working: the group reads the same file as `Settings`."""
    with open(".env", "w", encoding="utf-8") as env:
        env.write("TRANSCRIPTION_MODEL=whisper-1\nVOICE_MAX_SECONDS=30\n")
    settings = voice(monkeypatch)
    assert (settings.transcription_model, settings.voice_max_seconds) == ("whisper-1", 30)
