"""Text extraction from real files of every supported format, and every kind of refusal."""

from __future__ import annotations

import io
import json
import zipfile
from pathlib import Path

import pytest

from handlers.rag.ingest.base import ExtractedDocument, ExtractionError, PageText
from handlers.rag.ingest.extract import SUPPORTED_EXTENSIONS, extract_document
from tests.rag.ingest.files import encrypt_pdf, make_docx, make_pdf


def extract(tmp_path: Path, filename: str, data: bytes) -> ExtractedDocument:
    path = tmp_path / "upload.bin"  # the stored name does not matter, the given one does
    path.write_bytes(data)
    return extract_document(path, filename)


def refusal(tmp_path: Path, filename: str, data: bytes) -> ExtractionError:
    with pytest.raises(ExtractionError) as caught:
        extract(tmp_path, filename, data)
    return caught.value


def only_text(document: ExtractedDocument) -> str:
    assert [page.page for page in document.pages] == [None]
    return document.pages[0].text


# --- text formats -----------------------------------------------------------------------------


def test_utf8_text_is_kept_with_line_endings_normalised(tmp_path: Path) -> None:
    document = extract(tmp_path, "notes.txt", "Grüße\r\naus Köln\rund\x00 mehr\n".encode())
    assert document.filename == "notes.txt"
    assert only_text(document) == "Grüße\naus Köln\nund mehr\n"


def test_utf8_byte_order_mark_is_dropped(tmp_path: Path) -> None:
    document = extract(tmp_path, "bom.txt", b"\xef\xbb\xbfhello")
    assert only_text(document) == "hello"


@pytest.mark.parametrize("encoding", ["utf-16", "utf-16-be", "utf-32"])
def test_utf16_and_utf32_with_byte_order_mark_are_decoded(tmp_path: Path, encoding: str) -> None:
    text = "naïve café\r\nsecond line"
    data = text.encode(encoding)
    if encoding == "utf-16-be":
        data = b"\xfe\xff" + data
    assert only_text(extract(tmp_path, "wide.txt", data)) == "naïve café\nsecond line"


@pytest.mark.parametrize("filename", ["readme.md", "GUIDE.MARKDOWN", "Notes.Md"])
def test_markdown_is_text_whatever_the_case_of_its_extension(tmp_path: Path, filename: str) -> None:
    markdown = "# Title\n\nSome *emphasis* and a [link](http://example.com).\n"
    assert only_text(extract(tmp_path, filename, markdown.encode())) == markdown


def test_csv_is_kept_as_text(tmp_path: Path) -> None:
    csv = "city,population\r\nLyon,522250\r\nNantes,320732\r\n"
    assert only_text(extract(tmp_path, "cities.csv", csv.encode())) == (
        "city,population\nLyon,522250\nNantes,320732\n"
    )


def test_json_is_kept_as_text_without_reformatting(tmp_path: Path) -> None:
    raw = '{"b":1,  "a": [1,2],\n "text": "caf\\u00e9"}'
    text = only_text(extract(tmp_path, "data.json", raw.encode()))
    assert text == raw
    assert json.loads(text)["text"] == "café"


# --- HTML -------------------------------------------------------------------------------------

PAGE = b"""<!DOCTYPE html>
<html><head><title>Page title</title><style>p { color: red; }</style>
<script>var hidden = "never seen";</script></head>
<body>
  <h1>Fish &amp; Chips</h1>
  <p>First    paragraph
     spans lines.<br>After a break &lt;tag&gt; &copy; &#8364;5</p>
  <script type="text/javascript">document.write("no")</script>
  <div>Block <b>with</b> <i>inline</i> parts</div>
  <ul><li>one</li><li>two</ul>
  <pre>line  one
line two</pre>
  <table><tr><th>Name</th><th>Age</th></tr><tr><td>Ann</td><td>31</td></tr></table>
  <noscript>Enable JavaScript</noscript>
</body></html>"""


def test_html_gives_visible_text_with_blocks_as_line_breaks(tmp_path: Path) -> None:
    text = only_text(extract(tmp_path, "page.HTML", PAGE))
    assert text == (
        "Fish & Chips\n\n"
        "First paragraph spans lines.\n"
        "After a break <tag> © €5\n\n"
        "Block with inline parts\n\n"
        "one\ntwo\n\n"
        "line one\nline two\n\n"
        "Name | Age\nAnn | 31"
    )


def test_html_in_a_declared_legacy_charset_is_decoded(tmp_path: Path) -> None:
    page = '<html><head><meta charset="windows-1252"></head><body><p>Café</p></body></html>'
    assert only_text(extract(tmp_path, "old.htm", page.encode("cp1252"))) == "Café"


def test_html_with_only_scripts_contains_no_text(tmp_path: Path) -> None:
    error = refusal(tmp_path, "app.html", b"<html><script>run()</script><style>a{}</style></html>")
    assert error.kind == "empty"
    assert error.message == "'app.html' contains no text"


# --- PDF --------------------------------------------------------------------------------------


def test_pdf_gives_one_text_per_page_with_page_numbers(tmp_path: Path) -> None:
    pdf = make_pdf(["First page (intro)\nsecond line", "", "Third page text"])
    document = extract(tmp_path, "report.pdf", pdf)
    assert [page.page for page in document.pages] == [1, 3]  # the blank page 2 is skipped
    assert document.pages[0].text.split() == ["First", "page", "(intro)", "second", "line"]
    assert document.pages[1].text.strip() == "Third page text"


