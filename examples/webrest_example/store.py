"""An in-memory user store and a directory of avatars; safe to share between threads."""

from __future__ import annotations

import hashlib
import os
import struct
import tempfile
import threading
import zlib
from collections.abc import Iterator, Sequence
from pathlib import Path

from examples.webrest_example.models import AvatarInfo, NewUser, Role, User, UserChanges

__all__ = ["AvatarStorage", "Conflict", "UserStore", "placeholder_png"]


class Conflict(Exception):
    """Another user has this handle already."""


class UserStore:
    """Users by id, with unique handles."""

    def __init__(self, users: Sequence[User] = ()) -> None:
        self._lock = threading.Lock()
        self._users: dict[int, User] = {user.id: user for user in users}
        self._next = max(self._users, default=0) + 1

    def __len__(self) -> int:
        return len(self._users)

    def list(
        self, roles: Sequence[Role] = (), ids: Sequence[int] = (), start: int = 0, limit: int = 20
    ) -> list[User]:
        """Users ordered by id, those with one of ``roles`` and ``ids`` when given."""
        with self._lock:
            users = sorted(self._users.values(), key=lambda user: user.id)
        selected = [user for user in users if _selected(user, roles, ids)]
        return selected[start : start + limit]

    def count(self, roles: Sequence[Role] = (), ids: Sequence[int] = ()) -> int:
        """How many users :meth:`list` selects, on all pages."""
        with self._lock:
            users = list(self._users.values())
        return sum(1 for user in users if _selected(user, roles, ids))

    def find(self, id: int) -> User | None:
        return self._users.get(id)

    def by_handle(self, handle: str) -> User | None:
        with self._lock:
            return next((user for user in self._users.values() if user.handle == handle), None)

    def create(self, new: NewUser, created_by: str) -> User:
        """Store a new user with the next id; :class:`Conflict` if the handle is taken."""
        with self._lock:
            self._check_handle(new.handle, None)
            user = User(id=self._next, created_by=created_by, **new.model_dump())
            self._users[user.id] = user
            self._next += 1
            return user

    def replace(self, id: int, new: NewUser) -> User | None:
        with self._lock:
            existing = self._users.get(id)
            if existing is None:
                return None
            self._check_handle(new.handle, id)
            user = existing.model_copy(update=new.model_dump())
            self._users[id] = user
            return user

    def change(self, id: int, changes: UserChanges) -> User | None:
        with self._lock:
            existing = self._users.get(id)
            if existing is None:
                return None
            user = existing.model_copy(update=changes.model_dump(exclude_none=True))
            self._users[id] = user
            return user

    def delete(self, id: int) -> bool:
        with self._lock:
            return self._users.pop(id, None) is not None

    def _check_handle(self, handle: str, id: int | None) -> None:
        for user in self._users.values():
            if user.handle == handle and user.id != id:
                raise Conflict(f"The handle {handle!r} is taken")


def _selected(user: User, roles: Sequence[Role], ids: Sequence[int]) -> bool:
    return (not roles or user.role in roles) and (not ids or user.id in ids)


def placeholder_png(id: int, size: int = 16) -> bytes:
    """A square PNG of one colour derived from ``id``: a user's avatar until they upload one."""
    colour = hashlib.sha256(str(id).encode()).digest()[:3]
    rows = b"".join(b"\x00" + colour * size for _ in range(size))

    def chunk(kind: bytes, data: bytes) -> bytes:
        checksum = zlib.crc32(kind + data) & 0xFFFFFFFF
        return struct.pack(">I", len(data)) + kind + data + struct.pack(">I", checksum)

    header = struct.pack(">IIBBBBB", size, size, 8, 2, 0, 0, 0)  # 8-bit RGB
    return (
        b"\x89PNG\r\n\x1a\n"
        + chunk(b"IHDR", header)
        + chunk(b"IDAT", zlib.compress(rows))
        + chunk(b"IEND", b"")
    )


class AvatarStorage:
    """Avatar images as files ``<id>.png`` in a directory (a temporary one by default); a user
    who uploaded none has a :func:`placeholder_png`."""

    def __init__(self, directory: Path | None = None) -> None:
        self._directory = directory
        self._lock = threading.RLock()
        self._alt: dict[int, str] = {}

    @property
    def directory(self) -> Path:
        with self._lock:
            if self._directory is None:
                self._directory = Path(tempfile.mkdtemp(prefix="webrest-avatars-"))
            self._directory.mkdir(parents=True, exist_ok=True)
            return self._directory

    def path(self, id: int) -> Path:
        return self.directory / f"{id}.png"

    def incoming(self, id: int) -> Path:
        """A fresh file to upload into, moved in place by :meth:`commit`."""
        handle, name = tempfile.mkstemp(prefix=f".{id}-", suffix=".part", dir=self.directory)
        os.close(handle)
        return Path(name)

    def commit(self, id: int, incoming: Path, alt: str) -> AvatarInfo:
        """Make the uploaded file ``incoming`` the avatar of user ``id``."""
        with self._lock:
            os.replace(incoming, self.directory / f"{id}.png")
            self._alt[id] = alt
        return self.info(id)

    def discard(self, incoming: Path) -> None:
        incoming.unlink(missing_ok=True)

    def info(self, id: int) -> AvatarInfo:
        try:
            data = self.path(id).read_bytes()
        except FileNotFoundError:
            data = placeholder_png(id)
        digest = hashlib.sha256(data).hexdigest()
        return AvatarInfo(size=len(data), alt=self._alt.get(id, ""), sha256=digest)

    def describe(self, id: int, alt: str) -> AvatarInfo:
        with self._lock:
            self._alt[id] = alt
        return self.info(id)

    def open(self, id: int) -> tuple[Iterator[bytes], int]:
        """The image as blocks (the file is open already) and its size."""
        try:
            file = self.path(id).open("rb")
        except FileNotFoundError:
            data = placeholder_png(id)
            return iter([data]), len(data)
        size = os.fstat(file.fileno()).st_size

        def blocks() -> Iterator[bytes]:
            with file:
                while block := file.read(64 * 1024):
                    yield block

        return blocks(), size

    def delete(self, id: int) -> None:
        """Forget user ``id``'s avatar."""
        with self._lock:
            self._alt.pop(id, None)
            self.path(id).unlink(missing_ok=True)
