"""Real documents generated for tests: minimal PDFs (hand-written objects) and DOCX files, and
hostile ones (decompression and entity bombs, lying ZIP headers)."""

from __future__ import annotations

import io
import struct
import zipfile
import zlib
from collections.abc import Sequence
from dataclasses import dataclass

import docx
import pypdf

__all__ = [
    "BILLION_LAUGHS",
    "DOCUMENT_XML",
    "Deflated",
    "deflate",
    "deflate_padded",
    "docx_members",
    "encrypt_pdf",
    "make_docx",
    "make_docx_bomb",
    "make_docx_with_document_xml",
    "make_docx_with_picture",
    "make_pdf",
    "make_pdf_stream_bomb",
    "make_png",
    "make_zip_with_members",
    "write_zip",
]

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


# --- hostile files ----------------------------------------------------------------------------

DOCUMENT_XML = "word/document.xml"

BILLION_LAUGHS = b"""<?xml version="1.0" encoding="UTF-8" standalone="yes"?>
<!DOCTYPE lolz [
 <!ENTITY lol "lol">
 <!ENTITY lol1 "&lol;&lol;&lol;&lol;&lol;&lol;&lol;&lol;&lol;&lol;">
 <!ENTITY lol2 "&lol1;&lol1;&lol1;&lol1;&lol1;&lol1;&lol1;&lol1;&lol1;&lol1;">
 <!ENTITY lol3 "&lol2;&lol2;&lol2;&lol2;&lol2;&lol2;&lol2;&lol2;&lol2;&lol2;">
 <!ENTITY lol4 "&lol3;&lol3;&lol3;&lol3;&lol3;&lol3;&lol3;&lol3;&lol3;&lol3;">
 <!ENTITY lol5 "&lol4;&lol4;&lol4;&lol4;&lol4;&lol4;&lol4;&lol4;&lol4;&lol4;">
 <!ENTITY lol6 "&lol5;&lol5;&lol5;&lol5;&lol5;&lol5;&lol5;&lol5;&lol5;&lol5;">
 <!ENTITY lol7 "&lol6;&lol6;&lol6;&lol6;&lol6;&lol6;&lol6;&lol6;&lol6;&lol6;">
 <!ENTITY lol8 "&lol7;&lol7;&lol7;&lol7;&lol7;&lol7;&lol7;&lol7;&lol7;&lol7;">
 <!ENTITY lol9 "&lol8;&lol8;&lol8;&lol8;&lol8;&lol8;&lol8;&lol8;&lol8;&lol8;">
]>
<w:document xmlns:w="http://schemas.openxmlformats.org/wordprocessingml/2006/main"><w:body>
<w:p><w:r><w:t>&lol9;</w:t></w:r></w:p></w:body></w:document>"""
"""An XML entity bomb ("billion laughs"): 1 KB that expands to 3 GB of "lol"."""

_MIB = 1024 * 1024


@dataclass(frozen=True, slots=True)
class Deflated:
    """A raw deflate stream with the CRC-32 and size of the bytes it expands to."""

    stream: bytes
    crc: int
    size: int


def deflate(data: bytes) -> Deflated:
    compressor = zlib.compressobj(6, zlib.DEFLATED, -zlib.MAX_WBITS)
    return Deflated(compressor.compress(data) + compressor.flush(), zlib.crc32(data), len(data))


