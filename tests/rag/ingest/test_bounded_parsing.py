"""Parsing hostile files: decompression and entity bombs, lying ZIP headers, parsers that run
away or crash. Each is refused (an ExtractionError, which the service answers with 422) and the
server's own memory stays flat, measured in a fresh Python process as the server would be."""

from __future__ import annotations

import functools
import io
import json
import os
import signal
import subprocess
import sys
import threading
import time
import zipfile
from collections.abc import Callable, Collection, Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest

from handlers.rag.ingest.base import ExtractedDocument, ExtractionError
from handlers.rag.ingest.bounded_zip import ZipLimits
from handlers.rag.ingest.extract import extract_document
from handlers.rag.ingest.formats import FormatLimits
from handlers.rag.ingest.parse_runner import ParseLimits, ParseRunner
from handlers.rag.ingest.xml_guard import UnsafeXml, XmlGuard
from tests.rag.ingest.files import (
    BILLION_LAUGHS,
    DOCUMENT_XML,
    deflate,
    deflate_padded,
    docx_members,
    make_docx,
    make_docx_bomb,
    make_docx_with_document_xml,
    make_docx_with_picture,
    make_pdf,
    make_pdf_stream_bomb,
    make_zip_with_members,
    write_zip,
)

ROOT = Path(__file__).resolve().parents[3]
GIB = 1024 * 1024 * 1024
MIB = 1024 * 1024
SLOW_HTML = b"<p>a</p>" * 400_000
"""3.2 MB of HTML that html.parser needs seconds for (about 8 s on a quiet core)."""

MEASURE = """
import json, resource, sys, threading
from pathlib import Path
from handlers.rag.ingest.base import ExtractionError
from handlers.rag.ingest.extract import extract_document

jobs = list(zip(sys.argv[1::2], sys.argv[2::2]))
results = {}

def run(path, name):
    try:
        document = extract_document(Path(path), name)
        results[name] = {"text": sum(len(page.text) for page in document.pages)}
    except ExtractionError as error:
        results[name] = {"kind": error.kind, "message": error.message}

before = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
threads = [threading.Thread(target=run, args=job) for job in jobs]
for thread in threads:
    thread.start()
for thread in threads:
    thread.join()
after = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
print(json.dumps({"growth_kib": after - before, "results": results}))
"""
"""Extracts files at once with the default runner, as the server does, and reports the growth
of its own peak RSS (children not included: their memory is theirs, and bounded)."""


def extract(
    tmp_path: Path, filename: str, data: bytes, runner: ParseRunner | None = None
) -> ExtractedDocument:
    path = tmp_path / "upload.bin"
    path.write_bytes(data)
    return extract_document(path, filename, runner)


def refusal(
    tmp_path: Path, filename: str, data: bytes, runner: ParseRunner | None = None
) -> ExtractionError:
    with pytest.raises(ExtractionError) as caught:
        extract(tmp_path, filename, data, runner)
    return caught.value


def parse_processes(besides: Collection[int] = ()) -> set[int]:
    """This process's children that are parse processes, but for those in ``besides`` (the
    default runner's spare, say)."""
    found = set()
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            status = (entry / "status").read_text()
            command = (entry / "cmdline").read_bytes()
        except OSError:
            continue  # it ended meanwhile
        parent = next(line.split()[1] for line in status.splitlines() if line.startswith("PPid:"))
        if int(parent) == os.getpid() and b"parse_child" in command:
            found.add(int(entry.name))
    return {pid for pid in found if pid not in besides}


def wait_for(condition: Callable[[], Any], seconds: float = 30.0) -> Any:
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        value = condition()
        if value:
            return value
        time.sleep(0.01)
    raise AssertionError(f"not true within {seconds} s")


class Background:
    """Runs ``call`` in a thread; :meth:`result` joins it and returns what it returned or raises
    what it raised."""

    def __init__(self, call: Callable[[], Any]) -> None:
        self._call = call
        self._outcome: dict[str, Any] = {}
        self._thread = threading.Thread(target=self._run)
        self._thread.start()

    def _run(self) -> None:
        try:
            self._outcome["value"] = self._call()
        except BaseException as error:
            self._outcome["error"] = error

    @property
    def running(self) -> bool:
        return self._thread.is_alive()

    def result(self) -> Any:
        self._thread.join(60)
        assert not self._thread.is_alive()
        if "error" in self._outcome:
            raise self._outcome["error"]
        return self._outcome["value"]


