"""The owner's knowledge in Telegram: `/knowledge` for the admins (ADMIN_IDS), in the
private chat with the bot.

- `/knowledge` alone: the sources (title, where from, pages and passages, last sync and
  its error) with a 🗑 button each (`KnowledgeButton`) and one that says how to add.
- `/knowledge https://…` (a page, a sitemap or a site's root) or a document sent with
  the caption `/knowledge` (PDF, DOCX, Markdown, text, HTML): ONE message comes back and is
  edited as the work goes on (`LiveMessage`, at most one edit every `EDIT_EVERY_S`),
  ending with what was added — pages, passages, what was skipped and why — or the one
  line saying why nothing was (the knowledge is then as it was).

Anyone else's /knowledge is not handled here (the router's filter), so it falls through
to the unknown-command answer and reveals nothing. The work itself is the knowledge's
(`KnowledgeOwner`); this module only talks.
"""

from __future__ import annotations

import asyncio
import contextlib
import html
import io
import logging
import re
import threading
import time
from collections.abc import Awaitable, Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Protocol

from aiogram import Bot, F, Router
from aiogram.exceptions import TelegramAPIError
from aiogram.filters import Command, CommandObject
from aiogram.methods import AnswerCallbackQuery, EditMessageText, GetFile
from aiogram.types import CallbackQuery, InlineKeyboardButton, InlineKeyboardMarkup, Message

from bot.telegram.context import HandlerDeps, UpdateContext
from bot.telegram.filters import FromUsers
from bot.telegram.formatting import Rendered
from bot.telegram.keyboards import KnowledgeButton
from bot.telegram.sender import Sender
from bot.telegram.texts import Language, Texts

log = logging.getLogger(__name__)

EDIT_EVERY_S = 2.0  # Telegram allows about one edit a second per chat; progress needs less
BUTTON_TITLE_CHARS = 40
MAX_DOWNLOAD_BYTES = 20 * 1024 * 1024  # the Bot API's own limit on a bot's downloads
DOWNLOAD_TIMEOUT_S = 60
_URL = re.compile(r"^https?://\S+$", re.IGNORECASE)
_CAPTION_COMMAND = re.compile(r"^/knowledge(@\w+)?(\s|$)", re.IGNORECASE)
_TELEGRAM_FILE_PATH = re.compile(r"[A-Za-z0-9_-][A-Za-z0-9_.-]*(?:/[A-Za-z0-9_-][A-Za-z0-9_.-]*)*")

Progress = Callable[[int, int, str], None]  # done, total, what (a page, a stage)
Words = Mapping[Language, Mapping[str, str]]


class KnowledgeInputError(Exception):
    """Why a source could not be added, in one line fit for the owner (nothing changed)."""


@dataclass(frozen=True, slots=True)
class Added:
    """What adding (or syncing) one source did."""

    title: str
    documents: int  # pages or files read and indexed (new or changed)
    passages: int  # passages of the source now
    unchanged: int = 0
    removed: int = 0  # pages gone from the site, removed from the knowledge
    skipped: tuple[tuple[str, str], ...] = ()  # (page or file, why)


@dataclass(frozen=True, slots=True)
class SourceLine:
    """One source as the list shows it."""

    id: int
    kind: str
    title: str
    location: str
    documents: int
    passages: int
    synced_at: float | None
    error: str | None
    removable: bool = True


class KnowledgeOwner(Protocol):
    """What /knowledge needs of the shop's knowledge."""

    async def sources(self) -> Sequence[SourceLine]: ...
    async def add_url(self, url: str, progress: Progress) -> Added: ...
    async def add_file(self, name: str, data: bytes, progress: Progress) -> Added: ...
    async def remove(self, source_id: int) -> str | None:
        """The removed source's title; None when there was none."""
        ...


