"""Store upkeep (handlers/rag/stores/upkeep.py and the LanceDB store's rounds): the store stays
within 3 x its live chunk data, searches and writes racing it neither fail nor get lost, old
versions are kept for the retention and removed after it without another write, and the
upkeep stops cleanly."""

from __future__ import annotations

import asyncio
import functools
import logging
import threading
import time
from pathlib import Path
from typing import Any

import lancedb
import pytest

from handlers.rag.stores import lancedb_store
from handlers.rag.stores.lancedb_store import LanceDbStore
from handlers.rag.stores.upkeep import DiskUsage, UpkeepPolicy, disk_usage
from tests.rag.polling import wait_until
from tests.rag.stores.conftest import DIMENSION
from tests.rag.stores.corpus import TEXTS, a_document, synthetic_documents, unit_vectors

BOUND = 3.0  # bytes on disk per byte of live chunk data, once upkeep has run
UPKEEP_LOG = "handlers.rag.stores.lancedb_store"


def small_document(number: int, filename: str | None = None) -> Any:
    """A one-sentence upload."""
    return a_document(
        f"doc-{number}",
        filename or f"file-{number}.txt",
        DIMENSION,
        seed=number,
        texts=[TEXTS[number % len(TEXTS)]],
    )


async def chunk_table_rows(directory: Path) -> Any:
    """The chunks table's rows as Arrow, read through a connection of its own."""
    connection = await lancedb.connect_async(directory)
    table = await connection.open_table("chunks")
    return await table.query().to_arrow()


async def versions(directory: Path) -> list[int]:
    """The versions of the chunks table on disk."""
    connection = await lancedb.connect_async(directory)
    table = await connection.open_table("chunks")
    return [v["version"] for v in await table.list_versions()]  # type: ignore[no-untyped-call]


async def test_the_store_stays_within_three_times_its_live_data(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.INFO, logger=UPKEEP_LOG)
    directory = tmp_path / "lancedb"
    store = LanceDbStore(directory, DIMENSION, version_retention=0)
    await store.open()
    try:
        for number in range(2_000):
            await store.replace_document(*small_document(number))
        for number in range(0, 2_000, 4):
            assert await store.delete_document(f"doc-{number}")
        await store.wait_idle()
        used = disk_usage([directory])
    finally:
        await store.close()
    rows = await chunk_table_rows(directory)
    assert rows.num_rows == 1_500  # every row on disk is live
    assert used.bytes <= BOUND * rows.nbytes, f"{used} for {rows.nbytes} bytes of chunks"
    lines = [r.getMessage() for r in caplog.records if "lancedb upkeep writes=" in r.getMessage()]
    assert lines, "no upkeep line logged"
    rounds = [dict(field.split("=") for field in line.split()[2:]) for line in lines]
    assert int(rounds[-1]["bytes_after"]) <= int(rounds[-1]["bytes_before"])
    # old versions were removed, by some round (the last may be a follow-up that found none)
    assert sum(int(each["versions_removed"]) for each in rounds) > 0


