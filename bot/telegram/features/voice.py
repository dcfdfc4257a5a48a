"""Voice notes as one feature: the voice router and its start-up clean-up.

The router is always there: without TRANSCRIPTION_MODEL (or after the endpoint said it
has no such model) `VoiceTranscription` is off and a voice note gets the "text only"
reply, as any other non-text message. Its /stats block is part of the report
(services/stats.py `VoiceStats`, bot/telegram/stats_view/voice.py).
"""

from __future__ import annotations

from bot.runtime.config import NoSettings, Settings
from bot.telegram.context import HandlerDeps
from bot.telegram.features import Feature, FeatureRouters
from bot.telegram.features.catalog import FeatureSpec, Needs, TelegramNeeds, on
from bot.telegram.routers.voice import build_voice_router
from services.llm.client import OpenAIChatModel
from services.voice import VoiceTranscription
from storage.database import StorageRetry
from storage.voice import VoiceNoteRepository


def build_voice(
    settings: Settings,
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
    needs: Needs, telegram: TelegramNeeds, _own: None, _conf: NoSettings
) -> Feature:
    voice = build_voice(
        needs.settings, telegram.model, telegram.voice_notes, storage_retry=needs.storage_retry
    )
    return voice_feature(voice)


# always there (a voice note gets "text only" without TRANSCRIPTION_MODEL); Telegram only
VOICE: FeatureSpec[None, NoSettings] = FeatureSpec(
    name="voice", chat=lambda _needs, _conf: on(True), telegram=voice_on_telegram
)
