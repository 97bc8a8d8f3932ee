"""A ZIP archive checked against limits before any library opens it (Office documents are ZIPs).

A ZIP's headers say how large each member is, but they are written by whoever made the file:
a 1 MB archive can expand to gigabytes, or declare a few bytes for a member that expands to a
gigabyte. So every member is decompressed here, as a stream (one buffer at a time, never the
whole member), counting the bytes that really come out and stopping at the first that passes a
limit; the declared sizes are checked too, and must match what came out. XML members are fed
to the :class:`~handlers.rag.ingest.xml_guard.XmlGuard` on the way, so a member that declares
entities is refused before an XML parser sees it.

Once an archive passes, a library may read it with :mod:`zipfile`: every member expands to
exactly its declared size, within the limits. (zipfile alone is not enough: it decompresses a
whole member in one call before comparing it with the declared size, so a member declared as
4 KiB that expands to 1 GiB costs a gigabyte before the CRC error.)
"""

from __future__ import annotations

import io
import struct
import zipfile
import zlib
from collections.abc import Iterator
from dataclasses import dataclass

from handlers.rag.ingest.xml_guard import UnsafeXml, XmlGuard

__all__ = ["ZipLimitExceeded", "ZipLimits", "ZipRefused", "check_archive"]

_MIB = 1024 * 1024
_CHUNK = 64 * 1024
_END_RECORD = struct.Struct("<4s4H2LH")  # end of central directory
_END_RECORD_SIGNATURE = b"PK\x05\x06"
_ZIP64_LOCATOR = struct.Struct("<4sLQL")
_ZIP64_LOCATOR_SIGNATURE = b"PK\x06\x07"
_ZIP64_END_RECORD = struct.Struct("<4sQ2H2L4Q")
_ZIP64_END_RECORD_SIGNATURE = b"PK\x06\x06"
_LOCAL_HEADER = struct.Struct("<4s5H3L2H")
_LOCAL_HEADER_SIGNATURE = b"PK\x03\x04"
_MAX_COMMENT = 0xFFFF


@dataclass(frozen=True, slots=True)
class ZipLimits:
    """What an archive may hold; sizes are decompressed bytes."""

    max_members: int = 10_000
    """Members (files) in the archive; a Word document has a few dozen."""
    max_member_bytes: int = 128 * _MIB
    """One member, decompressed."""
    max_total_bytes: int = 256 * _MIB
    """All members together, decompressed."""
    max_directory_bytes: int = 4 * _MIB
    """The central directory (names and headers of all members), read before any member."""


class ZipRefused(ValueError):
    """The archive is refused: damaged, or holding XML that declares entities. The message says
    why in a few words ("damaged ZIP archive (bad CRC-32 for member 'a.xml')")."""


class ZipLimitExceeded(ZipRefused):
    """The archive passes a limit; the message completes a sentence whose subject is the file
    ("has 20000 members, more than the limit of 10000")."""


@dataclass(frozen=True, slots=True)
class _Directory:
    entries: int
    size: int


def check_archive(data: bytes, limits: ZipLimits) -> None:
    """Raises ZipRefused unless the ZIP archive ``data`` is within ``limits``: member count and
    central directory from its end record, then every member's declared size, then every
    member decompressed (counted, CRC-checked, XML members checked for DTDs and entities)."""
    directory = _directory(data)
    if directory.entries > limits.max_members:
        raise ZipLimitExceeded(_too_many(directory.entries, limits))
    if directory.size > limits.max_directory_bytes:
        raise ZipLimitExceeded(
            f"has a central directory of {directory.size} bytes, more than the limit of "
            f"{_size(limits.max_directory_bytes)}"
        )
    try:
        members = zipfile.ZipFile(io.BytesIO(data)).infolist()
    except (zipfile.BadZipFile, ValueError, EOFError, NotImplementedError, struct.error) as error:
        raise ZipRefused(_damaged(str(error))) from None
    if len(members) > limits.max_members:  # the end record's count may understate them
        raise ZipLimitExceeded(_too_many(len(members), limits))
    declared_total = 0
    for member in members:
        if member.file_size > limits.max_member_bytes:
            raise ZipLimitExceeded(
                f"has a member '{member.filename}' of {member.file_size} bytes, more than the "
                f"limit of {_size(limits.max_member_bytes)}"
            )
        declared_total += member.file_size
    if declared_total > limits.max_total_bytes:
        raise ZipLimitExceeded(
            f"expands to {declared_total} bytes, more than the limit of "
            f"{_size(limits.max_total_bytes)}"
        )
    budget = limits.max_total_bytes
    for member in members:
        budget -= _check_member(data, member, min(limits.max_member_bytes, budget), limits)


