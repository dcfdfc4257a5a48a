"""Real document files for the knowledge tests, good and bad, made from code.

Nothing here is a mock: each builder writes a file that real readers open (or, for the bad
ones, a file made the way a broken or hostile one is made), so the knowledge ingestion is
tested on what an owner could really upload.

- `text_pdf`: a real PDF (1.4) with a text layer in the standard Helvetica font
  (Windows-1252 text, so Latin script only); the help centre's committed PDF is made by it
  (tests/data/knowledge/help_centre/make_pdf.py).
- `scanned_pdf`: a PDF whose page is one image and no text layer (a scan).
- `write_huge_pdf`: a valid PDF padded to `size` bytes by an image stream (50 MB by
  default), written into a folder the test gives (never committed).
- `docx_bytes`: a real small DOCX (WordprocessingML: headings, paragraphs, a table).
- Hostile or broken DOCX: `malformed_docx` (the kinds in `MALFORMED_DOCX`),
  `zip_bomb_docx` (document.xml inflating to hundreds of MB), `billion_laughs_docx`
  (nested XML entities), `external_entity_docx` (an entity reading a local file).
- `cp1251_html`: an HTML page in Windows-1251, declared in its <meta> only.
"""

from __future__ import annotations

import io
import zipfile
import zlib
from collections.abc import Sequence
from pathlib import Path

# --- PDF -------------------------------------------------------------------------------


def _pdf_string(text: str) -> bytes:
    raw = text.encode("cp1252")
    return b"(" + raw.replace(b"\\", b"\\\\").replace(b"(", b"\\(").replace(b")", b"\\)") + b")"


def _assemble_pdf(objects: Sequence[bytes], *, info: bytes | None = None) -> bytes:
    """Objects numbered from 1 (1: the catalog), the cross-reference table and trailer."""
    out = io.BytesIO()
    out.write(b"%PDF-1.4\n%\xe2\xe3\xcf\xd3\n")
    offsets = []
    for number, body in enumerate(objects, start=1):
        offsets.append(out.tell())
        out.write(b"%d 0 obj\n" % number + body + b"\nendobj\n")
    xref = out.tell()
    out.write(b"xref\n0 %d\n0000000000 65535 f \n" % (len(objects) + 1))
    for offset in offsets:
        out.write(b"%010d 00000 n \n" % offset)
    trailer = b"<< /Size %d /Root 1 0 R" % (len(objects) + 1)
    if info is not None:
        trailer += b" /Info %d 0 R" % len(objects)
    out.write(b"trailer\n" + trailer + b" >>\nstartxref\n%d\n%%%%EOF\n" % xref)
    return out.getvalue()


def _stream(data: bytes, extra: bytes = b"") -> bytes:
    return b"<< /Length %d%s >>\nstream\n" % (len(data), extra) + data + b"\nendstream"


def text_pdf(pages: Sequence[Sequence[str]], *, title: str) -> bytes:
    """A PDF with one page per item of `pages`, each line of text drawn in Helvetica
    (a line starting with "# " is drawn bold and larger: a heading). A4, 72 pt margins."""
    page_count = len(pages)
    # 1 catalog, 2 pages, 3 font, 4 bold font, then (page, content) pairs, then info
    first_page = 5
    kids = b" ".join(b"%d 0 R" % (first_page + 2 * i) for i in range(page_count))
    objects: list[bytes] = [
        b"<< /Type /Catalog /Pages 2 0 R >>",
        b"<< /Type /Pages /Kids [%s] /Count %d >>" % (kids, page_count),
        b"<< /Type /Font /Subtype /Type1 /BaseFont /Helvetica /Encoding /WinAnsiEncoding >>",
        b"<< /Type /Font /Subtype /Type1 /BaseFont /Helvetica-Bold /Encoding /WinAnsiEncoding >>",
    ]
    for index, lines in enumerate(pages):
        ops = [b"BT", b"72 770 Td"]
        for line in lines:
            if line.startswith("# "):
                ops += [b"/F2 14 Tf", b"0 -8 Td", _pdf_string(line[2:]) + b" Tj", b"0 -22 Td"]
            else:
                ops += [b"/F1 11 Tf", _pdf_string(line) + b" Tj", b"0 -15 Td"]
        ops.append(b"ET")
        content = b"\n".join(ops)
        objects.append(
            b"<< /Type /Page /Parent 2 0 R /MediaBox [0 0 595 842] "
            b"/Resources << /Font << /F1 3 0 R /F2 4 0 R >> >> /Contents %d 0 R >>"
            % (first_page + 2 * index + 1)
        )
        objects.append(_stream(content))
    objects.append(
        b"<< /Title %s /Producer (tests/fakes/documents.py) "
        b"/CreationDate (D:20261201090000Z) >>" % _pdf_string(title)
    )
    return _assemble_pdf(objects, info=objects[-1])


