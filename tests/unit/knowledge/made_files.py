"""Small real files for the readers' tests, made here: a PDF with a text layer (or none,
like a scan), a Word document with headings, a list and a table."""

from __future__ import annotations

import io


def pdf_bytes(pages: list[list[str]]) -> bytes:
    """A valid PDF (1.4, Helvetica, ASCII text) with one text line per string; a page
    with no lines has no text layer at all, as a scanned page."""
    objects: list[bytes] = [b"<< /Type /Catalog /Pages 2 0 R >>", b""]
    kids = []
    font_id = 3
    objects.append(b"<< /Type /Font /Subtype /Type1 /BaseFont /Helvetica >>")
    for lines in pages:
        ops = ["BT /F1 12 Tf 72 720 Td 14 TL"]
        ops += [f"({line}) Tj T*" for line in lines]
        ops.append("ET")
        stream = "\n".join(ops).encode("latin-1") if lines else b""
        objects.append(b"<< /Length %d >>\nstream\n%s\nendstream" % (len(stream), stream))
        content_id = len(objects)
        objects.append(
            b"<< /Type /Page /Parent 2 0 R /MediaBox [0 0 612 792] /Contents %d 0 R"
            b" /Resources << /Font << /F1 %d 0 R >> >> >>" % (content_id, font_id)
        )
        kids.append(len(objects))
    objects[1] = b"<< /Type /Pages /Kids [%s] /Count %d >>" % (
        b" ".join(b"%d 0 R" % k for k in kids),
        len(kids),
    )
    out = io.BytesIO()
    out.write(b"%PDF-1.4\n")
    offsets = []
    for number, body in enumerate(objects, start=1):
        offsets.append(out.tell())
        out.write(b"%d 0 obj\n%s\nendobj\n" % (number, body))
    xref = out.tell()
    out.write(b"xref\n0 %d\n0000000000 65535 f \n" % (len(objects) + 1))
    for offset in offsets:
        out.write(b"%010d 00000 n \n" % offset)
    out.write(
        b"trailer\n<< /Size %d /Root 1 0 R >>\nstartxref\n%d\n%%%%EOF\n" % (len(objects) + 1, xref)
    )
    return out.getvalue()


def docx_bytes() -> bytes:
    import docx

    document = docx.Document()
    document.add_heading("Warranty", level=1)
    document.add_paragraph("Every device has a 12-month warranty.")
    document.add_heading("How to claim", level=2)
    document.add_paragraph("Bring the receipt", style="List Bullet")
    document.add_paragraph("Describe the fault", style="List Bullet")
    table = document.add_table(rows=2, cols=2)
    table.cell(0, 0).text = "Product"
    table.cell(0, 1).text = "Months"
    table.cell(1, 0).text = "Phone"
    table.cell(1, 1).text = "12"
    out = io.BytesIO()
    document.save(out)
    return out.getvalue()