def _directory(data: bytes) -> _Directory:
    """Member count and central directory size from the end record, found as zipfile finds it
    (the last 22 bytes, else the last signature within a comment's reach of the end)."""
    start = len(data) - _END_RECORD.size
    if start < 0:
        raise ZipRefused("not a ZIP archive")
    if not (data[start : start + 4] == _END_RECORD_SIGNATURE and data[-2:] == b"\0\0"):
        start = data.rfind(_END_RECORD_SIGNATURE, max(0, start - _MAX_COMMENT))
        if start < 0 or start + _END_RECORD.size > len(data):
            raise ZipRefused("not a ZIP archive")
    fields = _END_RECORD.unpack_from(data, start)
    entries, size = fields[4], fields[5]
    if entries != 0xFFFF and size != 0xFFFFFFFF:
        return _Directory(entries, size)
    # ZIP64: the real counts are in a record that a locator just before this one points to.
    locator = start - _ZIP64_LOCATOR.size
    if locator < 0 or data[locator : locator + 4] != _ZIP64_LOCATOR_SIGNATURE:
        raise ZipRefused(_damaged("no ZIP64 end record locator"))
    record = _ZIP64_LOCATOR.unpack_from(data, locator)[2]
    if record + _ZIP64_END_RECORD.size > len(data) or (
        data[record : record + 4] != _ZIP64_END_RECORD_SIGNATURE
    ):
        raise ZipRefused(_damaged("no ZIP64 end record"))
    fields64 = _ZIP64_END_RECORD.unpack_from(data, record)
    return _Directory(fields64[7], fields64[8])


def _check_member(data: bytes, member: zipfile.ZipInfo, limit: int, limits: ZipLimits) -> int:
    """Decompresses ``member`` (at most ``limit`` bytes, else refused); returns its size."""
    name = member.filename
    if member.flag_bits & 0x1:
        raise ZipRefused(f"member '{name}' is encrypted")
    raw = _compressed_bytes(data, member)
    if member.compress_type == zipfile.ZIP_STORED:
        pieces: Iterator[bytes] = (bytes(raw[i : i + _CHUNK]) for i in range(0, len(raw), _CHUNK))
    elif member.compress_type == zipfile.ZIP_DEFLATED:
        pieces = _inflate(raw, name)
    else:
        raise ZipRefused(
            f"has a member '{name}' compressed with method {member.compress_type}; "
            "only stored and deflated members are read"
        )
    guard = XmlGuard()
    size = 0
    crc = 0
    try:
        for piece in pieces:
            size += len(piece)
            if size > limit:
                raise ZipLimitExceeded(_too_large(name, limit, limits))
            if size > member.file_size:
                raise ZipRefused(
                    _damaged(
                        f"member '{name}' declares {member.file_size} bytes but expands to more"
                    )
                )
            crc = zlib.crc32(piece, crc)
            guard.feed(piece)
        guard.close()
    except UnsafeXml as error:
        raise ZipRefused(f"member '{name}' {error}") from None
    if size != member.file_size:
        raise ZipRefused(
            _damaged(f"member '{name}' declares {member.file_size} bytes but expands to {size}")
        )
    if crc != member.CRC:
        raise ZipRefused(_damaged(f"bad CRC-32 for member '{name}'"))
    return size


def _too_large(name: str, limit: int, limits: ZipLimits) -> str:
    if limit < limits.max_member_bytes:
        return f"expands to more than the limit of {_size(limits.max_total_bytes)}"
    return f"has a member '{name}' that expands to more than the limit of {_size(limit)}"


def _too_many(members: int, limits: ZipLimits) -> str:
    return f"has {members} members, more than the limit of {limits.max_members}"


def _damaged(what: str) -> str:
    return f"damaged ZIP archive ({what})"


def _size(limit: int) -> str:
    """``limit`` bytes in words: "128 MiB" for whole mebibytes, else "1000 bytes"."""
    return f"{limit // _MIB} MiB" if limit and limit % _MIB == 0 else f"{limit} bytes"


def _compressed_bytes(data: bytes, member: zipfile.ZipInfo) -> memoryview:
    """The member's compressed bytes: after its local header (whose name and extra field may
    differ in length from the central directory's), as many as the directory says."""
    start = member.header_offset
    if start + _LOCAL_HEADER.size > len(data):
        raise ZipRefused(_damaged(f"member '{member.filename}' is missing"))
    header = _LOCAL_HEADER.unpack_from(data, start)
    if header[0] != _LOCAL_HEADER_SIGNATURE:
        raise ZipRefused(_damaged(f"bad header of member '{member.filename}'"))
    begin = start + _LOCAL_HEADER.size + header[9] + header[10]
    end = begin + member.compress_size
    if end > len(data):
        raise ZipRefused(_damaged(f"member '{member.filename}' is truncated"))
    return memoryview(data)[begin:end]


def _inflate(view: memoryview, name: str) -> Iterator[bytes]:
    """Decompressed pieces of a raw deflate stream, each at most one buffer long."""
    decompressor = zlib.decompressobj(-zlib.MAX_WBITS)
    position = 0
    pending: bytes = b""
    try:
        while not decompressor.eof:
            if not pending and position < len(view):
                pending = bytes(view[position : position + _CHUNK])
                position += len(pending)
            piece = decompressor.decompress(pending, _CHUNK)
            pending = decompressor.unconsumed_tail
            if piece:
                yield piece
            elif not pending and position >= len(view):
                raise ZipRefused(_damaged(f"member '{name}' is truncated"))
    except zlib.error as error:
        raise ZipRefused(_damaged(f"member '{name}': {error}")) from None
