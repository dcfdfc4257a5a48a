"""The owner's sources against a real local web site (tests/fakes/help_site.py) and real
files, on both backends: a site added through its sitemap keeps main text only (the
shared chrome dropped, robots.txt respected, the linked PDF read); a re-sync re-reads
only what changed and removes what is gone; every bad input is one clear line and leaves
the index exactly as it was.

Words only (no embedder) where meaning does not matter, so the suite stays quick; the
paraphrase with the real model is the end-to-end test's.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from storage.database import Database
from storage.knowledge import KnowledgeRepository
from tests.fakes.documents import (
    MALFORMED_DOCX,
    malformed_docx,
    scanned_pdf,
    write_huge_pdf,
    zip_bomb_docx,
)
from tests.fakes.help_site import PDF_PATH, STAFF_PAGE, HelpSite
from tools.knowledge.base import KnowledgeBase
from tools.knowledge.fetch import FetchLimits
from tools.knowledge.sync import KnowledgeSync

LOCAL = FetchLimits(max_bytes=2_000_000, timeout_s=5.0, allow_private=True)


@pytest.fixture
def knowledge(db: Database) -> KnowledgeBase:
    return KnowledgeBase(KnowledgeRepository(db), None, clock=lambda: 1000.0)


@pytest.fixture
def sync(knowledge: KnowledgeBase) -> KnowledgeSync:
    return KnowledgeSync(knowledge, LOCAL, max_pages=100, clock=lambda: 1000.0)


async def snapshot(db: Database) -> list[tuple[object, ...]]:
    rows = await db.fetch_all(
        "SELECT d.location, p.heading, p.text FROM knowledge_passages p"
        " JOIN knowledge_documents d ON d.id = p.document_id ORDER BY d.location, p.position"
    )
    return [tuple(r) for r in rows]


async def texts_of(db: Database, location: str) -> str:
    rows = await db.fetch_all(
        "SELECT p.text FROM knowledge_passages p JOIN knowledge_documents d"
        " ON d.id = p.document_id WHERE d.location = ?",
        (location,),
    )
    return "\n".join(str(r[0]) for r in rows)


async def test_a_site_is_read_through_its_sitemap_main_text_only(
    sync: KnowledgeSync, knowledge: KnowledgeBase, help_site: HelpSite, db: Database
) -> None:
    report = await sync.add(help_site.base_url)
    assert report.error is None
    assert report.added >= 28 and report.passages > report.added
    documents = {str(r[0]) for r in await db.fetch_all("SELECT location FROM knowledge_documents")}
    assert help_site.url("/vozvrat.html") in documents
    assert help_site.url(PDF_PATH) in documents  # linked, not in the sitemap
    assert help_site.url(STAFF_PAGE) not in documents  # robots.txt
    whole = "\n".join(str(r[2]) for r in await snapshot(db))
    # the chrome every page repeats: banner, header, menu, breadcrumbs, the feedback
    # line inside <main> (dropped as repeated; the English one on most English pages,
    # though they are a third of the site), newsletter, footer
    for chrome in (
        "Мы используем файлы cookie",
        "We use cookies",
        "Поиск по справке",
        "Была ли статья полезной",
        "Was this article helpful",
        "Подпишитесь на рассылку",
        "Все права защищены",
        "Справочный центр ›",
    ):
        assert chrome not in whole, chrome
    hits = await knowledge.search("вернуть товар")
    assert hits and hits[0].link == help_site.url("/vozvrat.html")


async def test_a_re_sync_reads_only_what_changed_and_drops_what_is_gone(
    sync: KnowledgeSync, help_site: HelpSite, db: Database
) -> None:
    assert (await sync.add(help_site.base_url)).error is None
    first_fetches = help_site.fetches("/oplata.html")
    help_site.change_page("/vozvrat.html", "<h1>Возврат товара</h1><p>Теперь 30 дней.</p>")
    help_site.delete_page("/obmen.html")
    (report,) = await sync.sync()
    assert report.error is None
    assert (report.updated, report.removed) == (1, 1)
    assert report.unchanged >= 26
    assert help_site.fetches("/oplata.html") == first_fetches  # 304: not read again
    assert "Теперь 30 дней." in await texts_of(db, help_site.url("/vozvrat.html"))
    assert "14 дней" not in await texts_of(db, help_site.url("/vozvrat.html"))
    assert await texts_of(db, help_site.url("/obmen.html")) == ""


async def test_one_page_with_a_redirect_and_a_legacy_charset(
    sync: KnowledgeSync, help_site: HelpSite, db: Database
) -> None:
    report = await sync.add(help_site.url("/redirect/old-delivery"))
    assert report.error is None and report.added == 1
    report = await sync.add(help_site.url("/cp1251-meta.html"))
    assert report.error is None
    assert "�" not in "\n".join(str(r[2]) for r in await snapshot(db))


@pytest.mark.parametrize(
    ("path", "says"),
    [
        ("/no-such-page.html", "HTTP 404"),
        ("/huge.html", "larger than"),
        ("/huge-declared.html", "more than"),
        ("/not-html.bin", "not a page or a document"),
        ("/redirect/loop", "redirects"),
    ],
)
async def test_a_bad_page_is_one_line_and_changes_nothing(
    sync: KnowledgeSync, help_site: HelpSite, db: Database, path: str, says: str
) -> None:
    assert (await sync.add(help_site.url("/oplata.html"))).error is None
    before = await snapshot(db)
    report = await sync.add(help_site.url(path))
    assert report.error is not None and says in report.error and "\n" not in report.error
    assert await snapshot(db) == before
    assert [s.location for s in await sync._repo.sources()] == [help_site.url("/oplata.html")]


@pytest.mark.parametrize("path", ["/redirect/metadata", "/redirect/intranet"])
async def test_a_redirect_to_a_private_address_is_refused(
    knowledge: KnowledgeBase, help_site: HelpSite, db: Database, path: str
) -> None:
    """The test site is on 127.0.0.1, so its own address is allowed by a narrower rule:
    a public-only fetcher refuses the site itself, and a private target after a redirect
    is refused even where the first address was accepted."""
    public_only = KnowledgeSync(knowledge, FetchLimits(timeout_s=5.0), clock=lambda: 1.0)
    report = await public_only.add(help_site.url(path))
    assert report.error is not None and "private or local" in report.error
    assert await snapshot(db) == []


async def test_an_unreachable_site_is_one_line(sync: KnowledgeSync, db: Database) -> None:
    report = await sync.add("http://127.0.0.1:9/")
    assert report.error is not None and "unreachable" in report.error
    assert await snapshot(db) == [] and await sync._repo.sources() == []


@pytest.mark.parametrize(
    ("name", "make", "says"),
    [
        ("scan.pdf", lambda _tmp: scanned_pdf(), "scanned PDF"),
        ("bomb.docx", lambda _tmp: zip_bomb_docx(), "refused as unsafe"),
        *[
            (f"{kind}.docx", lambda _tmp, k=kind: malformed_docx(k), ".docx")
            for kind in MALFORMED_DOCX
        ],
    ],
)
async def test_a_bad_file_is_one_line_and_changes_nothing(
    sync: KnowledgeSync, db: Database, tmp_path: Path, name: str, make: object, says: str
) -> None:
    good = tmp_path / "pay.md"
    good.write_text("# Оплата\n\nКартой или наличными.\n", encoding="utf-8")
    assert (await sync.add(str(good))).error is None
    before = await snapshot(db)
    bad = tmp_path / name
    bad.write_bytes(make(tmp_path))  # type: ignore[operator]
    report = await sync.add(str(bad))
    assert report.error is not None and says in report.error and "\n" not in report.error
    assert await snapshot(db) == before


async def test_a_50_mb_pdf_is_refused_before_it_is_read(
    sync: KnowledgeSync, db: Database, tmp_path: Path
) -> None:
    report = await sync.add(str(write_huge_pdf(tmp_path / "catalogue.pdf")))
    assert report.error is not None and "MB, more than" in report.error
    assert await snapshot(db) == []


async def test_a_changed_file_is_read_again_and_a_removed_source_is_gone(
    sync: KnowledgeSync, db: Database, tmp_path: Path
) -> None:
    file = tmp_path / "pay.md"
    file.write_text("# Оплата\n\nКартой или наличными.\n", encoding="utf-8")
    assert (await sync.add(str(file))).added == 1
    (same,) = await sync.sync()
    assert (same.unchanged, same.updated) == (1, 0)
    file.write_text("# Оплата\n\nТолько картой.\n", encoding="utf-8")
    (changed,) = await sync.sync()
    assert changed.updated == 1
    assert await texts_of(db, "pay.md") == "Только картой."
    assert await sync.remove(str(file))
    assert await snapshot(db) == []


async def test_a_linked_pdf_is_read_again_and_removed_once_no_page_links_it(
    sync: KnowledgeSync, help_site: HelpSite, db: Database
) -> None:
    assert (await sync.add(help_site.base_url)).error is None
    pdf = help_site.url(PDF_PATH)
    assert await texts_of(db, pdf) != ""
    help_site.files.pop(PDF_PATH)  # the file is gone: 404 removes it
    (report,) = await sync.sync()
    assert report.error is None and report.removed == 1
    assert await texts_of(db, pdf) == ""
