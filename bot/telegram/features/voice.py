"""Voice notes as one feature: the voice router and its start-up clean-up.

The router is always there: without TRANSCRIPTION_MODEL (or after the endpoint said it
has no such model) `VoiceTranscription` is off and a voice note gets the "text only"
reply, as any other non-text message. Its settings are `VoiceSettings`, its words
`VOICE_WORDS` (bot/telegram/routers/voice.py). Its /stats block is part of the report
(services/stats.py `VoiceStats`, bot/telegram/stats_view/voice.py).
"""

from __future__ import annotations

from typing import Any

from pydantic import Field, field_validator

from bot.runtime.config import FeatureSettings
from bot.telegram.context import HandlerDeps
from bot.telegram.features import Feature, FeatureRouters
from bot.telegram.features.catalog import Needs, TelegramFeatureSpec, TelegramNeeds, on, word_table
from bot.telegram.routers.voice import VOICE_WORDS, build_voice_router
from services.llm.client import OpenAIChatModel
from services.voice import VoiceTranscription
from storage.database import StorageRetry
from storage.voice import VoiceNoteRepository


class VoiceSettings(FeatureSettings):
    """The voice feature's settings (the names owners have always set)."""

    # the transcription model on the same endpoint and key (e.g. whisper-1); unset or
    # blank = off, voice notes get the "text only" reply
    transcription_model: str | None = Field(default=None, max_length=200)
    # longer voice notes are refused politely, without a download
    voice_max_seconds: int = Field(default=60, ge=1, le=3600)

    @field_validator("transcription_model", mode="before")
    @classmethod
    def _blank_model_is_off(cls, value: Any) -> Any:
        return None if isinstance(value, str) and not value.strip() else value


def build_voice(
    settings: VoiceSettings,
    model: OpenAIChatModel,
    notes: VoiceNoteRepository,
    *,
    storage_retry: StorageRetry,
) -> VoiceTranscription:
    return VoiceTranscription(
        model,
        notes,
        model=settings.transcription_model,
        max_seconds=settings.voice_max_seconds,
        storage_retry=storage_retry,
    )


def voice_feature(voice: VoiceTranscription) -> Feature:
    def routers(deps: HandlerDeps) -> FeatureRouters:
        return FeatureRouters(messages=(build_voice_router(deps, voice),))

    # transcripts of notes whose reply was stored before the last stop
    return Feature(name="voice", routers=routers, on_start=voice.forget_answered)


def voice_on_telegram(
    needs: Needs, telegram: TelegramNeeds, _own: None, conf: VoiceSettings
) -> Feature:
    voice = build_voice(
        conf, telegram.model, telegram.voice_notes, storage_retry=needs.storage_retry
    )
    return voice_feature(voice)


# always there (a voice note gets "text only" without TRANSCRIPTION_MODEL); Telegram only
VOICE: TelegramFeatureSpec[None, VoiceSettings] = TelegramFeatureSpec(
    name="voice",
    chat=lambda _needs, _conf: on(True),
    telegram=voice_on_telegram,
    settings=VoiceSettings,
    words=word_table(VOICE_WORDS),
)
