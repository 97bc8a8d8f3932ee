"""The blob store: content addressed, deduplicated, written atomically."""

from __future__ import annotations

import hashlib
import os
from pathlib import Path

import pytest

from handlers.agents.storage.blobs import BlobNotFound, BlobStore


def _files(root: Path) -> list[Path]:
    return sorted(path for path in root.rglob("*") if path.is_file())


def test_a_blob_is_stored_under_its_sha256(tmp_path: Path) -> None:
    store = BlobStore(tmp_path / "blobs")
    digest = store.put(b"hello")

    assert digest == hashlib.sha256(b"hello").hexdigest()
    assert _files(tmp_path / "blobs") == [tmp_path / "blobs" / digest[:2] / digest[2:]]
    assert store.get(digest) == b"hello"
    assert store.exists(digest)


def test_the_same_content_is_stored_once(tmp_path: Path) -> None:
    store = BlobStore(tmp_path)
    first = store.put(b"same")
    before = store.path_of(first).stat()

    assert store.put(b"same") == first
    after = store.path_of(first).stat()
    assert (after.st_ino, after.st_mtime_ns) == (before.st_ino, before.st_mtime_ns)
    assert len(_files(tmp_path)) == 1
    store.put(b"different")
    assert len(_files(tmp_path)) == 2


def test_a_failed_write_leaves_neither_a_blob_nor_a_temporary_file(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    store = BlobStore(tmp_path)

    def failing_fsync(fd: int) -> None:
        raise OSError(28, "No space left on device")

    monkeypatch.setattr(os, "fsync", failing_fsync)  # the disk fills up mid-write
    with pytest.raises(OSError, match="No space"):
        store.put(b"content")
    monkeypatch.undo()

    assert _files(tmp_path) == []
    digest = store.put(b"content")  # a later attempt succeeds
    assert store.get(digest) == b"content"


def test_an_unknown_blob_is_not_found(tmp_path: Path) -> None:
    with pytest.raises(BlobNotFound):
        BlobStore(tmp_path).get("0" * 64)


@pytest.mark.parametrize("digest", ["../../etc/passwd", "ABC", "0" * 63, "g" * 64])
def test_only_hex_digests_name_blobs(tmp_path: Path, digest: str) -> None:
    with pytest.raises(ValueError, match="SHA-256"):
        BlobStore(tmp_path).path_of(digest)