def test_pdf_encrypted_with_an_empty_user_password_is_read(tmp_path: Path) -> None:
    pdf = encrypt_pdf(make_pdf(["Readable without a password"]), user_password="")
    document = extract(tmp_path, "open.pdf", pdf)
    assert document.pages == [PageText(1, "Readable without a password\n")]


def test_pdf_with_a_user_password_is_refused(tmp_path: Path) -> None:
    pdf = encrypt_pdf(make_pdf(["Secret"]), user_password="s3cret")
    error = refusal(tmp_path, "locked.pdf", pdf)
    assert error.kind == "undecodable"
    assert error.message == "'locked.pdf' is password-protected; upload an unencrypted copy"


def test_truncated_pdf_is_refused_naming_the_problem(tmp_path: Path) -> None:
    error = refusal(tmp_path, "broken.pdf", make_pdf(["Some text"])[:150])
    assert error.kind == "undecodable"
    assert error.message.startswith("'broken.pdf' is not a readable PDF: ")
    assert len(error.message) > len("'broken.pdf' is not a readable PDF: ")


def test_file_without_pdf_header_is_refused(tmp_path: Path) -> None:
    error = refusal(tmp_path, "fake.pdf", b"just some text pretending")
    assert (error.kind, error.message) == (
        "undecodable",
        "'fake.pdf' is not a PDF file (no %PDF- header)",
    )


def test_pdf_without_any_text_is_empty(tmp_path: Path) -> None:
    error = refusal(tmp_path, "scan.pdf", make_pdf(["", ""]))
    assert error.kind == "empty"
    assert error.message == "'scan.pdf' contains no text (a scanned PDF without a text layer?)"


# --- DOCX -------------------------------------------------------------------------------------


def test_docx_gives_paragraphs_and_table_cells_in_document_order(tmp_path: Path) -> None:
    data = make_docx(
        [
            "Introduction paragraph.",
            [["Product", "Price"], ["Tea", "3.50"], ["Coffee", "4.20"]],
            "",
            "Closing paragraph.",
        ]
    )
    assert only_text(extract(tmp_path, "Prices.DOCX", data)) == (
        "Introduction paragraph.\n\n"
        "Product | Price\nTea | 3.50\nCoffee | 4.20\n\n"
        "Closing paragraph."
    )


def test_file_that_is_not_a_zip_is_not_a_docx(tmp_path: Path) -> None:
    error = refusal(tmp_path, "letter.docx", b"plain bytes, not a zip archive")
    assert (error.kind, error.message) == (
        "undecodable",
        "'letter.docx' is not a valid .docx document (not a ZIP archive)",
    )


def test_zip_without_word_content_is_refused(tmp_path: Path) -> None:
    archive = io.BytesIO()
    with zipfile.ZipFile(archive, "w") as zipped:
        zipped.writestr("notes.txt", "not a Word document")
    error = refusal(tmp_path, "letter.docx", archive.getvalue())
    assert error.kind == "undecodable"
    assert error.message.startswith("'letter.docx' is not a ")


def test_damaged_docx_is_refused(tmp_path: Path) -> None:
    data = bytearray(make_docx(["Some text"]))
    data[len(data) // 2 : len(data) // 2 + 200] = bytes(200)
    error = refusal(tmp_path, "damaged.docx", bytes(data))
    assert error.kind == "undecodable"
    assert error.message.startswith("'damaged.docx' is not a ")


# --- refusals common to all formats -----------------------------------------------------------


@pytest.mark.parametrize("filename", ["empty.txt", "empty.pdf", "empty.docx", "empty.html"])
def test_zero_bytes_contain_no_text(tmp_path: Path, filename: str) -> None:
    error = refusal(tmp_path, filename, b"")
    assert (error.kind, error.message) == (
        "empty",
        f"'{filename}' contains no text (the file is empty)",
    )


def test_whitespace_only_contains_no_text(tmp_path: Path) -> None:
    error = refusal(tmp_path, "blank.md", b" \r\n\t \n\x00")
    assert (error.kind, error.message) == ("empty", "'blank.md' contains no text")


def test_invalid_utf8_is_undecodable(tmp_path: Path) -> None:
    error = refusal(tmp_path, "latin.txt", "café".encode("latin-1"))
    assert error.kind == "undecodable"
    assert error.message == (
        "'latin.txt' is not valid UTF-8 text (invalid byte at offset 3); "
        "save it as UTF-8 and upload it again"
    )


def test_unknown_extension_is_unsupported(tmp_path: Path) -> None:
    error = refusal(tmp_path, "image.XYZ", b"data")
    assert (error.kind, error.message) == (
        "unsupported",
        "Unsupported file type '.xyz'; supported: "
        ".csv, .docx, .htm, .html, .json, .markdown, .md, .pdf, .txt",
    )


def test_name_without_extension_is_unsupported(tmp_path: Path) -> None:
    error = refusal(tmp_path, "Makefile", b"all:")
    assert error.kind == "unsupported"
    assert error.message.startswith("Unsupported file 'Makefile' (no extension); supported: .csv")


def test_supported_extensions_are_listed_sorted() -> None:
    assert tuple(sorted(SUPPORTED_EXTENSIONS)) == SUPPORTED_EXTENSIONS
    assert {".pdf", ".docx", ".txt", ".md", ".html"} <= set(SUPPORTED_EXTENSIONS)