def deflate_padded(head: bytes, padding: int, tail: bytes) -> Deflated:
    """``head``, ``padding`` spaces (a multiple of 1 MiB), ``tail``, deflated in a moment: each
    MiB is compressed once and its (byte-aligned, self-contained) deflate block repeated."""
    if padding % _MIB:
        raise ValueError("padding must be a multiple of 1 MiB")
    block = b" " * _MIB
    compressor = zlib.compressobj(9, zlib.DEFLATED, -zlib.MAX_WBITS)
    start = compressor.compress(head) + compressor.flush(zlib.Z_FULL_FLUSH)
    repeated = compressor.compress(block) + compressor.flush(zlib.Z_FULL_FLUSH)
    end = compressor.compress(tail) + compressor.flush()
    crc = zlib.crc32(head)
    for _ in range(padding // _MIB):
        crc = zlib.crc32(block, crc)
    stream = start + repeated * (padding // _MIB) + end
    return Deflated(stream, zlib.crc32(tail, crc), len(head) + padding + len(tail))


def write_zip(
    members: dict[str, Deflated], *, declared_sizes: dict[str, int] | None = None
) -> bytes:
    """A ZIP archive of deflated members; ``declared_sizes`` makes headers lie about sizes."""
    declared_sizes = declared_sizes or {}
    out = io.BytesIO()
    directory = io.BytesIO()
    for name, member in members.items():
        encoded = name.encode()
        size = declared_sizes.get(name, member.size)
        fields = (8, 0, 0x21, member.crc, len(member.stream), size, len(encoded))
        offset = out.tell()
        out.write(struct.pack("<4s5H3L2H", b"PK\x03\x04", 20, 0, *fields, 0))
        out.write(encoded + member.stream)
        directory.write(
            struct.pack("<4s4H2H3L5H2L", b"PK\x01\x02", 20, 20, 0, *fields, 0, 0, 0, 0, 0, offset)
        )
        directory.write(encoded)
    start = out.tell()
    out.write(directory.getvalue())
    count = len(members)
    out.write(
        struct.pack("<4s4H2LH", b"PK\x05\x06", 0, 0, count, count, directory.tell(), start, 0)
    )
    return out.getvalue()


def docx_members(document: bytes) -> dict[str, Deflated]:
    """The members of a .docx, deflated anew (in their order)."""
    with zipfile.ZipFile(io.BytesIO(document)) as archive:
        return {info.filename: deflate(archive.read(info)) for info in archive.infolist()}


def make_docx_bomb(expanded_bytes: int, *, declared_bytes: int | None = None) -> bytes:
    """A valid .docx whose main part is padded with ``expanded_bytes`` of spaces (whitespace
    between elements: still well-formed), deflated to about a thousandth of that;
    ``declared_bytes`` makes its headers declare that size for the main part instead."""
    document = make_docx(["Before the padding."])
    members = docx_members(document)
    head, tail = zipfile.ZipFile(io.BytesIO(document)).read(DOCUMENT_XML).split(b"</w:body>")
    members[DOCUMENT_XML] = deflate_padded(head, expanded_bytes, b"</w:body>" + tail)
    declared = {} if declared_bytes is None else {DOCUMENT_XML: declared_bytes}
    return write_zip(members, declared_sizes=declared)


def make_docx_with_document_xml(xml: bytes) -> bytes:
    """A .docx whose main part is ``xml``."""
    members = docx_members(make_docx(["placeholder"]))
    members[DOCUMENT_XML] = deflate(xml)
    return write_zip(members)


def make_zip_with_members(count: int) -> bytes:
    """A ZIP archive of ``count`` empty members."""
    return write_zip({f"m{number}": deflate(b"") for number in range(count)})


def make_pdf_stream_bomb(expanded_bytes: int) -> bytes:
    """A one-page PDF whose content stream is ``expanded_bytes`` of spaces, deflated (zlib)."""
    raw = deflate_padded(b"", expanded_bytes, b"")
    adler = 1
    block = b" " * _MIB
    for _ in range(expanded_bytes // _MIB):
        adler = zlib.adler32(block, adler)
    stream = b"\x78\xda" + raw.stream + struct.pack(">L", adler)
    objects = [
        b"<< /Type /Catalog /Pages 2 0 R >>",
        b"<< /Type /Pages /Kids [3 0 R] /Count 1 >>",
        b"<< /Type /Page /Parent 2 0 R /MediaBox [0 0 612 792] /Contents 4 0 R >>",
        b"<< /Length %d /Filter /FlateDecode >>\nstream\n%s\nendstream" % (len(stream), stream),
    ]
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


def make_png(width: int = 2, height: int = 2) -> bytes:
    """A valid grey PNG image."""

    def chunk(kind: bytes, body: bytes) -> bytes:
        return (
            struct.pack(">L", len(body)) + kind + body + struct.pack(">L", zlib.crc32(kind + body))
        )

    header = struct.pack(">2L5B", width, height, 8, 0, 0, 0, 0)
    pixels = zlib.compress(b"".join(b"\0" + b"\x80" * width for _ in range(height)))
    return (
        b"\x89PNG\r\n\x1a\n" + chunk(b"IHDR", header) + chunk(b"IDAT", pixels) + chunk(b"IEND", b"")
    )


def make_docx_with_picture(before: str, after: str) -> bytes:
    """A .docx with a paragraph, a picture (a binary member) and another paragraph."""
    document = docx.Document()
    document.add_paragraph(before)
    document.add_picture(io.BytesIO(make_png()))
    document.add_paragraph(after)
    out = io.BytesIO()
    document.save(out)
    return out.getvalue()
