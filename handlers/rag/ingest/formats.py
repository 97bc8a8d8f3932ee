"""The format parsers: an uploaded file's bytes to the text of its pages (HTML, PDF, DOCX), and
the decoding of plain text.

They run in the parse process (:mod:`handlers.rag.ingest.parse_child`), so this module imports
nothing heavy at load time (no numpy: the pipeline's interfaces are not imported here); the
format libraries load in :func:`preload` or with the first file. Every limit a parser applies
comes in a :class:`FormatLimits`.
"""

from __future__ import annotations

import codecs
import io
import re
import zipfile
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from html.parser import HTMLParser
from typing import TYPE_CHECKING

from handlers.rag.ingest.bounded_zip import ZipLimitExceeded, ZipLimits, ZipRefused, check_archive

if TYPE_CHECKING:
    import docx.document
    import docx.table
    import pypdf

__all__ = [
    "PARSED_FORMATS",
    "FormatLimits",
    "Page",
    "ParseRefused",
    "decode_text",
    "parse",
    "preload",
]

Page = tuple[int | None, str]
"""A page's number (1-based; None for formats without pages) and its text."""

# UTF-32 BOMs first: the UTF-32-LE BOM starts with the UTF-16-LE one.
_BOMS: tuple[tuple[bytes, str], ...] = (
    (codecs.BOM_UTF8, "utf-8-sig"),
    (codecs.BOM_UTF32_LE, "utf-32"),
    (codecs.BOM_UTF32_BE, "utf-32"),
    (codecs.BOM_UTF16_LE, "utf-16"),
    (codecs.BOM_UTF16_BE, "utf-16"),
)
_META_CHARSET = re.compile(rb"""<meta[^>]+charset\s*=\s*["']?\s*([A-Za-z0-9_.:-]+)""", re.I)


class ParseRefused(Exception):
    """The file cannot be parsed; ``kind`` and ``message`` as in ExtractionError, with the kind
    ``limit`` for a file that passes a parsing limit."""

    def __init__(self, kind: str, message: str) -> None:
        super().__init__(message)
        self.kind = kind
        self.message = message


@dataclass(frozen=True, slots=True)
class FormatLimits:
    """What one file may cost the parsers."""

    max_text_chars: int = 16 * 1024 * 1024
    """Text extracted from one file (16 Mi characters: some 5,000 pages). It bounds what the
    server receives from a parse, whatever the file expands to."""
    zip: ZipLimits = field(default_factory=ZipLimits)
    """Checked before a .docx (a ZIP archive) is opened."""


def parse(kind: str, data: bytes, filename: str, limits: FormatLimits) -> list[Page]:
    """The pages of ``data``, a file of format ``kind`` (one of PARSED_FORMATS); raises
    ParseRefused."""
    pages = _PARSERS[kind](data, filename, limits)
    total = 0
    for _, text in pages:
        total += len(text)
        if total > limits.max_text_chars:
            raise _too_much_text(filename, limits)
    return pages


def preload() -> None:
    """Imports the format libraries now (a parse process started ahead of a file does this
    while it waits, so the file does not wait for them)."""
    import docx  # noqa: F401
    import pypdf  # noqa: F401


def decode_text(data: bytes, filename: str) -> str:
    """UTF-8 (a BOM is dropped); a UTF-16 or UTF-32 byte-order mark selects that encoding."""
    encoding = next((enc for bom, enc in _BOMS if data.startswith(bom)), "utf-8")
    try:
        return data.decode(encoding)
    except UnicodeDecodeError as exc:
        raise ParseRefused(
            "undecodable",
            f"'{filename}' is not valid UTF-8 text (invalid byte at offset {exc.start}); "
            "save it as UTF-8 and upload it again",
        ) from None


def _too_much_text(filename: str, limits: FormatLimits) -> ParseRefused:
    return ParseRefused(
        "limit", f"'{filename}' holds more than {limits.max_text_chars} characters of text"
    )


def _describe(exc: BaseException) -> str:
    return f"{type(exc).__name__}: {exc}" if str(exc) else type(exc).__name__


# --- HTML -------------------------------------------------------------------------------------

