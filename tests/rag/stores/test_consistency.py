"""The live-document set every store builds on: what a crash leaves is sorted out, and a
replacement waits for the searches that still read the old documents."""

from __future__ import annotations

import asyncio
import datetime

from handlers.rag.documents import DocumentRecord
from handlers.rag.stores.consistency import LiveDocuments, recover_live, with_document
from tests.rag.stores.corpus import T0


def record(document_id: str, filename: str, minutes: int, chunks: int = 2) -> DocumentRecord:
    return DocumentRecord(document_id, filename, chunks, T0 + datetime.timedelta(minutes=minutes))


async def yield_to_other_tasks() -> None:
    for _ in range(5):
        await asyncio.sleep(0)


def test_recovery_keeps_the_newest_complete_document_of_each_filename() -> None:
    records = [
        record("a-old", "a.txt", 1),
        record("a-new", "a.txt", 2),
        record("a-newest-incomplete", "a.txt", 3),
        record("b", "b.txt", 1, chunks=0),
        record("c-chunkless", "c.txt", 1),
    ]
    stored = {"a-old": 2, "a-new": 2, "a-newest-incomplete": 1, "orphan": 4}

    live = recover_live(records, stored)

    assert sorted(live) == ["a-new", "b"]


def test_a_document_replaces_every_document_of_its_filename() -> None:
    live = {"a": record("a", "notes.txt", 1), "b": record("b", "other.txt", 1)}

    after, replaced = with_document(live, record("c", "notes.txt", 2))

    assert replaced == ["a"]
    assert sorted(after) == ["b", "c"]
    assert sorted(live) == ["a", "b"]  # the old set is left as it was


async def test_publishing_waits_for_searches_that_read_the_old_set() -> None:
    live = LiveDocuments({"a": record("a", "notes.txt", 1)})
    reading = live.reading()
    seen = await reading.__aenter__()

    publishing = asyncio.create_task(live.publish({"b": record("b", "notes.txt", 2)}))
    await yield_to_other_tasks()

    assert sorted(seen) == ["a"]
    assert sorted(live.documents) == ["b"]  # new searches see the new set at once...
    async with live.reading() as later:
        assert sorted(later) == ["b"]
    assert not publishing.done()  # ...but the old rows stay until the old search is done
    await reading.__aexit__(None, None, None)
    await asyncio.wait_for(publishing, timeout=5)


async def test_publishing_with_no_search_in_progress_returns_at_once() -> None:
    live = LiveDocuments()
    async with live.reading():
        pass

    await asyncio.wait_for(live.publish({"a": record("a", "a.txt", 1)}), timeout=5)

    assert sorted(live.documents) == ["a"]
