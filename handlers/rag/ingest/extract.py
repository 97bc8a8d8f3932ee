"""Text extraction from uploaded files: plain text, Markdown, CSV, JSON, HTML, PDF and DOCX."""

from __future__ import annotations

import codecs
import io
import re
import zipfile
from collections.abc import Callable, Iterator
from html.parser import HTMLParser
from pathlib import Path, PurePath

import docx
import docx.document
import docx.table
import docx.text.paragraph
import pypdf
from docx.opc.exceptions import PackageNotFoundError

from handlers.rag.ingest.base import ExtractedDocument, ExtractionError, PageText

__all__ = ["SUPPORTED_EXTENSIONS", "extract_document"]

_TEXT_EXTENSIONS = frozenset({".txt", ".md", ".markdown", ".csv", ".json"})
_HTML_EXTENSIONS = frozenset({".html", ".htm"})
SUPPORTED_EXTENSIONS: tuple[str, ...] = tuple(
    sorted(_TEXT_EXTENSIONS | _HTML_EXTENSIONS | {".pdf", ".docx"})
)

# UTF-32 BOMs first: the UTF-32-LE BOM starts with the UTF-16-LE one.
_BOMS: tuple[tuple[bytes, str], ...] = (
    (codecs.BOM_UTF8, "utf-8-sig"),
    (codecs.BOM_UTF32_LE, "utf-32"),
    (codecs.BOM_UTF32_BE, "utf-32"),
    (codecs.BOM_UTF16_LE, "utf-16"),
    (codecs.BOM_UTF16_BE, "utf-16"),
)
_META_CHARSET = re.compile(rb"""<meta[^>]+charset\s*=\s*["']?\s*([A-Za-z0-9_.:-]+)""", re.I)


def extract_document(path: Path, filename: str) -> ExtractedDocument:
    """Reads the file at ``path`` and returns its text, one PageText per page for PDFs and a
    single page-less PageText otherwise. ``filename`` (the name the user gave) picks the format.

    Blocking; raises ExtractionError (kind ``empty``, ``unsupported`` or ``undecodable``).
    """
    extension = PurePath(filename).suffix.lower()
    extractor = _EXTRACTORS.get(extension)
    if extractor is None:
        supported = ", ".join(SUPPORTED_EXTENSIONS)
        what = f"file type '{extension}'" if extension else f"file '{filename}' (no extension)"
        raise ExtractionError("unsupported", f"Unsupported {what}; supported: {supported}")
    data = path.read_bytes()
    if not data:
        raise ExtractionError("empty", f"'{filename}' contains no text (the file is empty)")
    pages = [PageText(page.page, _normalise(page.text)) for page in extractor(data, filename)]
    pages = [page for page in pages if page.text.strip()]
    if not pages:
        hint = " (a scanned PDF without a text layer?)" if extension == ".pdf" else ""
        raise ExtractionError("empty", f"'{filename}' contains no text{hint}")
    return ExtractedDocument(filename=filename, pages=pages)


def _normalise(text: str) -> str:
    return text.replace("\r\n", "\n").replace("\r", "\n").replace("\x00", "")


def _decode(data: bytes, filename: str) -> str:
    """UTF-8 (a BOM is dropped); a UTF-16 or UTF-32 byte-order mark selects that encoding."""
    encoding = next((enc for bom, enc in _BOMS if data.startswith(bom)), "utf-8")
    try:
        return data.decode(encoding)
    except UnicodeDecodeError as exc:
        raise ExtractionError(
            "undecodable",
            f"'{filename}' is not valid UTF-8 text (invalid byte at offset {exc.start}); "
            "save it as UTF-8 and upload it again",
        ) from None