KNOWLEDGE_WORDS: dict[Language, dict[str, str]] = {
    "en": {
        "menu_knowledge": "What the bot knows: add or remove pages and files",
        "knowledge_list_title": "What the bot knows ({n} sources):",
        "knowledge_list_empty": (
            "The bot knows nothing of your shop yet. Send /knowledge with a link to your "
            "site, a page or a sitemap, or send a file (PDF, DOCX, Markdown, text, HTML) "
            "with the caption /knowledge."
        ),
        "knowledge_list_item": (
            "{title} — {location}\n   {documents} pages, {passages} passages, {synced}"
        ),
        "knowledge_synced": "synced {when}",
        "knowledge_never_synced": "not synced yet",
        "knowledge_last_error": "   last sync failed: {error}",
        "knowledge_remove_button": "🗑 {title}",
        "knowledge_add_button": "➕ Add a link or a file",
        "knowledge_add_how": (
            "Send /knowledge with a link, e.g. /knowledge https://your-shop.example/, "
            "or send a file with the caption /knowledge."
        ),
        "knowledge_removed": "Removed: {title}.",
        "knowledge_already_removed": "Already removed.",
        "knowledge_working": "⏳ Adding {source}…",
        "knowledge_progress": "⏳ Adding {source}: {done} of {total}…\n{what}",
        "knowledge_done": (
            "✅ {source}: {documents} pages or files read, {passages} passages in all."
        ),
        "knowledge_done_unchanged": "Unchanged: {n}.",
        "knowledge_done_removed": "Gone from the site, removed: {n}.",
        "knowledge_done_skipped": "Skipped {n}:",
        "knowledge_failed": "❌ {source} was not added: {error} Nothing changed.",
        "knowledge_too_big": "❌ {source} is larger than {mb} MB: not added.",
        "knowledge_download_failed": (
            "❌ {source} could not be downloaded from Telegram; please send it again."
        ),
        "knowledge_usage": (
            "Send /knowledge with a link (https://…), or a file with the caption /knowledge."
        ),
    },
    "ru": {
        "menu_knowledge": "Что знает бот: добавить или убрать страницы и файлы",
        "knowledge_list_title": "Что знает бот (источников: {n}):",
        "knowledge_list_empty": (
            "Бот пока ничего не знает о вашем магазине. Пришлите /knowledge и ссылку на "
            "сайт, страницу или карту сайта (sitemap) либо файл (PDF, DOCX, Markdown, "
            "текст, HTML) с подписью /knowledge."
        ),
        "knowledge_list_item": (
            "{title} — {location}\n   страниц: {documents}, фрагментов: {passages}, {synced}"
        ),
        "knowledge_synced": "обновлено {when}",
        "knowledge_never_synced": "ещё не обновлялось",
        "knowledge_last_error": "   последнее обновление не удалось: {error}",
        "knowledge_remove_button": "🗑 {title}",
        "knowledge_add_button": "➕ Добавить ссылку или файл",
        "knowledge_add_how": (
            "Пришлите /knowledge и ссылку, например /knowledge https://ваш-магазин.ru/, "
            "или файл с подписью /knowledge."
        ),
        "knowledge_removed": "Удалено: {title}.",
        "knowledge_already_removed": "Уже удалено.",
        "knowledge_working": "⏳ Добавляю {source}…",
        "knowledge_progress": "⏳ Добавляю {source}: {done} из {total}…\n{what}",
        "knowledge_done": (
            "✅ {source}: прочитано страниц и файлов: {documents}, всего фрагментов: {passages}."
        ),
        "knowledge_done_unchanged": "Без изменений: {n}.",
        "knowledge_done_removed": "Исчезли с сайта и удалены: {n}.",
        "knowledge_done_skipped": "Пропущено: {n}:",
        "knowledge_failed": "❌ {source} не добавлен: {error} Ничего не изменилось.",
        "knowledge_too_big": "❌ {source} больше {mb} МБ: не добавлен.",
        "knowledge_download_failed": (
            "❌ Не удалось скачать {source} из Telegram; пришлите его ещё раз."
        ),
        "knowledge_usage": (
            "Пришлите /knowledge и ссылку (https://…) или файл с подписью /knowledge."
        ),
    },
}


