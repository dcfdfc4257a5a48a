"""The readers: a page's main text in sections under its headings (furniture dropped,
lists and tables readable, legacy charsets decoded), files (PDF, DOCX, Markdown), and
passages that keep their heading path and stay a few hundred words."""

from __future__ import annotations

import pytest

from tests.unit.knowledge.made_files import docx_bytes, pdf_bytes
from tools.knowledge.documents import MAX_WORDS, DocumentError, passages
from tools.knowledge.files import read_file
from tools.knowledge.html import decode_html, read_html

PAGE = """<html><head><title>Доставка — Shop</title></head><body>
<header><a href="/">Home</a> <a href="/pay">Оплата</a></header>
<nav><a href="/returns">Возврат</a></nav>
<div class="cookie-banner">We use cookies <button>OK</button></div>
<main><h1>Доставка</h1><p>Курьером по городу за <b>300 ₽</b>.</p>
<h2>Самовывоз</h2><p>Бесплатно, на следующий день.</p>
<ul><li>Тверская, 5</li><li>Арбат, 1</li></ul>
<table><tr><th>Зона</th><th>Цена</th></tr><tr><td>В пределах МКАД</td><td>300 ₽</td></tr></table>
</main><aside class="newsletter">Subscribe!</aside><footer>© Shop 2024</footer>
<script>alert(1)</script></body></html>"""


def test_a_page_keeps_its_main_text_under_its_headings() -> None:
    document = read_html(PAGE, "https://shop.example/delivery")
    assert document.title == "Доставка — Shop"
    found = passages(document)
    assert found[0] == ("Доставка", "Курьером по городу за 300 ₽.")
    heading, text = found[1]
    assert heading == "Доставка › Самовывоз"
    assert "- Тверская, 5\n- Арбат, 1" in text
    assert "Зона | Цена\nВ пределах МКАД | 300 ₽" in text
    whole = str(found)
    for furniture in ("cookies", "Subscribe", "©", "Home", "alert"):
        assert furniture not in whole
    assert "https://shop.example/pay" in document.links
    assert "https://shop.example/returns" in document.links


def test_a_legacy_charset_is_decoded_from_the_header_or_the_meta_tag() -> None:
    body = "<p>Доставка по Москве</p>".encode("cp1251")
    assert "Доставка по Москве" in decode_html(body, "windows-1251")
    meta = b'<meta charset="windows-1251">' + body
    assert "Доставка по Москве" in decode_html(meta)
    assert "Доставка по Москве" in decode_html(body)  # neither: not UTF-8, so cp1251


def test_long_text_is_split_into_passages_that_keep_their_heading() -> None:
    sentence = "Товар можно вернуть в течение четырнадцати дней после получения заказа. "
    page = f"<main><h1>Возврат</h1><h2>Сроки</h2><p>{sentence * 80}</p></main>"
    found = passages(read_html(page, "https://shop.example/r"))
    assert len(found) >= 3
    assert all(heading == "Возврат › Сроки" for heading, _ in found)
    assert all(len(text.split()) <= MAX_WORDS for _, text in found)


def test_pdf_docx_and_markdown_are_read() -> None:
    pdf = read_file("guide.pdf", pdf_bytes([["Returns within 14 days."], ["Keep the receipt."]]))
    assert "Returns within 14 days." in str(passages(pdf))
    word = read_file("warranty.docx", docx_bytes())
    assert word.title == "Warranty"
    assert (
        "Warranty › How to claim",
        "- Bring the receipt\n- Describe the fault\nProduct | Months\nPhone | 12",
    ) in passages(word)
    md = read_file("faq.md", "# Оплата\n\nКартой или наличными.\n\n## СБП\n- по QR-коду\n".encode())
    assert passages(md) == [("Оплата", "Картой или наличными."), ("Оплата › СБП", "- по QR-коду")]


@pytest.mark.parametrize(
    ("name", "data", "says"),
    [
        ("scan.pdf", pdf_bytes([[], []]), "has no text (a scanned PDF?)"),
        ("broken.pdf", b"%PDF-1.4 nothing else", "cannot be read"),
        ("bad.docx", b"PK\x03\x04 not really a zip", "not a valid DOCX"),
        ("photo.jpg", b"\xff\xd8\xff", "not a supported file"),
    ],
)
def test_a_bad_file_is_one_clear_line(name: str, data: bytes, says: str) -> None:
    with pytest.raises(DocumentError, match=None) as refused:
        read_file(name, data)
    message = str(refused.value)
    assert says in message and "\n" not in message