def _extract_text(data: bytes, filename: str) -> list[PageText]:
    return [PageText(None, _decode(data, filename))]


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
        return _decode(data, filename)
    except ExtractionError:
        # Legacy pages declare their encoding in a <meta> tag.
        match = _META_CHARSET.search(data[:4096])
        if match is None:
            raise
        try:
            return data.decode(match.group(1).decode("ascii"))
        except (LookupError, UnicodeDecodeError):
            raise ExtractionError(
                "undecodable",
                f"'{filename}' is neither valid UTF-8 nor valid in its declared charset "
                f"'{match.group(1).decode('ascii')}'",
            ) from None


def _extract_html(data: bytes, filename: str) -> list[PageText]:
    parser = _HTMLTextParser()
    parser.feed(_normalise(_decode_html(data, filename)))
    parser.close()
    return [PageText(None, parser.text())]


# --- PDF --------------------------------------------------------------------------------------


def _extract_pdf(data: bytes, filename: str) -> list[PageText]:
    # The header may follow a few bytes of junk; readers accept it within the first 1 KiB.
    if b"%PDF-" not in data[:1024]:
        raise ExtractionError("undecodable", f"'{filename}' is not a PDF file (no %PDF- header)")
    try:
        reader = pypdf.PdfReader(io.BytesIO(data))
        if reader.is_encrypted:
            _decrypt(reader, filename)
        pages = list(reader.pages)
    except ExtractionError:
        raise
    except Exception as exc:  # pypdf raises many kinds of errors on damaged files
        raise ExtractionError(
            "undecodable", f"'{filename}' is not a readable PDF: {_describe(exc)}"
        ) from exc
    texts: list[PageText] = []
    for number, page in enumerate(pages, start=1):
        try:
            texts.append(PageText(number, page.extract_text()))
        except Exception as exc:
            raise ExtractionError(
                "undecodable", f"page {number} of '{filename}' cannot be read: {_describe(exc)}"
            ) from exc
    return texts


def _decrypt(reader: pypdf.PdfReader, filename: str) -> None:
    try:
        result = reader.decrypt("")
    except (NotImplementedError, pypdf.errors.DependencyError) as exc:
        raise ExtractionError(
            "undecodable", f"'{filename}' is encrypted with an unsupported method: {exc}"
        ) from exc
    if result == pypdf.PasswordType.NOT_DECRYPTED:
        raise ExtractionError(
            "undecodable", f"'{filename}' is password-protected; upload an unencrypted copy"
        )


def _describe(exc: Exception) -> str:
    return f"{type(exc).__name__}: {exc}" if str(exc) else type(exc).__name__


# --- DOCX -------------------------------------------------------------------------------------

_Container = docx.document.Document | docx.table._Cell


def _extract_docx(data: bytes, filename: str) -> list[PageText]:
    if not zipfile.is_zipfile(io.BytesIO(data)):
        raise ExtractionError(
            "undecodable", f"'{filename}' is not a valid .docx document (not a ZIP archive)"
        )
    try:
        document = docx.Document(io.BytesIO(data))
        blocks = list(_docx_blocks(document))
    except PackageNotFoundError:
        raise ExtractionError(
            "undecodable", f"'{filename}' is not a valid .docx document (no Word content)"
        ) from None
    except Exception as exc:  # damaged archives and XML fail in many ways
        raise ExtractionError(
            "undecodable", f"'{filename}' is not a readable .docx document: {_describe(exc)}"
        ) from exc
    return [PageText(None, "\n\n".join(block for block in blocks if block.strip()))]


def _docx_blocks(container: _Container) -> Iterator[str]:
    """Paragraph texts and tables (a line "cell | cell" per row) in document order."""
    for item in container.iter_inner_content():
        if isinstance(item, docx.text.paragraph.Paragraph):
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


_EXTRACTORS: dict[str, Callable[[bytes, str], list[PageText]]] = {
    **dict.fromkeys(_TEXT_EXTENSIONS, _extract_text),
    **dict.fromkeys(_HTML_EXTENSIONS, _extract_html),
    ".pdf": _extract_pdf,
    ".docx": _extract_docx,
}