_SKIPPED_TAGS = frozenset({"script", "style", "head", "noscript", "template"})
_LINE_TAGS = frozenset({"br", "li", "tr", "dt", "dd", "caption", "option"})
_BLOCK_TAGS = frozenset(
    {
        "address", "article", "aside", "blockquote", "body", "details", "dialog", "div", "dl",
        "fieldset", "figcaption", "figure", "footer", "form", "h1", "h2", "h3", "h4", "h5", "h6",
        "header", "hr", "main", "nav", "ol", "p", "pre", "section", "summary", "table", "tbody",
        "tfoot", "thead", "ul",
    }
)  # fmt: skip
_CELL_TAGS = frozenset({"td", "th"})


class _HTMLTextParser(HTMLParser):
    """Collects visible text; block elements become paragraph breaks, rows and <br> line breaks,
    table cells are separated by " | "."""

    def __init__(self) -> None:
        super().__init__(convert_charrefs=True)
        self.parts: list[str] = []
        self._skip_depth: dict[str, int] = {}
        self._row_has_cell = False
        self._pre_depth = 0

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        if tag == "body":
            self._skip_depth.pop("head", None)  # an unclosed <head> ends where <body> starts
        elif tag == "pre":
            self._pre_depth += 1
        if tag in _SKIPPED_TAGS:
            self._skip_depth[tag] = self._skip_depth.get(tag, 0) + 1
        elif tag in _CELL_TAGS:
            if self._row_has_cell:
                self.parts.append(" | ")
            self._row_has_cell = True
        else:
            if tag == "tr":
                self._row_has_cell = False
            self._break(tag)

    def handle_startendtag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        self._break(tag)

    def handle_endtag(self, tag: str) -> None:
        if tag == "pre":
            self._pre_depth = max(0, self._pre_depth - 1)
        if tag in _SKIPPED_TAGS:
            depth = self._skip_depth.get(tag, 0) - 1
            if depth > 0:
                self._skip_depth[tag] = depth
            else:
                self._skip_depth.pop(tag, None)
        elif tag not in _LINE_TAGS:  # a line element's start already began a new line
            self._break(tag)

    def handle_data(self, data: str) -> None:
        if self._skip_depth:
            return
        # Line breaks in the source are mere spaces, except inside <pre>.
        self.parts.append(data if self._pre_depth else " ".join(data.split("\n")))

    def _break(self, tag: str) -> None:
        if tag in _BLOCK_TAGS:
            self.parts.append("\n\n")
        elif tag in _LINE_TAGS:
            self.parts.append("\n")

    def text(self) -> str:
        lines = (" ".join(line.split()) for line in "".join(self.parts).split("\n"))
        return re.sub(r"\n{3,}", "\n\n", "\n".join(lines)).strip()


def _decode_html(data: bytes, filename: str) -> str:
    try:
        return decode_text(data, filename)
    except ParseRefused:
        # Legacy pages declare their encoding in a <meta> tag.
        match = _META_CHARSET.search(data[:4096])
        if match is None:
            raise
        try:
            return data.decode(match.group(1).decode("ascii"))
        except (LookupError, UnicodeDecodeError):
            raise ParseRefused(
                "undecodable",
                f"'{filename}' is neither valid UTF-8 nor valid in its declared charset "
                f"'{match.group(1).decode('ascii')}'",
            ) from None


def _parse_html(data: bytes, filename: str, limits: FormatLimits) -> list[Page]:
    parser = _HTMLTextParser()
    text = _decode_html(data, filename)
    parser.feed(text.replace("\r\n", "\n").replace("\r", "\n").replace("\x00", ""))
    parser.close()
    return [(None, parser.text())]


# --- PDF --------------------------------------------------------------------------------------