def _image_page_pdf(pixels: bytes, width: int, height: int, *, compress: bool) -> bytes:
    data = zlib.compress(pixels, 6) if compress else pixels
    image = _stream(
        data,
        b" /Type /XObject /Subtype /Image /Width %d /Height %d /ColorSpace /DeviceGray "
        b"/BitsPerComponent 8%s" % (width, height, b" /Filter /FlateDecode" if compress else b""),
    )
    draw = _stream(b"q 451 0 0 698 72 72 cm /Im1 Do Q")
    return _assemble_pdf(
        [
            b"<< /Type /Catalog /Pages 2 0 R >>",
            b"<< /Type /Pages /Kids [3 0 R] /Count 1 >>",
            b"<< /Type /Page /Parent 2 0 R /MediaBox [0 0 595 842] "
            b"/Resources << /XObject << /Im1 4 0 R >> >> /Contents 5 0 R >>",
            image,
            draw,
        ]
    )


def scanned_pdf() -> bytes:
    """One page holding only a grey picture of "text" lines: no text layer to read."""
    width, height = 200, 280
    rows = []
    for y in range(height):
        ink = (y // 6) % 3 == 0 and 20 < y < 260
        rows.append(bytes(40 if ink and 16 < x < 184 else 245 for x in range(width)))
    return _image_page_pdf(b"".join(rows), width, height, compress=True)


def write_huge_pdf(path: Path, size: int = 50 * 1024 * 1024) -> Path:
    """A valid one-page PDF of about `size` bytes (an uncompressed image): what an owner's
    50 MB catalogue looks like to a size limit. Written to `path` (a test's tmp_path)."""
    side = int((size - 2048) ** 0.5)
    path.write_bytes(_image_page_pdf(bytes(side * side), side, side, compress=False))
    return path


# --- DOCX ------------------------------------------------------------------------------

_W = "http://schemas.openxmlformats.org/wordprocessingml/2006/main"
_CONTENT_TYPES = (
    '<?xml version="1.0" encoding="UTF-8" standalone="yes"?>\n'
    '<Types xmlns="http://schemas.openxmlformats.org/package/2006/content-types">'
    '<Default Extension="rels" '
    'ContentType="application/vnd.openxmlformats-package.relationships+xml"/>'
    '<Default Extension="xml" ContentType="application/xml"/>'
    '<Override PartName="/word/document.xml" ContentType="application/'
    'vnd.openxmlformats-officedocument.wordprocessingml.document.main+xml"/>'
    "</Types>"
)
_RELS = (
    '<?xml version="1.0" encoding="UTF-8" standalone="yes"?>\n'
    '<Relationships xmlns="http://schemas.openxmlformats.org/package/2006/relationships">'
    '<Relationship Id="rId1" Type="http://schemas.openxmlformats.org/officeDocument/2006/'
    'relationships/officeDocument" Target="word/document.xml"/>'
    "</Relationships>"
)


def _xml_text(text: str) -> str:
    return text.replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;")


def _paragraph(text: str, style: str | None = None) -> str:
    props = f'<w:pPr><w:pStyle w:val="{style}"/></w:pPr>' if style else ""
    return f'<w:p>{props}<w:r><w:t xml:space="preserve">{_xml_text(text)}</w:t></w:r></w:p>'


def _table(rows: Sequence[Sequence[str]]) -> str:
    cells = "".join(
        "<w:tr>" + "".join(f"<w:tc>{_paragraph(cell)}</w:tc>" for cell in row) + "</w:tr>"
        for row in rows
    )
    return f"<w:tbl>{cells}</w:tbl>"


def _docx(document_xml: str | bytes, *, compress: int = zipfile.ZIP_DEFLATED) -> bytes:
    out = io.BytesIO()
    with zipfile.ZipFile(out, "w", compression=compress) as z:
        z.writestr("[Content_Types].xml", _CONTENT_TYPES)
        z.writestr("_rels/.rels", _RELS)
        z.writestr("word/document.xml", document_xml)
    return out.getvalue()


def docx_bytes(
    blocks: Sequence[tuple[str, str]], table: Sequence[Sequence[str]] | None = None
) -> bytes:
    """A real DOCX: `blocks` are (style, text) with style "Heading1", "Heading2" or ""
    (a plain paragraph); `table` (rows of cells) follows them."""
    body = "".join(_paragraph(text, style or None) for style, text in blocks)
    if table:
        body += _table(table)
    return _docx(
        '<?xml version="1.0" encoding="UTF-8" standalone="yes"?>\n'
        f'<w:document xmlns:w="{_W}"><w:body>{body}</w:body></w:document>'
    )


# the kinds of malformed DOCX: a name for each, for parametrised tests
MALFORMED_DOCX = ("not_a_zip", "truncated", "no_document", "broken_xml", "empty")


def malformed_docx(kind: str) -> bytes:
    good = docx_bytes([("Heading1", "Returns"), ("", "Bring the item within 14 days.")])
    if kind == "not_a_zip":
        return b"This is a plain text file someone renamed to .docx\n" * 20
    if kind == "truncated":
        return good[: len(good) // 2]
    if kind == "no_document":
        out = io.BytesIO()
        with zipfile.ZipFile(out, "w") as z:
            z.writestr("[Content_Types].xml", _CONTENT_TYPES)
            z.writestr("word/other.xml", "<x/>")
        return out.getvalue()
    if kind == "broken_xml":
        return _docx(f'<w:document xmlns:w="{_W}"><w:body><w:p><w:r><w:t>Half a')
    if kind == "empty":
        return b""
    raise ValueError(f"unknown malformed DOCX kind: {kind}")


def zip_bomb_docx(inflated: int = 300 * 1024 * 1024) -> bytes:
    """A DOCX of about 300 KB whose document.xml inflates to `inflated` bytes (one run of
    spaces inside a text element): reading it whole would take that much memory."""
    head = f'<?xml version="1.0"?><w:document xmlns:w="{_W}"><w:body><w:p><w:r><w:t>'.encode()
    tail = b"</w:t></w:r></w:p></w:body></w:document>"
    out = io.BytesIO()
    with zipfile.ZipFile(out, "w", compression=zipfile.ZIP_DEFLATED, compresslevel=9) as z:
        with z.open("[Content_Types].xml", "w") as f:
            f.write(_CONTENT_TYPES.encode())
        with z.open("_rels/.rels", "w") as f:
            f.write(_RELS.encode())
        with z.open("word/document.xml", "w", force_zip64=True) as f:
            f.write(head)
            chunk = b" " * (1024 * 1024)
            for _ in range(inflated // len(chunk)):
                f.write(chunk)
            f.write(tail)
    return out.getvalue()


def billion_laughs_docx() -> bytes:
    """document.xml declaring nested entities that expand to ~10^9 "lol"s."""
    entities = '<!ENTITY lol0 "lol">' + "".join(
        f'<!ENTITY lol{i} "{("&lol" + str(i - 1) + ";") * 10}">' for i in range(1, 10)
    )
    return _docx(
        f'<?xml version="1.0"?><!DOCTYPE w:document [{entities}]>'
        f'<w:document xmlns:w="{_W}"><w:body><w:p><w:r><w:t>&lol9;</w:t></w:r></w:p>'
        "</w:body></w:document>"
    )


def external_entity_docx(target: str = "file:///etc/passwd") -> bytes:
    """document.xml whose text is an external entity: a reader resolving it would put a
    local file's content (or a fetched URL's) into the knowledge."""
    return _docx(
        f'<?xml version="1.0"?><!DOCTYPE w:document [<!ENTITY xxe SYSTEM "{target}">]>'
        f'<w:document xmlns:w="{_W}"><w:body><w:p><w:r><w:t>Delivery &xxe;</w:t></w:r>'
        "</w:p></w:body></w:document>"
    )


# --- HTML ------------------------------------------------------------------------------

CP1251_TEXT = "Доставка в Казань занимает 3–5 дней, стоимость 450 рублей."


def cp1251_html(*, declared: bool = True) -> bytes:
    """A Russian page in Windows-1251 (as many older shop sites still are), its charset
    said only by <meta> when `declared`, else not at all."""
    meta = '<meta http-equiv="Content-Type" content="text/html; charset=windows-1251">'
    page = (
        f'<!DOCTYPE html><html lang="ru"><head>{meta if declared else ""}'
        "<title>Доставка в Казань</title></head><body><main><h1>Доставка в Казань</h1>"
        f"<p>{CP1251_TEXT}</p></main></body></html>"
    )
    return page.encode("cp1251")
