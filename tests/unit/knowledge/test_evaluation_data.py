"""The knowledge evaluation's own data holds what the measurements rely on: enough pages
in both languages with the chrome a crawler must drop, a real PDF made reproducibly, and
questions of every kind whose expected pages exist."""

from __future__ import annotations

import io
import re
import zipfile
from collections import Counter
from xml.etree import ElementTree

import pytest

from tests.data.knowledge.help_centre.make_pdf import PAGES, PDF, TITLE
from tests.fakes.documents import (
    MALFORMED_DOCX,
    billion_laughs_docx,
    cp1251_html,
    docx_bytes,
    external_entity_docx,
    malformed_docx,
    scanned_pdf,
    text_pdf,
    write_huge_pdf,
    zip_bomb_docx,
)
from tests.fakes.help_site import PDF_PATH, load_pages, render, write_site
from tests.knowledge_eval import load_questions, page_path, score

pytestmark = pytest.mark.sqlite_only


def test_help_centre_has_enough_pages_in_both_languages() -> None:
    pages = load_pages()
    languages = Counter(p.lang for p in pages.values())
    assert len(pages) + 1 >= 26  # >= 25 pages and the PDF
    assert languages["ru"] >= 10 and languages["en"] >= 8
    assert all(p.title for p in pages.values())


def test_every_rendered_page_repeats_the_chrome_around_its_own_text() -> None:
    pages = load_pages()
    for page in pages.values():
        document = render(page)
        assert 'class="cookie-banner"' in document
        assert "<nav" in document and "<footer" in document and "8 800 555-35-35" in document
        assert page.body.strip() in document


def test_the_committed_pdf_is_made_by_its_script_and_has_text() -> None:
    made = text_pdf(PAGES, title=TITLE)
    assert PDF.read_bytes() == made
    assert made.startswith(b"%PDF-1.4") and made.rstrip().endswith(b"%%EOF")
    assert b"(Kazan) Tj" in made  # drawn as text, not as a picture
    assert any(PDF_PATH in p.body for p in load_pages().values())  # linked from a page


def test_questions_cover_every_kind_and_name_pages_that_exist() -> None:
    questions = load_questions()
    kinds = Counter(q.kind for q in questions)
    assert len(questions) >= 60
    assert kinds["none"] >= 10 and kinds["typo"] >= 5 and kinds["cross"] >= 10
    pages = set(load_pages()) | {PDF_PATH}
    for q in questions:
        assert set(q.accepted) <= pages, q.q
    # cross-language both ways
    langs = {
        (q.lang, load_pages()[q.expect].lang)
        for q in questions
        if q.kind == "cross" and q.expect in load_pages()
    }
    assert ("ru", "en") in langs and ("en", "ru") in langs
    assert len({q.q for q in questions}) == len(questions)


def test_scoring_counts_hits_and_nothing_found() -> None:
    questions = load_questions()
    answerable = [q for q in questions if q.expect][:2]
    unanswerable = [q for q in questions if q.expect is None][:2]
    result = score(
        {
            answerable[0]: ["http://127.0.0.1:1" + str(answerable[0].expect)],
            answerable[1]: ["/x.html", "/y.html", "/z.html", str(answerable[1].expect)],
            unanswerable[0]: [],
            unanswerable[1]: ["/vozvrat.html"],
        }
    )
    assert (result.hit1, result.hit3, result.answerable) == (1, 1, 2)
    assert (result.nothing_found, result.unanswerable) == (1, 2)
    assert page_path("/tmp/a/site/en/about.html") == "/en/about.html"


def test_site_as_files(tmp_path) -> None:  # type: ignore[no-untyped-def]
    written = write_site(tmp_path / "site")
    assert len(written) == len(load_pages()) + 1
    assert (tmp_path / "site" / "files" / "service-centres.pdf").read_bytes().startswith(b"%PDF")


# --- the bad inputs are what they claim to be -----------------------------------------


def test_scanned_pdf_has_an_image_and_no_text() -> None:
    pdf = scanned_pdf()
    assert pdf.startswith(b"%PDF") and b"/Subtype /Image" in pdf
    assert b" Tj" not in pdf and b"/Font" not in pdf


def test_huge_pdf_is_written_at_its_size(tmp_path) -> None:  # type: ignore[no-untyped-def]
    path = write_huge_pdf(tmp_path / "catalogue.pdf")
    size = path.stat().st_size
    assert 49 * 1024 * 1024 < size <= 51 * 1024 * 1024
    with path.open("rb") as f:
        assert f.read(8) == b"%PDF-1.4"


def test_small_docx_is_a_word_document_with_its_text() -> None:
    data = docx_bytes(
        [("Heading1", "Доставка"), ("", "Курьер приедет завтра.")],
        table=[["Зона", "Цена"], ["МКАД", "350"]],
    )
    with zipfile.ZipFile(io.BytesIO(data)) as z:
        root = ElementTree.fromstring(z.read("word/document.xml"))
    texts = [t.text for t in root.iter() if t.tag.endswith("}t")]
    assert texts == ["Доставка", "Курьер приедет завтра.", "Зона", "Цена", "МКАД", "350"]


@pytest.mark.parametrize("kind", MALFORMED_DOCX)
def test_malformed_docx_cannot_be_read_as_a_document(kind: str) -> None:
    data = malformed_docx(kind)
    with pytest.raises((zipfile.BadZipFile, KeyError, ElementTree.ParseError)):
        with zipfile.ZipFile(io.BytesIO(data)) as z:
            ElementTree.fromstring(z.read("word/document.xml"))


def test_hostile_docx_files() -> None:
    bomb = zip_bomb_docx(inflated=64 * 1024 * 1024)
    with zipfile.ZipFile(io.BytesIO(bomb)) as z:
        info = z.getinfo("word/document.xml")
    assert info.file_size > 60 * 1024 * 1024 and len(bomb) < info.file_size // 500
    for hostile in (billion_laughs_docx(), external_entity_docx()):
        with zipfile.ZipFile(io.BytesIO(hostile)) as z:
            assert b"<!ENTITY" in z.read("word/document.xml")


def test_cp1251_page_is_not_utf8() -> None:
    page = cp1251_html()
    with pytest.raises(UnicodeDecodeError):
        page.decode("utf-8")
    assert re.search("Казань", page.decode("cp1251"))