@pytest.fixture
def others() -> set[int]:
    """Parse processes that were there before the test (spares of other runners)."""
    return parse_processes()


@pytest.fixture
def cold_runner() -> Iterator[ParseRunner]:
    """A runner without a spare process, so that the only parse process is the test's."""
    runner = ParseRunner(warm=False)
    yield runner
    runner.close()


# --- bombs, with the server's memory measured -------------------------------------------------


@pytest.fixture(scope="module")
def measured(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    """Two .docx bombs (1.1 MB expanding to 1 GiB), a .docx whose header says 4 KiB for a
    member of 1 GiB, a .docx entity bomb and a PDF stream bomb, extracted all at once in a
    fresh process."""
    folder = tmp_path_factory.mktemp("bombs")
    bomb = make_docx_bomb(GIB)
    assert len(bomb) < 2 * MIB
    files = {
        "bomb-1.docx": bomb,
        "bomb-2.docx": bomb,
        "lying.docx": make_docx_bomb(GIB, declared_bytes=4096),
        "laughs.docx": make_docx_with_document_xml(BILLION_LAUGHS),
        "bomb.pdf": make_pdf_stream_bomb(GIB),
    }
    arguments = []
    for name, data in files.items():
        (folder / name).write_bytes(data)
        arguments += [str(folder / name), name]
    done = subprocess.run(
        [sys.executable, "-c", MEASURE, *arguments],
        cwd=ROOT,
        capture_output=True,
        timeout=300,
        check=True,
    )
    measurement: dict[str, Any] = json.loads(done.stdout)
    return measurement


@pytest.mark.parametrize("name", ["bomb-1.docx", "bomb-2.docx"])
def test_docx_bomb_is_refused(measured: dict[str, Any], name: str) -> None:
    assert measured["results"][name] == {
        "kind": "limit",
        "message": f"'{name}' has a member 'word/document.xml' of 1073743424 bytes, more than "
        "the limit of 128 MiB",
    }


def test_docx_member_whose_header_understates_its_size_is_refused(
    measured: dict[str, Any],
) -> None:
    assert measured["results"]["lying.docx"] == {
        "kind": "undecodable",
        "message": "'lying.docx' is not a readable .docx document: damaged ZIP archive (member "
        "'word/document.xml' declares 4096 bytes but expands to more)",
    }


def test_docx_entity_bomb_is_refused(measured: dict[str, Any]) -> None:
    assert measured["results"]["laughs.docx"] == {
        "kind": "undecodable",
        "message": "'laughs.docx' is not a readable .docx document: member 'word/document.xml' "
        "declares a document type ('lolz'), which can expand entities",
    }


def test_pdf_stream_bomb_is_refused(measured: dict[str, Any]) -> None:
    # pypdf stops decompressing at its own limit; nothing readable is left.
    assert measured["results"]["bomb.pdf"]["kind"] in {"empty", "undecodable", "limit"}


def test_server_memory_grows_by_less_than_100_mb_refusing_them_all(
    measured: dict[str, Any],
) -> None:
    assert measured["growth_kib"] < 100 * 1024


async def refused_upload(client: httpx.AsyncClient, name: str, data: bytes) -> str:
    """The message of the 422 that uploading ``data`` gets; nothing is stored."""
    response = await client.post("/uploadDocument", files={"file": (name, data)})
    assert response.status_code == 422, response.text
    [item] = response.json()["detail"]
    assert (item["loc"], item["type"]) == (["body", "file"], "value_error")
    assert (await client.get("/documents")).json() == []
    message: str = item["msg"]
    return message


async def test_upload_of_a_docx_bomb_is_422(client: httpx.AsyncClient) -> None:
    bomb = make_docx_bomb(512 * MIB)  # within the test stack's upload limit of 1 MB
    size = zipfile.ZipFile(io.BytesIO(bomb)).getinfo(DOCUMENT_XML).file_size
    assert await refused_upload(client, "bomb.docx", bomb) == (
        f"Value error, 'bomb.docx' has a member 'word/document.xml' of {size} bytes, more than "
        "the limit of 128 MiB"
    )


async def test_upload_of_an_entity_bomb_is_422(client: httpx.AsyncClient) -> None:
    data = make_docx_with_document_xml(BILLION_LAUGHS)
    assert await refused_upload(client, "laughs.docx", data) == (
        "Value error, 'laughs.docx' is not a readable .docx document: member "
        "'word/document.xml' declares a document type ('lolz'), which can expand entities"
    )


# --- ZIP limits -------------------------------------------------------------------------------


def test_member_whose_header_overstates_its_size_is_refused_before_decompressing(
    tmp_path: Path,
) -> None:
    members = docx_members(make_docx(["Small."]))
    data = write_zip(members, declared_sizes={DOCUMENT_XML: 0xFFFFFFFF})
    error = refusal(tmp_path, "huge.docx", data)
    assert (error.kind, error.message) == (
        "limit",
        "'huge.docx' has a member 'word/document.xml' of 4294967295 bytes, more than the limit "
        "of 128 MiB",
    )


def test_expanded_size_of_all_members_together_is_bounded(tmp_path: Path) -> None:
    members = docx_members(make_docx(["Padded."]))
    members["word/media/padding.bin"] = deflate_padded(b"", 6 * MIB, b"")
    members["word/media/more.bin"] = deflate_padded(b"", 6 * MIB, b"")
    limits = ParseLimits(formats=FormatLimits(zip=ZipLimits(max_total_bytes=10 * MIB)))
    runner = ParseRunner(limits=limits, warm=False)
    error = refusal(tmp_path, "padded.docx", write_zip(members), runner)
    assert error.kind == "limit"
    assert error.message.startswith("'padded.docx' expands to 1")
    assert error.message.endswith(" bytes, more than the limit of 10 MiB")


def test_archive_with_too_many_members_is_refused(tmp_path: Path) -> None:
    error = refusal(tmp_path, "many.docx", make_zip_with_members(10_001))
    assert (error.kind, error.message) == (
        "limit",
        "'many.docx' has 10001 members, more than the limit of 10000",
    )


def test_central_directory_larger_than_its_limit_is_refused(tmp_path: Path) -> None:
    limits = ParseLimits(formats=FormatLimits(zip=ZipLimits(max_directory_bytes=1024)))
    runner = ParseRunner(limits=limits, warm=False)
    error = refusal(tmp_path, "long.docx", make_zip_with_members(100), runner)
    assert error.kind == "limit"
    assert error.message.startswith("'long.docx' has a central directory of ")
    assert error.message.endswith(" bytes, more than the limit of 1024 bytes")


def test_docx_with_a_picture_still_extracts(tmp_path: Path) -> None:
    document = extract(tmp_path, "pictured.docx", make_docx_with_picture("Above.", "Below."))
    assert [page.text for page in document.pages] == ["Above.\n\nBelow."]


def test_docx_padded_within_the_limits_still_extracts(tmp_path: Path) -> None:
    document = extract(tmp_path, "padded.docx", make_docx_bomb(4 * MIB))
    assert [page.text for page in document.pages] == ["Before the padding."]


# --- XML entities -----------------------------------------------------------------------------

DOCTYPE = b'<?xml version="1.0"?><!DOCTYPE r [<!ENTITY e "x">]><r>&e;</r>'


@pytest.mark.parametrize(
    "member", ["[Content_Types].xml", "_rels/.rels", "word/_rels/document.xml.rels", "word/x.dat"]
)
def test_a_dtd_in_any_member_is_refused(tmp_path: Path, member: str) -> None:
    members = docx_members(make_docx(["Text."]))
    members[member] = deflate(DOCTYPE)
    error = refusal(tmp_path, "dtd.docx", write_zip(members))
    assert (error.kind, error.message) == (
        "undecodable",
        f"'dtd.docx' is not a readable .docx document: member '{member}' declares a document "
        "type ('r'), which can expand entities",
    )


@pytest.mark.parametrize(
    "xml",
    [
        DOCTYPE,
        b"\n\n   " + DOCTYPE[len(b'<?xml version="1.0"?>') :],  # whitespace before the DOCTYPE
        b"\xef\xbb\xbf" + DOCTYPE,
        DOCTYPE.decode().replace('"1.0"?', '"1.0" encoding="UTF-16"?').encode("utf-16"),
    ],
    ids=["plain", "after-whitespace", "after-bom", "utf-16"],
)
def test_xml_guard_refuses_a_doctype_however_it_is_written(xml: bytes) -> None:
    guard = XmlGuard()
    with pytest.raises(UnsafeXml, match="declares a document type"):
        for start in range(0, len(xml), 7):  # in pieces, as decompressed
            guard.feed(xml[start : start + 7])
        guard.close()


def test_xml_guard_refuses_an_encoding_it_cannot_check() -> None:
    guard = XmlGuard()
    with pytest.raises(UnsafeXml, match="unsupported encoding"):
        guard.feed(b'<?xml version="1.0" encoding="EBCDIC-US"?><r/>')
        guard.close()


@pytest.mark.parametrize("data", [b"\x89PNG\r\n\x1a\n" + bytes(64), b"", b"  plain text"])
def test_xml_guard_lets_what_is_not_xml_pass(data: bytes) -> None:
    guard = XmlGuard()
    guard.feed(data)
    guard.close()
    assert not guard.is_xml


def test_html_entity_bomb_is_not_expanded(tmp_path: Path) -> None:
    page = BILLION_LAUGHS.replace(b"<w:t>", b"<p>").replace(b"</w:t>", b"</p>")
    document = extract(tmp_path, "laughs.html", page)
    assert "&lol9;" in document.pages[0].text
    assert len(document.pages[0].text) < 100


# --- processes: time, memory, crashes, concurrency --------------------------------------------


def test_parse_over_the_time_limit_is_killed_and_refused(tmp_path: Path, others: set[int]) -> None:
    runner = ParseRunner(limits=ParseLimits(seconds=1.5), warm=False)
    started = time.monotonic()
    error = refusal(tmp_path, "slow.html", SLOW_HTML, runner)
    assert (error.kind, error.message) == ("limit", "'slow.html' takes longer than 1.5 s to parse")
    assert time.monotonic() - started < 10
    assert parse_processes(others) == set()


def test_parse_over_the_cpu_limit_is_refused(tmp_path: Path) -> None:
    runner = ParseRunner(limits=ParseLimits(seconds=60, cpu_seconds=1), warm=False)
    error = refusal(tmp_path, "slow.html", SLOW_HTML, runner)
    assert (error.kind, error.message) == (
        "limit",
        "'slow.html' takes more than 1 s of CPU to parse",
    )


def test_parse_over_the_memory_limit_is_refused(tmp_path: Path) -> None:
    runner = ParseRunner(limits=ParseLimits(memory_bytes=128 * MIB), warm=False)
    error = refusal(tmp_path, "long.pdf", make_pdf(["a" * 30_000_000]), runner)
    assert (error.kind, error.message) == (
        "limit",
        "'long.pdf' needs more than 128 MiB of memory to parse",
    )


def test_crashed_parser_is_a_refusal(
    tmp_path: Path, cold_runner: ParseRunner, others: set[int]
) -> None:
    path = tmp_path / "slow.html"
    path.write_bytes(SLOW_HTML)
    parsing = Background(lambda: extract_document(path, "slow.html", cold_runner))
    (child,) = wait_for(lambda: parse_processes(others))
    os.kill(child, signal.SIGSEGV)
    with pytest.raises(ExtractionError) as caught:
        parsing.result()
    assert (caught.value.kind, caught.value.message) == (
        "undecodable",
        "'slow.html' could not be parsed (the parser crashed: SIGSEGV)",
    )
    assert parse_processes(others) == set()


def test_text_beyond_its_limit_is_refused(tmp_path: Path) -> None:
    runner = ParseRunner(limits=ParseLimits(formats=FormatLimits(max_text_chars=100)), warm=False)
    error = refusal(tmp_path, "long.html", b"<p>" + b"word " * 100 + b"</p>", runner)
    assert (error.kind, error.message) == (
        "limit",
        "'long.html' holds more than 100 characters of text",
    )


def test_no_more_parse_processes_run_than_allowed(tmp_path: Path, others: set[int]) -> None:
    runner = ParseRunner(max_concurrent=1, warm=False)
    paths = []
    for number in range(3):
        paths.append(tmp_path / f"page-{number}.html")
        paths[-1].write_bytes(b"<p>a</p>" * 50_000)
    parses = [
        Background(functools.partial(extract_document, path, path.name, runner)) for path in paths
    ]
    most = 0
    while any(parse.running for parse in parses):
        most = max(most, len(parse_processes(others)))
        time.sleep(0.005)
    texts = [parse.result().pages[0].text for parse in parses]
    assert texts == ["\n\n".join(["a"] * 50_000)] * 3
    assert most == 1


def test_warm_runner_keeps_one_process_ready_and_ends_it_on_close(
    tmp_path: Path, others: set[int]
) -> None:
    runner = ParseRunner()
    page = b"<h1>Title</h1><p>Body</p>"
    for _ in range(3):
        assert [p.text for p in extract(tmp_path, "page.html", page, runner).pages] == [
            "Title\n\nBody"
        ]
        assert len(parse_processes(others)) == 1  # the spare, loading for the next file
    runner.close()
    assert parse_processes(others) == set()
