"""The owner's files as documents: PDF (pypdf), Word (python-docx), Markdown, plain text,
HTML. Each reader gives sections under headings (tools/knowledge/documents.py) or a
`DocumentError` with one line: what is wrong and what to do.

A hostile file is refused before it is parsed: a DOCX is a zip whose unpacked size and
ratio are checked first (a "zip bomb" would fill memory), a PDF beyond `max_pages` is
refused, an encrypted one too; a PDF with no text layer (a scan) says so.
"""

from __future__ import annotations

import io
import re
import zipfile
from pathlib import PurePath

from tools.knowledge.documents import DocumentError, ParsedDocument, SectionBuilder, clean
from tools.knowledge.html import decode_html, read_html

MAX_PDF_PAGES = 500
MAX_UNPACKED_BYTES = 100_000_000  # a DOCX's XML, unpacked
MAX_ZIP_RATIO = 200  # unpacked / packed: real documents stay far below

SUFFIXES = {
    ".pdf": "pdf",
    ".docx": "docx",
    ".md": "markdown",
    ".markdown": "markdown",
    ".txt": "text",
    ".text": "text",
    ".html": "html",
    ".htm": "html",
}

_MD_HEADING = re.compile(r"^(#{1,6})\s+(.*?)\s*#*\s*$")
_DOCX_HEADING = re.compile(r"^(?:heading|заголовок)\s*(\d)$", re.IGNORECASE)


def kind_of(name: str) -> str | None:
    """The reader for a file name (by its suffix), None when not supported."""
    return SUFFIXES.get(PurePath(name).suffix.lower())


def read_file(name: str, data: bytes) -> ParsedDocument:
    """The document in `data`, read by its name's suffix."""
    kind = kind_of(name)
    stem = PurePath(name).stem
    if kind == "pdf":
        return read_pdf(data, stem)
    if kind == "docx":
        return read_docx(data, stem)
    if kind == "markdown":
        return read_markdown(_text(data), stem)
    if kind == "text":
        return read_text(_text(data), stem)
    if kind == "html":
        return read_html(decode_html(data))
    raise DocumentError(
        f"{PurePath(name).name}: not a supported file (PDF, DOCX, Markdown, text or HTML)"
    )


def _text(data: bytes) -> str:
    try:
        return data.decode("utf-8-sig")
    except UnicodeDecodeError:
        return data.decode("cp1251", errors="replace")


def read_markdown(text: str, title: str) -> ParsedDocument:
    out = SectionBuilder()
    paragraph: list[str] = []

    def flush() -> None:
        if paragraph:
            out.block(" ".join(paragraph))
            paragraph.clear()

    first_heading = ""
    for line in text.splitlines():
        heading = _MD_HEADING.match(line)
        stripped = line.strip()
        if heading:
            flush()
            out.heading(len(heading.group(1)), heading.group(2))
            first_heading = first_heading or clean(heading.group(2))
        elif not stripped:
            flush()
        elif stripped.startswith(("- ", "* ", "+ ", "|")) or re.match(r"^\d+[.)]\s", stripped):
            flush()  # list items and table rows stay one line each
            if not re.fullmatch(r"\|?[\s:|-]+\|?", stripped):  # a table's --- row
                out.block(stripped)
        else:
            paragraph.append(stripped)
    flush()
    return ParsedDocument(title=first_heading or title, sections=out.result())


def read_text(text: str, title: str) -> ParsedDocument:
    out = SectionBuilder()
    for paragraph in re.split(r"\n\s*\n", text):
        out.block(" ".join(paragraph.split()))
    return ParsedDocument(title=title, sections=out.result())


def read_pdf(data: bytes, title: str) -> ParsedDocument:
    from pypdf import PdfReader
    from pypdf.errors import PyPdfError

    try:
        reader = PdfReader(io.BytesIO(data))
        if reader.is_encrypted:
            raise DocumentError(f"{title}.pdf is password-protected; save it without a password")
        if len(reader.pages) > MAX_PDF_PAGES:
            raise DocumentError(
                f"{title}.pdf has {len(reader.pages)} pages, more than {MAX_PDF_PAGES}; split it"
            )
        out = SectionBuilder()
        for page in reader.pages:
            for paragraph in re.split(r"\n\s*\n", page.extract_text() or ""):
                out.block(" ".join(paragraph.split()))
        meta_title = reader.metadata.title if reader.metadata is not None else None
    except DocumentError:
        raise
    except (PyPdfError, ValueError, KeyError, TypeError, OSError, RecursionError) as exc:
        raise DocumentError(f"{title}.pdf cannot be read ({type(exc).__name__})") from None
    sections = out.result()
    if not sections:
        raise DocumentError(
            f"{title}.pdf has no text (a scanned PDF?); add a PDF with a text layer"
        )
    return ParsedDocument(title=clean(meta_title or "") or title, sections=sections)


def _check_zip(data: bytes, name: str) -> None:
    try:
        with zipfile.ZipFile(io.BytesIO(data)) as archive:
            unpacked = sum(info.file_size for info in archive.infolist())
    except (zipfile.BadZipFile, OSError, ValueError) as exc:
        raise DocumentError(f"{name} is not a valid DOCX file ({type(exc).__name__})") from None
    if unpacked > MAX_UNPACKED_BYTES or unpacked > MAX_ZIP_RATIO * max(len(data), 1):
        raise DocumentError(f"{name} unpacks to {unpacked} bytes; refused as unsafe")


def read_docx(data: bytes, title: str) -> ParsedDocument:
    name = f"{title}.docx"
    _check_zip(data, name)
    import docx
    from docx.table import Table
    from docx.text.paragraph import Paragraph

    try:
        document = docx.Document(io.BytesIO(data))
        out = SectionBuilder()
        first_heading = ""
        for item in document.iter_inner_content():
            if isinstance(item, Table):
                for row in item.rows:
                    cells = list(dict.fromkeys(clean(c.text) for c in row.cells))
                    if any(cells):
                        out.block(" | ".join(cells))
                continue
            assert isinstance(item, Paragraph)
            style = (item.style.name if item.style is not None else "") or ""
            level = _DOCX_HEADING.match(style)
            if level or style.lower() == "title":
                out.heading(int(level.group(1)) if level else 1, item.text)
                first_heading = first_heading or clean(item.text)
            elif style.lower().startswith("list"):
                out.block(f"- {item.text}")
            else:
                out.block(item.text)
        core_title = document.core_properties.title
    except DocumentError:
        raise
    except Exception as exc:  # python-docx raises many kinds on a malformed file
        raise DocumentError(f"{name} cannot be read ({type(exc).__name__})") from None
    sections = out.result()
    if not sections:
        raise DocumentError(f"{name} has no text")
    return ParsedDocument(
        title=clean(core_title or "") or first_heading or title, sections=sections
    )