async def test_searches_never_fail_while_upkeep_prunes_under_them(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    """Upkeep after every write, nothing kept: searches keep landing on versions whose files
    a round removes while they read them."""
    caplog.set_level(logging.INFO, logger=UPKEEP_LOG)
    store = LanceDbStore(
        tmp_path / "lancedb",
        DIMENSION,
        version_retention=0,
        maintenance_writes=1,
        maintenance_delay=0,
        upkeep_interval=0,
    )
    await store.open()

    def rounds() -> int:
        return sum("lancedb upkeep writes=" in r.getMessage() for r in caplog.records)

    for number in range(40):
        await store.replace_document(*small_document(number))
    searches = 0
    stop = asyncio.Event()

    async def search_forever(seed: int) -> None:
        nonlocal searches
        query = unit_vectors(1, DIMENSION, seed)[0]
        while not stop.is_set():
            hits = await store.search(TEXTS[seed % len(TEXTS)], query, 5)
            assert hits
            searches += 1
            await asyncio.sleep(0)

    async def write_and_delete() -> None:
        number = 40
        while rounds() < 12:
            # replacing a filename deletes rows too: those rounds hold the write lock
            await store.replace_document(*small_document(number, f"file-{number % 50}.txt"))
            await store.delete_document(f"doc-{number - 5}")
            number += 1
        stop.set()

    try:
        await asyncio.wait_for(
            asyncio.gather(write_and_delete(), *(search_forever(seed) for seed in range(3))),
            120,
        )
    finally:
        stop.set()
        await store.close()
    assert searches > 100


def upkeep_rounds_started(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """The names of the threads that measured the store's size, once per measurement: a
    round measures when it starts and when it ends."""
    threads: list[str] = []

    def recorded(paths: Any) -> DiskUsage:
        threads.append(threading.current_thread().name)
        return disk_usage(paths)

    monkeypatch.setattr(lancedb_store, "disk_usage", recorded)
    return threads


def measured_since(measured: list[str], count: int) -> bool:
    """Whether a round measured the store since ``count`` measurements: its optimize runs."""
    return len(measured) > count


async def test_writes_racing_upkeep_are_kept(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    """Appends and deletes issued while a round compacts a table large enough for that to
    take a while; every outcome holds in the store and on disk."""
    caplog.set_level(logging.INFO, logger=UPKEEP_LOG)
    measured = upkeep_rounds_started(monkeypatch)
    directory = tmp_path / "lancedb"
    store = LanceDbStore(
        directory,
        DIMENSION,
        version_retention=0,
        maintenance_delay=3600,
        index_threshold=100_000,  # exact search: the check below cannot miss
    )
    await store.open()
    expected: set[str] = set()
    try:
        for record, chunks, vectors in synthetic_documents(20_000, DIMENSION, 31):
            await store.replace_document(record, chunks, vectors)
            expected.add(record.document_id)
        await store.wait_idle()
        for number in range(12):
            record, chunks, vectors = small_document(number)
            await store.replace_document(record, chunks, vectors)  # a fragment to compact
            expected.add(record.document_id)
            started = len(measured)
            upkeep = asyncio.create_task(store.wait_idle())
            await wait_until(functools.partial(measured_since, measured, started))
            record, chunks, vectors = small_document(100 + number)
            victim = sorted(expected)[-1 - number]  # a synthetic document
            await asyncio.gather(
                store.replace_document(record, chunks, vectors), store.delete_document(victim)
            )
            expected.add(record.document_id)
            expected.discard(victim)
            await upkeep
            await store.wait_idle()  # the deletion's own round (holding the write lock)
        assert {r.document_id for r in await store.list_documents()} == expected
        hits = await store.search("nothing-matches", small_document(3)[2][0], 1)
        assert hits[0].chunk.document_id == "doc-3"
    finally:
        await store.close()
    reopened = LanceDbStore(directory, DIMENSION)
    await reopened.open()
    try:
        assert {r.document_id for r in await reopened.list_documents()} == expected
        rows = await chunk_table_rows(directory)
        assert set(rows.column("document_id").to_pylist()) == expected
        assert rows.num_rows == await reopened.count_chunks()
    finally:
        await reopened.close()
    # the race happened: deletes committed while compactions ran (about half of them here)
    assert any("pre-empted by a delete" in r.getMessage() for r in caplog.records)


async def test_old_versions_are_kept_for_the_retention_then_removed_without_a_write(
    tmp_path: Path,
) -> None:
    retention = 2.0
    directory = tmp_path / "lancedb"
    store = LanceDbStore(directory, DIMENSION, version_retention=retention, upkeep_interval=0)
    await store.open()
    try:
        for number in range(10):
            await store.replace_document(*small_document(number))
        last_write = time.monotonic()
        await store.wait_idle()
        kept = await versions(directory)
        assert len(kept) > 5, "versions younger than the retention were removed"
        before = disk_usage([directory])
        deadline = time.monotonic() + retention + 10
        while len(await versions(directory)) > 1:
            assert time.monotonic() < deadline, "old versions were not removed"
            await asyncio.sleep(0.05)
        assert time.monotonic() - last_write >= retention
        assert disk_usage([directory]).bytes < before.bytes
    finally:
        await store.close()
    # a long retention keeps them
    store = LanceDbStore(directory, DIMENSION, version_retention=3600, upkeep_interval=0)
    await store.open()
    try:
        for number in range(10, 15):
            await store.replace_document(*small_document(number))
        await store.wait_idle()
        assert len(await versions(directory)) > 5
    finally:
        await store.close()


async def test_upkeep_measures_off_the_event_loop_and_stops_cleanly(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    measured = upkeep_rounds_started(monkeypatch)
    directory = tmp_path / "lancedb"
    store = LanceDbStore(directory, DIMENSION, maintenance_delay=0)
    await store.open()
    for record, chunks, vectors in synthetic_documents(3_000, DIMENSION, 32):
        await store.replace_document(record, chunks, vectors)
    await wait_until(lambda: len(measured) % 2 == 1)  # a round is running
    await store.close()  # it finishes, then the task ends
    assert measured and all(name.startswith("lancedb-upkeep") for name in measured)
    assert len(measured) % 2 == 0, "the round was cut short"
    assert not [t for t in asyncio.all_tasks() if t.get_name().endswith("-upkeep")]
    reopened = LanceDbStore(directory, DIMENSION)
    await reopened.open()
    try:
        assert await reopened.count_chunks() == 3_000
    finally:
        await reopened.close()


def test_an_upkeep_policy_refuses_negative_numbers() -> None:
    with pytest.raises(ValueError, match="retention"):
        UpkeepPolicy(retention=-1)
    with pytest.raises(ValueError, match="writes"):
        UpkeepPolicy(writes=0)
