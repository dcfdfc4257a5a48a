"""Voice notes and round video notes: heard, then answered like typed text.

The note's length is checked before anything is downloaded (VOICE_MAX_SECONDS); the
audio is fetched through the Bot API (`getFile` via the sender, then the file URL) into
memory — never onto disk, never into a log — and `services.voice` transcribes it. The
transcript then takes the path of typed text (`answer_words`: the same limits, history
and tools), and the answer opens with a short line quoting what was heard, so a
customer sees at once if the bot misheard. A note that cannot be heard gets a polite "please
type it"; with transcription off, the "text only" reply as before.
"""

from __future__ import annotations

import html
import io
import logging
import re

from aiogram import Bot, Router
from aiogram.filters import Filter
from aiogram.methods import GetFile
from aiogram.types import Message

from bot.telegram.channel import reply_target_of
from bot.telegram.context import HandlerDeps, UpdateContext
from bot.telegram.filters import AddressedToBot
from bot.telegram.formatting import Rendered
from bot.telegram.limits import within_limits
from bot.telegram.routers.chat import answer_words
from bot.telegram.sender import Sender
from bot.telegram.texts import Language, Texts
from services.voice import (
    DOWNLOAD_FAILED,
    TOO_BIG,
    AudioUnavailable,
    Heard,
    VoiceNote,
    VoiceTranscription,
)

log = logging.getLogger(__name__)

# The Bot API lets bots download files up to 20 MB; a note is far smaller (a minute of
# voice is about 250 KB), so this only bounds the memory one download may take.
MAX_AUDIO_BYTES = 20 * 1024 * 1024
DOWNLOAD_TIMEOUT_S = 30
HEARD_QUOTE_CHARS = 200  # the quoted transcript above an answer is cut after this


class IsVoiceNote(Filter):
    """A voice note or a round video note (async: see `bot.telegram.filters.HasText`)."""

    async def __call__(self, message: Message) -> bool:
        return message.voice is not None or message.video_note is not None


class _TooBig(Exception):
    pass


class _CappedBuffer(io.BytesIO):
    """An in-memory file that refuses to grow beyond `cap` bytes."""

    def __init__(self, cap: int) -> None:
        super().__init__()
        self._cap = cap

    def write(self, data: bytes) -> int:  # type: ignore[override]
        if self.tell() + len(data) > self._cap:
            raise _TooBig
        return super().write(data)


def note_of(message: Message, update_id: int) -> tuple[VoiceNote, str, int | None]:
    """The note, its file id and its stated size (the message has a voice or video note)."""
    if message.voice is not None:
        audio = message.voice
        note = VoiceNote(update_id, message.chat.id, "voice", audio.duration)
        return note, audio.file_id, audio.file_size
    video = message.video_note
    assert video is not None  # IsVoiceNote
    note = VoiceNote(update_id, message.chat.id, "video_note", video.duration)
    return note, video.file_id, video.file_size


# What getFile answers, e.g. "voice/file_12.oga": relative segments of safe characters,
# none starting with a dot (so no "." or ".." segment, no absolute path, no query).
_TELEGRAM_FILE_PATH = re.compile(r"[A-Za-z0-9_-][A-Za-z0-9_.-]*(?:/[A-Za-z0-9_-][A-Za-z0-9_.-]*)*")


async def download_audio(bot: Bot, sender: Sender, file_id: str, size: int | None) -> bytes:
    """The file's bytes, in memory; `AudioUnavailable` when it cannot be fetched."""
    if size is not None and size > MAX_AUDIO_BYTES:
        raise AudioUnavailable(TOO_BIG)
    buffer = _CappedBuffer(MAX_AUDIO_BYTES)
    try:
        file = await sender.call(GetFile(file_id=file_id))
        if not file.file_path or not _TELEGRAM_FILE_PATH.fullmatch(file.file_path):
            # a path leaving the file folder ("../") would fetch another URL of the server
            raise AudioUnavailable(DOWNLOAD_FAILED)
        await bot.download_file(file.file_path, buffer, timeout=DOWNLOAD_TIMEOUT_S)
    except _TooBig:
        raise AudioUnavailable(TOO_BIG) from None
    except AudioUnavailable:
        raise
    except Exception as exc:  # the error may carry the file URL, which holds the token
        log.warning("voice note download failed: %s", type(exc).__name__)
        raise AudioUnavailable(DOWNLOAD_FAILED) from None
    return buffer.getvalue()


def heard_line(texts: Texts, language: Language, transcript: str) -> Rendered:
    """The italic line above an answer quoting (briefly) what was heard."""
    said = re.sub(r"\s+", " ", transcript).strip()
    if len(said) > HEARD_QUOTE_CHARS:
        said = said[: HEARD_QUOTE_CHARS - 1].rstrip() + "…"
    opening, closing = ("«", "»") if language == "ru" else ("“", "”")
    plain = f"{texts.voice_heard} {opening}{said}{closing}"
    return Rendered(f"<i>{html.escape(plain, quote=False)}</i>", plain)


def _unheard_text(heard: Heard, texts: Texts, max_seconds: int) -> str:
    if heard.off:
        return texts.text_only
    if heard.too_long:
        return texts.voice_too_long_for(max_seconds)
    return texts.voice_not_understood


def build_voice_router(deps: HandlerDeps, voice: VoiceTranscription) -> Router:
    """Voice and round video notes, heard by `voice`, then answered like typed words."""
    router = Router(name="voice")
    router.message.filter(AddressedToBot(), IsVoiceNote())

    @router.message()
    async def on_voice(message: Message, ctx: UpdateContext, bot: Bot) -> None:
        if not await within_limits(message, ctx, deps.limiter):
            return
        note, file_id, size = note_of(message, ctx.update_id)
        async with deps.responder.typing(reply_target_of(message)):
            heard = await voice.hear(note, lambda: download_audio(bot, deps.sender, file_id, size))
        if heard.text is None:
            await ctx.outbox.send(_unheard_text(heard, ctx.texts, voice.max_seconds))
            return
        heading = heard_line(ctx.texts, ctx.language, heard.text)
        await answer_words(message, heard.text, ctx, deps, heard=heading)
        await voice.forget(note.update_id)

    return router
