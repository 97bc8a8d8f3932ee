"""An agent's live workspace files: listing, reading (one file as JSON) and writing them.

Paths are checked by :mod:`handlers.agents.domain.paths`; a batch upload is all or nothing (every
path and content is checked before anything is written, and the rows change in one
transaction). Writing ``agent.json`` replaces the agent's manifest (see
:mod:`handlers.agents.domain.manifest`).
"""

from __future__ import annotations

import base64
import binascii
import mimetypes
from dataclasses import dataclass
from typing import Any

import anyio
from sqlalchemy import select
from sqlalchemy.orm import Session

from generated.agents import models
from handlers.agents.domain.agents import file_entry, find_agent, write_file_row
from handlers.agents.domain.keys import Principal
from handlers.agents.domain.manifest import MANIFEST_PATH, parse_manifest
from handlers.agents.domain.paths import collision, conflicting, invalid, join_prefix, safe_path
from handlers.agents.domain.snapshots import refresh_workspace
from handlers.agents.storage.blobs import BlobStore
from handlers.agents.storage.database import Database
from handlers.agents.storage.schema import AgentFile, utc_now
from webrest import BadRequest, ErrorDetail, HttpError

__all__ = ["AgentFiles"]

Field = tuple[str | int, ...]


@dataclass(frozen=True)
class _Write:
    """One file to write, checked: where it was given (for errors) and its content."""

    path: str
    field: Field
    data: bytes
    content_type: str
    manifest: dict[str, Any] | None


def _decode(content: str | None, content_base64: str | None, field: Field) -> bytes:
    if content is not None and content_base64 is not None:
        message = "Give content or contentBase64, not both"
        raise BadRequest(
            message,
            [
                ErrorDetail((*field, "content"), message, "value_error"),
                ErrorDetail((*field, "contentBase64"), message, "value_error"),
            ],
        )
    if content_base64 is not None:
        try:
            return base64.b64decode(content_base64, validate=True)
        except (binascii.Error, ValueError) as error:
            message = f"Not valid base64: {error}"
            detail = ErrorDetail((*field, "contentBase64"), message, "value_error")
            raise BadRequest(message, [detail]) from None
    return (content or "").encode()


def _text(value: object) -> str | None:
    return value if isinstance(value, str) else None


def _prepare(
    path: str,
    path_field: Field,
    body: models.AgentFileBody | models.AgentFileUpload,
    body_field: Field,
) -> _Write:
    data = _decode(_text(body.content), _text(body.content_base64), body_field)
    content_type = (
        _text(body.content_type) or mimetypes.guess_type(path)[0] or "application/octet-stream"
    )
    manifest = None
    if path == MANIFEST_PATH:
        shown = (*body_field, "contentBase64" if _text(body.content_base64) else "content")
        manifest = parse_manifest(data, shown)
        content_type = "application/json"
    return _Write(path, path_field, data, content_type, manifest)


def _check_collisions(session: Session, agent_id: str, writes: list[_Write]) -> None:
    """A path that would be both a file and a folder: 400 within the request, 409 against the
    workspace."""
    paths = [write.path for write in writes]
    for write in writes:
        clash = collision(write.path, paths)
        if clash is not None:
            raise invalid(write.field, write.path, f"it collides with the file {clash!r}")
        segments = write.path.split("/")
        folders = ["/".join(segments[:n]) for n in range(1, len(segments))]
        stored = session.scalar(
            select(AgentFile.path).where(
                AgentFile.agent_id == agent_id,
                AgentFile.path.in_(folders)
                | AgentFile.path.startswith(write.path + "/", autoescape=True),
            )
        )
        if stored is not None:
            raise conflicting(write.field, write.path, stored, "file")


class AgentFiles:
    """The workspace file operations, over the database and the blob store."""

    def __init__(self, database: Database, blobs: BlobStore) -> None:
        self.database = database
        self.blobs = blobs

    async def list_or_read(
        self, principal: Principal, ref: str, path: str | None, prefix: str | None
    ) -> models.AgentFilesAnswer:
        """The files (under ``prefix``), or with ``path`` that one file with its content."""
        if path is not None:
            return models.AgentFilesAnswer(
                await self._read(principal, ref, join_prefix(prefix, path))
            )
        folder = None
        if prefix is not None:
            folder = safe_path(prefix[:-1] if prefix.endswith("/") else prefix, ("query", "prefix"))

        def work(session: Session) -> models.ListAgentFilesResponse:
            agent = find_agent(session, principal, ref)
            query = select(AgentFile).where(AgentFile.agent_id == agent.id)
            if folder is not None:
                query = query.where(AgentFile.path.startswith(folder + "/", autoescape=True))
            rows = session.scalars(query.order_by(AgentFile.path)).all()
            return models.ListAgentFilesResponse(files=[file_entry(row) for row in rows])

        return models.AgentFilesAnswer(await self.database.read(work))

    async def _read(self, principal: Principal, ref: str, path: str) -> models.AgentFileContent:
        """One file: ``content`` when it is UTF-8 text, ``contentBase64`` otherwise."""

        def work(session: Session) -> AgentFile:
            agent = find_agent(session, principal, ref)
            row = session.get(AgentFile, (agent.id, path))
            if row is None:
                raise HttpError(404, f"File {path!r} not found in agent '{ref}'")
            session.expunge(row)
            return row

        row = await self.database.read(work)
        data = await anyio.to_thread.run_sync(self.blobs.get, row.blob_sha256)
        try:
            content: dict[str, str] = {"content": data.decode("utf-8")}
        except UnicodeDecodeError:
            content = {"content_base64": base64.b64encode(data).decode("ascii")}
        return models.AgentFileContent(
            path=row.path,
            content_type=row.content_type,
            size_bytes=row.size_bytes,
            updated_at=row.updated_at,
            **content,
        )

    async def put(
        self,
        principal: Principal,
        ref: str,
        path: str,
        prefix: str | None,
        body: models.AgentFileBody,
    ) -> models.PutAgentFileResponse:
        """Create or replace one file."""
        full = join_prefix(prefix, path)
        write = _prepare(full, ("query", "path"), body, ("body",))
        await self._write(principal, ref, [write])
        return models.PutAgentFileResponse(ok=True, path=full)

    async def upload(
        self, principal: Principal, ref: str, body: models.AgentFilesBody
    ) -> models.UploadAgentFilesResponse:
        """Create or replace several files, all or nothing."""
        writes: list[_Write] = []
        seen: set[str] = set()
        for index, item in enumerate(body.files):
            field: Field = ("body", "files", index)
            path = safe_path(item.path, (*field, "path"))
            if path in seen:
                raise invalid((*field, "path"), path, "it appears twice in this upload")
            seen.add(path)
            writes.append(_prepare(path, (*field, "path"), item, field))
        await self._write(principal, ref, writes)
        return models.UploadAgentFilesResponse(
            ok=True, files=[models.File(write.path) for write in writes]
        )

    async def _write(self, principal: Principal, ref: str, writes: list[_Write]) -> None:
        digests = await anyio.to_thread.run_sync(
            lambda: [self.blobs.put(write.data) for write in writes]
        )

        def work(session: Session) -> None:
            agent = find_agent(session, principal, ref, lock=True)
            _check_collisions(session, agent.id, writes)
            now = utc_now()
            for write, digest in zip(writes, digests, strict=True):
                write_file_row(
                    session, agent.id, write.path, digest, len(write.data), write.content_type, now
                )
                if write.manifest is not None:
                    agent.config = write.manifest
            agent.updated_at = now
            refresh_workspace(session, self.blobs, agent)

        await self.database.write(work)