class LiveMessage:
    """One message that shows work in progress: sent once, then edited — the latest
    text at most every `every_s`, and the final one always. `update` may be called from
    any thread (the ingestion may report from a worker thread)."""

    def __init__(self, sender: Sender, chat_id: int, *, every_s: float = EDIT_EVERY_S) -> None:
        self._sender = sender
        self._chat_id = chat_id
        self._every_s = every_s
        self._message_id: int | None = None
        self._shown = ""
        self._latest = ""
        self._changed = asyncio.Event()
        self._loop = asyncio.get_running_loop()
        self._thread = threading.get_ident()
        self._task: asyncio.Task[None] | None = None

    async def start(self, text: str) -> None:
        result = await self._sender.send_text(self._chat_id, text)
        self._message_id = result.message_id
        self._shown = self._latest = text
        self._task = asyncio.create_task(self._editing(), name="knowledge-progress")

    def update(self, text: str) -> None:
        if threading.get_ident() == self._thread:
            self._set(text)
        else:
            self._loop.call_soon_threadsafe(self._set, text)

    def _set(self, text: str) -> None:
        self._latest = text
        self._changed.set()

    async def _editing(self) -> None:
        while True:
            await self._changed.wait()
            self._changed.clear()
            await self._edit(self._latest)
            await asyncio.sleep(self._every_s)

    async def finish(self, text: str, markup: InlineKeyboardMarkup | None = None) -> None:
        if self._task is not None:
            self._task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await self._task
        if self._message_id is None:  # the first send failed: the result is worth a try
            await self._sender.send_text(self._chat_id, text, reply_markup=markup)
            return
        await self._edit(text, markup, final=True)

    async def _edit(
        self, text: str, markup: InlineKeyboardMarkup | None = None, *, final: bool = False
    ) -> None:
        if self._message_id is None or (text == self._shown and not final):
            return
        if text == self._shown and markup is None:
            return
        try:
            await self._sender.call(
                EditMessageText(
                    chat_id=self._chat_id,
                    message_id=self._message_id,
                    text=text,
                    reply_markup=markup,
                )
            )
            self._shown = text
        except TelegramAPIError as exc:
            log.info("knowledge progress: edit refused (%s)", type(exc).__name__)
            if final:  # the owner must see how it ended
                await self._sender.send_text(self._chat_id, text, reply_markup=markup)


class _Words:
    """The feature's words in one language, filled in."""

    def __init__(self, table: Mapping[str, str]) -> None:
        self.table = table

    def __call__(self, key: str, **values: object) -> str:
        return self.table[key].format(**values)


def _words(words: Words, texts: Texts) -> _Words:
    """The built-in words in the reply's language, as the shop's TEXTS_FILE reworded them
    (`texts.features` holds every feature's words with the overrides applied)."""
    table = dict(words.get(texts.language) or words["en"])
    table.update({key: texts.features[key] for key in table if key in texts.features})
    return _Words(table)


def _when(at: float) -> str:
    return time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime(at))