def _parse_pdf(data: bytes, filename: str, limits: FormatLimits) -> list[Page]:
    """pypdf bounds each stream it decompresses (75 MB by default); the parse process's memory
    limit bounds them all together."""
    # The header may follow a few bytes of junk; readers accept it within the first 1 KiB.
    if b"%PDF-" not in data[:1024]:
        raise ParseRefused("undecodable", f"'{filename}' is not a PDF file (no %PDF- header)")
    import pypdf

    try:
        reader = pypdf.PdfReader(io.BytesIO(data))
        if reader.is_encrypted:
            _decrypt(reader, filename)
        pages = list(reader.pages)
    except (ParseRefused, MemoryError):
        raise
    except Exception as exc:  # pypdf raises many kinds of errors on damaged files
        raise ParseRefused(
            "undecodable", f"'{filename}' is not a readable PDF: {_describe(exc)}"
        ) from exc
    texts: list[Page] = []
    total = 0
    for number, page in enumerate(pages, start=1):
        try:
            text = page.extract_text()
        except MemoryError:
            raise
        except Exception as exc:
            raise ParseRefused(
                "undecodable", f"page {number} of '{filename}' cannot be read: {_describe(exc)}"
            ) from exc
        total += len(text)
        if total > limits.max_text_chars:  # stop before the pages after it are read
            raise _too_much_text(filename, limits)
        texts.append((number, text))
    return texts


def _decrypt(reader: pypdf.PdfReader, filename: str) -> None:
    import pypdf

    try:
        result = reader.decrypt("")
    except (NotImplementedError, pypdf.errors.DependencyError) as exc:
        raise ParseRefused(
            "undecodable", f"'{filename}' is encrypted with an unsupported method: {exc}"
        ) from exc
    if result == pypdf.PasswordType.NOT_DECRYPTED:
        raise ParseRefused(
            "undecodable", f"'{filename}' is password-protected; upload an unencrypted copy"
        )


# --- DOCX -------------------------------------------------------------------------------------


def _parse_docx(data: bytes, filename: str, limits: FormatLimits) -> list[Page]:
    """The archive is checked against the ZIP limits (sizes counted while decompressing, no
    DTDs in its XML) before python-docx opens it."""
    if not zipfile.is_zipfile(io.BytesIO(data)):
        raise ParseRefused(
            "undecodable", f"'{filename}' is not a valid .docx document (not a ZIP archive)"
        )
    try:
        check_archive(data, limits.zip)
    except ZipLimitExceeded as error:
        raise ParseRefused("limit", f"'{filename}' {error}") from None
    except ZipRefused as error:
        raise ParseRefused(
            "undecodable", f"'{filename}' is not a readable .docx document: {error}"
        ) from None
    import docx
    from docx.opc.exceptions import PackageNotFoundError

    try:
        document = docx.Document(io.BytesIO(data))
        blocks = list(_docx_blocks(document))
    except PackageNotFoundError:
        raise ParseRefused(
            "undecodable", f"'{filename}' is not a valid .docx document (no Word content)"
        ) from None
    except MemoryError:
        raise
    except Exception as exc:  # damaged archives and XML fail in many ways
        raise ParseRefused(
            "undecodable", f"'{filename}' is not a readable .docx document: {_describe(exc)}"
        ) from exc
    return [(None, "\n\n".join(block for block in blocks if block.strip()))]


def _docx_blocks(container: docx.document.Document | docx.table._Cell) -> Iterator[str]:
    """Paragraph texts and tables (a line "cell | cell" per row) in document order."""
    from docx.text.paragraph import Paragraph

    for item in container.iter_inner_content():
        if isinstance(item, Paragraph):
            yield item.text
        else:
            yield "\n".join(_docx_table_rows(item))


def _docx_table_rows(table: docx.table.Table) -> Iterator[str]:
    for row in table.rows:
        cells: list[str] = []
        previous = None
        for cell in row.cells:
            if cell._tc is previous:  # a merged cell is listed once per grid column it spans
                continue
            previous = cell._tc
            cells.append(" ".join(" ".join(_docx_blocks(cell)).split()))
        if any(cells):
            yield " | ".join(cells)


_PARSERS: dict[str, Callable[[bytes, str, FormatLimits], list[Page]]] = {
    "html": _parse_html,
    "pdf": _parse_pdf,
    "docx": _parse_docx,
}
PARSED_FORMATS: frozenset[str] = frozenset(_PARSERS)
"""The formats :func:`parse` reads (plain text is only decoded, by :func:`decode_text`)."""
