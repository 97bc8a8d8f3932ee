"""Real documents generated for tests: minimal PDFs (hand-written objects) and DOCX files."""

from __future__ import annotations

import io
from collections.abc import Sequence

import docx
import pypdf

__all__ = ["encrypt_pdf", "make_docx", "make_pdf"]

Table = list[list[str]]


def _pdf_string(line: str) -> bytes:
    escaped = line.replace("\\", "\\\\").replace("(", "\\(").replace(")", "\\)")
    return b"(" + escaped.encode("cp1252") + b")"


def _content_stream(text: str) -> bytes:
    """Helvetica 12 pt, one PDF text line per line of ``text``."""
    commands = [b"BT", b"/F1 12 Tf", b"14 TL", b"72 720 Td"]
    for line in text.split("\n"):
        commands.append(_pdf_string(line) + b" Tj T*")
    commands.append(b"ET")
    return b"\n".join(commands)


def make_pdf(pages: list[str]) -> bytes:
    """A valid PDF with one page per string (an empty string gives a page without text).
    Text must be encodable in Windows-1252."""
    page_ids = [4 + 2 * index for index in range(len(pages))]
    objects: dict[int, bytes] = {
        1: b"<< /Type /Catalog /Pages 2 0 R >>",
        2: b"<< /Type /Pages /Kids ["
        + b" ".join(b"%d 0 R" % page_id for page_id in page_ids)
        + b"] /Count %d >>" % len(pages),
        3: b"<< /Type /Font /Subtype /Type1 /BaseFont /Helvetica /Encoding /WinAnsiEncoding >>",
    }
    for page_id, text in zip(page_ids, pages, strict=True):
        stream = _content_stream(text) if text else b""
        objects[page_id] = (
            b"<< /Type /Page /Parent 2 0 R /MediaBox [0 0 612 792] "
            b"/Resources << /Font << /F1 3 0 R >> >> /Contents %d 0 R >>" % (page_id + 1)
        )
        objects[page_id + 1] = b"<< /Length %d >>\nstream\n%s\nendstream" % (len(stream), stream)
    out = io.BytesIO()
    out.write(b"%PDF-1.4\n%\xe2\xe3\xcf\xd3\n")
    offsets: dict[int, int] = {}
    for number in sorted(objects):
        offsets[number] = out.tell()
        out.write(b"%d 0 obj\n%s\nendobj\n" % (number, objects[number]))
    xref = out.tell()
    size = len(objects) + 1
    out.write(b"xref\n0 %d\n0000000000 65535 f \n" % size)
    for number in range(1, size):
        out.write(b"%010d 00000 n \n" % offsets[number])
    out.write(b"trailer\n<< /Size %d /Root 1 0 R >>\nstartxref\n%d\n%%%%EOF\n" % (size, xref))
    return out.getvalue()


def encrypt_pdf(pdf: bytes, *, user_password: str, owner_password: str = "owner") -> bytes:
    """``pdf`` encrypted with AES-128; an empty user password opens it without one."""
    writer = pypdf.PdfWriter(clone_from=pypdf.PdfReader(io.BytesIO(pdf)))
    writer.encrypt(user_password=user_password, owner_password=owner_password, algorithm="AES-128")
    out = io.BytesIO()
    writer.write(out)
    return out.getvalue()


def make_docx(paragraphs: Sequence[str | Table]) -> bytes:
    """A .docx with one paragraph per string; a list of rows (lists of cell texts) becomes a
    table at that place."""
    document = docx.Document()
    for block in paragraphs:
        if isinstance(block, str):
            document.add_paragraph(block)
            continue
        table = document.add_table(rows=len(block), cols=max(len(row) for row in block))
        for row, cells in zip(table.rows, block, strict=True):
            for cell, text in zip(row.cells, cells, strict=False):
                cell.text = text
    out = io.BytesIO()
    document.save(out)
    return out.getvalue()