def source_list(sources: Sequence[SourceLine], w: _Words) -> tuple[str, InlineKeyboardMarkup]:
    """The list's text and its buttons (one 🗑 per removable source, then ➕)."""
    rows: list[list[InlineKeyboardButton]] = []
    if not sources:
        text = w("knowledge_list_empty")
    else:
        lines = [w("knowledge_list_title", n=len(sources))]
        for number, s in enumerate(sources, start=1):
            synced = (
                w("knowledge_synced", when=_when(s.synced_at))
                if s.synced_at is not None
                else w("knowledge_never_synced")
            )
            item = w(
                "knowledge_list_item",
                title=s.title or s.location,
                location=s.location,
                documents=s.documents,
                passages=s.passages,
                synced=synced,
            )
            lines.append(f"{number}. {item}")
            if s.error:
                lines.append(w("knowledge_last_error", error=s.error))
            if s.removable:
                title = s.title or s.location
                if len(title) > BUTTON_TITLE_CHARS:
                    title = title[: BUTTON_TITLE_CHARS - 1] + "…"
                data = KnowledgeButton(action="rm", source=s.id).pack()
                label = f"{number}. " + w("knowledge_remove_button", title=title)
                rows.append([InlineKeyboardButton(text=label, callback_data=data)])
        text = "\n".join(lines)
    add = KnowledgeButton(action="add").pack()
    rows.append([InlineKeyboardButton(text=w("knowledge_add_button"), callback_data=add)])
    return text, InlineKeyboardMarkup(inline_keyboard=rows)


def outcome_text(source: str, added: Added, w: _Words) -> str:
    """The final words of an addition: what was read, kept, removed and skipped."""
    lines = [w("knowledge_done", source=source, documents=added.documents, passages=added.passages)]
    if added.unchanged:
        lines.append(w("knowledge_done_unchanged", n=added.unchanged))
    if added.removed:
        lines.append(w("knowledge_done_removed", n=added.removed))
    if added.skipped:
        lines.append(w("knowledge_done_skipped", n=len(added.skipped)))
        shown = added.skipped[:10]
        lines += [f"– {where}: {why}" for where, why in shown]
        if len(added.skipped) > len(shown):
            lines.append(f"– … (+{len(added.skipped) - len(shown)})")
    return "\n".join(lines)


async def _download(bot: Bot, sender: Sender, file_id: str) -> bytes | None:
    """A document's bytes in memory; None when it cannot be fetched."""
    buffer = io.BytesIO()
    try:
        file = await sender.call(GetFile(file_id=file_id))
        if not file.file_path or not _TELEGRAM_FILE_PATH.fullmatch(file.file_path):
            return None  # a path leaving the files' folder would fetch another URL
        await bot.download_file(file.file_path, buffer, timeout=DOWNLOAD_TIMEOUT_S)
    except Exception as exc:  # the error may carry the file URL, which holds the token
        log.warning("knowledge: document download failed: %s", type(exc).__name__)
        return None
    data = buffer.getvalue()
    return data if len(data) <= MAX_DOWNLOAD_BYTES else None


async def _add_with_progress(
    live: LiveMessage,
    w: _Words,
    ctx: UpdateContext,
    source: str,
    work: Callable[[Progress], Awaitable[Added]],
) -> None:
    """Adding a source takes a while (pages fetched, passages embedded): one message,
    edited as the sync reports progress, ends with what was added or why nothing was;
    the update itself needs no stored reply."""
    await live.start(w("knowledge_working", source=source))

    def progress(done: int, total: int, what: str) -> None:
        live.update(w("knowledge_progress", source=source, done=done, total=total, what=what))

    try:
        added = await work(progress)
    except KnowledgeInputError as exc:
        await live.finish(w("knowledge_failed", source=source, error=str(exc)))
        await ctx.outbox.ignore("knowledge_not_added")
        return
    await live.finish(outcome_text(source, added, w))
    await ctx.outbox.ignore("knowledge_added")


