"""Text extraction from uploaded files: plain text, Markdown, CSV, JSON, HTML, PDF and DOCX.

Plain text (``.txt``, ``.md``, ``.csv``, ``.json``) is decoded here: one linear pass in C over
a file no larger than the upload limit, with no decompression and no parser to crash. HTML, PDF
and DOCX are parsed in a child process under memory, CPU and wall-clock limits (see
:mod:`handlers.rag.ingest.parse_runner`), after the ZIP inside a .docx has been checked member
by member (:mod:`handlers.rag.ingest.bounded_zip`); a file that passes a limit is refused with
the ExtractionError kind ``limit``.
"""

from __future__ import annotations

import threading
from pathlib import Path, PurePath

from handlers.rag.ingest.base import ExtractedDocument, ExtractionError, PageText
from handlers.rag.ingest.formats import Page, ParseRefused, decode_text
from handlers.rag.ingest.parse_runner import ParseRunner

__all__ = ["SUPPORTED_EXTENSIONS", "default_parse_runner", "extract_document"]

_TEXT_EXTENSIONS = frozenset({".txt", ".md", ".markdown", ".csv", ".json"})
_PARSED_EXTENSIONS = {".html": "html", ".htm": "html", ".pdf": "pdf", ".docx": "docx"}
SUPPORTED_EXTENSIONS: tuple[str, ...] = tuple(sorted(_TEXT_EXTENSIONS | set(_PARSED_EXTENSIONS)))

_default_runner: ParseRunner | None = None
_default_runner_lock = threading.Lock()


def default_parse_runner() -> ParseRunner:
    """The runner :func:`extract_document` uses when given none: default limits and
    concurrency, shared by every caller of this process."""
    global _default_runner
    with _default_runner_lock:
        if _default_runner is None:
            _default_runner = ParseRunner()
        return _default_runner


def extract_document(
    path: Path, filename: str, runner: ParseRunner | None = None
) -> ExtractedDocument:
    """Reads the file at ``path`` and returns its text, one PageText per page for PDFs and a
    single page-less PageText otherwise. ``filename`` (the name the user gave) picks the format;
    ``runner`` parses HTML, PDF and DOCX (:func:`default_parse_runner` when None).

    Blocking; raises ExtractionError (kind ``empty``, ``unsupported``, ``undecodable`` or
    ``limit``).
    """
    extension = PurePath(filename).suffix.lower()
    kind = _PARSED_EXTENSIONS.get(extension)
    if kind is None and extension not in _TEXT_EXTENSIONS:
        supported = ", ".join(SUPPORTED_EXTENSIONS)
        what = f"file type '{extension}'" if extension else f"file '{filename}' (no extension)"
        raise ExtractionError("unsupported", f"Unsupported {what}; supported: {supported}")
    if path.stat().st_size == 0:
        raise ExtractionError("empty", f"'{filename}' contains no text (the file is empty)")
    raw: list[Page]
    if kind is None:
        raw = [(None, _decode(path.read_bytes(), filename))]
    else:
        raw = (runner or default_parse_runner()).parse(path, filename, kind)
    pages = [PageText(page, _normalise(text)) for page, text in raw]
    pages = [page for page in pages if page.text.strip()]
    if not pages:
        hint = " (a scanned PDF without a text layer?)" if extension == ".pdf" else ""
        raise ExtractionError("empty", f"'{filename}' contains no text{hint}")
    return ExtractedDocument(filename=filename, pages=pages)


def _decode(data: bytes, filename: str) -> str:
    try:
        return decode_text(data, filename)
    except ParseRefused as refusal:
        raise ExtractionError(refusal.kind, refusal.message) from None


def _normalise(text: str) -> str:
    return text.replace("\r\n", "\n").replace("\r", "\n").replace("\x00", "")