def build_knowledge_admin_router(
    deps: HandlerDeps,
    admin_ids: frozenset[int],
    knowledge: KnowledgeOwner,
    *,
    words: Words = KNOWLEDGE_WORDS,
    max_bytes: int = MAX_DOWNLOAD_BYTES,
) -> Router:
    """/knowledge, documents captioned /knowledge and the list's buttons (admins only, in
    the private chat)."""
    router = Router(name="knowledge_admin")
    router.message.filter(F.chat.type == "private", FromUsers(admin_ids))
    sender = deps.sender

    async def run(
        message: Message,
        ctx: UpdateContext,
        source: str,
        work: Callable[[Progress], Awaitable[Added]],
    ) -> None:
        w = _words(words, ctx.texts)
        await _add_with_progress(LiveMessage(sender, message.chat.id), w, ctx, source, work)

    @router.message(F.text, Command("knowledge"))
    async def knowledge_command(
        message: Message, ctx: UpdateContext, command: CommandObject
    ) -> None:
        w = _words(words, ctx.texts)
        argument = (command.args or "").strip()
        if not argument:
            text, markup = source_list(await knowledge.sources(), w)
            await ctx.outbox.send_rendered([Rendered(html.escape(text), text)], reply_markup=markup)
            return
        if not _URL.match(argument):
            usage = w("knowledge_usage")
            await ctx.outbox.send_rendered([Rendered(html.escape(usage), usage)])
            return
        await run(message, ctx, argument, lambda p: knowledge.add_url(argument, p))

    @router.message(F.document, F.caption.regexp(_CAPTION_COMMAND))
    async def knowledge_document(message: Message, ctx: UpdateContext, bot: Bot) -> None:
        document = message.document
        assert document is not None  # F.document
        w = _words(words, ctx.texts)
        name = document.file_name or "document"
        if document.file_size is not None and document.file_size > max_bytes:
            text = w("knowledge_too_big", source=name, mb=max_bytes // (1024 * 1024))
            await ctx.outbox.send_rendered([Rendered(html.escape(text), text)])
            return
        data = await _download(bot, sender, document.file_id)
        if data is None or len(data) > max_bytes:
            text = w("knowledge_download_failed", source=name)
            await ctx.outbox.send_rendered([Rendered(html.escape(text), text)])
            return
        await run(message, ctx, name, lambda p: knowledge.add_file(name, data, p))

    _add_press(router, sender, admin_ids, knowledge, words)
    return router


def _add_press(
    router: Router,
    sender: Sender,
    admin_ids: frozenset[int],
    knowledge: KnowledgeOwner,
    words: Words,
) -> None:
    """The list's buttons: 🗑 removes a source and redraws the list, ➕ says how to add."""

    @router.callback_query(KnowledgeButton.filter())
    async def on_press(
        query: CallbackQuery, callback_data: KnowledgeButton, ctx: UpdateContext
    ) -> None:
        message = query.message if isinstance(query.message, Message) else None
        if query.from_user.id not in admin_ids or message is None or message.chat.type != "private":
            await ctx.outbox.ignore("knowledge_not_admin")
            return
        w = _words(words, ctx.texts)
        if callback_data.action == "add":
            await _answer(sender, query, w("knowledge_add_how"), alert=True)
            await ctx.outbox.ignore("knowledge_add_how")
            return
        title = await knowledge.remove(callback_data.source)
        notice = (
            w("knowledge_removed", title=title)
            if title is not None
            else w("knowledge_already_removed")
        )
        await _answer(sender, query, notice)
        text, markup = source_list(await knowledge.sources(), w)
        try:
            await sender.call(
                EditMessageText(
                    chat_id=message.chat.id,
                    message_id=message.message_id,
                    text=f"{notice}\n\n{text}",
                    reply_markup=markup,
                )
            )
        except TelegramAPIError as exc:  # the list is old or gone: the notice was shown
            log.info("knowledge list: edit refused (%s)", type(exc).__name__)
        await ctx.outbox.ignore("knowledge_removed")


async def _answer(sender: Sender, query: CallbackQuery, text: str, *, alert: bool = False) -> None:
    try:
        await sender.call(
            AnswerCallbackQuery(callback_query_id=query.id, text=text, show_alert=alert)
        )
    except TelegramAPIError as exc:  # cosmetic: the list says what happened
        log.debug("answerCallbackQuery failed (%s)", type(exc).__name__)
