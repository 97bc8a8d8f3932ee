"""An agent execution's expected files: list, add (upload or copy an output), download,
rename, delete.

Expected files are ``execution_files`` rows of kind ``expected`` whose contents are blobs
(content-addressed: copying an output file stores no new content). An expected name is an
artifact path: a safe relative path (:mod:`handlers.agents.domain.paths`: no absolute path, no
``..`` or ``.`` or empty segment, no backslash or control character) that also matches the spec's
name pattern (letters, digits, space and ``. _ ( ) - /``, at most 255 characters) and does not
collide with another expected file used as a folder (``a`` and ``a/b``). A bad name is a 400
naming where it came from (``path.filename``, ``body.name``, ``body.expectedName``,
``body.outputFileName`` or, for a name taken from the uploaded part, ``body.file``).

An execution holds at most :data:`MAX_EXPECTED_FILES` expected files of at most
:data:`MAX_EXPECTED_FILE_BYTES` each. Adding a file under an existing name replaces it;
renaming onto an existing name is a 409. Downloads are ``application/octet-stream`` (the
stored content type is in the listing). Each change is one transaction, with the execution's
row locked; blobs are written before it.
"""

from __future__ import annotations

import mimetypes
import re
from functools import partial

import anyio
from sqlalchemy import select, update
from sqlalchemy.orm import Session
from starlette.datastructures import UploadFile

from generated.agents import models
from handlers.agents.domain.feedback import EXPECTED, expected_file_entries, find_execution
from handlers.agents.domain.keys import Principal
from handlers.agents.domain.paths import collision, conflicting, invalid, safe_path
from handlers.agents.storage.blobs import BlobStore
from handlers.agents.storage.database import Database
from handlers.agents.storage.schema import ExecutionFile, utc_now
from webrest import BadRequest, ErrorDetail, HttpError, Response

__all__ = [
    "MAX_EXPECTED_FILES",
    "MAX_EXPECTED_FILE_BYTES",
    "ExpectedFiles",
    "expected_name",
]

MAX_EXPECTED_FILES = 1000
MAX_EXPECTED_FILE_BYTES = 50 * 1024 * 1024
OCTET_STREAM = "application/octet-stream"

Field = tuple[str | int, ...]

_NAME = re.compile(r"^[A-Za-z0-9._()-][A-Za-z0-9._() /-]{0,254}$")


def expected_name(name: str, field: Field) -> str:
    """``name`` when it can name an expected file; otherwise a 400 naming ``field``."""
    safe_path(name, field)
    if not _NAME.match(name):
        raise invalid(
            field,
            name,
            "an expected file name has at most 255 characters among letters, digits, space "
            "and . _ ( ) - /, and does not start with a space or '/'",
        )
    return name


def _content_type(given: str | None, name: str) -> str:
    """The part's own type, unless it is missing or generic: then a guess from the name."""
    if given and given.split(";")[0].strip().lower() != OCTET_STREAM:
        return given
    return mimetypes.guess_type(name)[0] or OCTET_STREAM


def _not_found(execution_id: str, name: str) -> HttpError:
    return HttpError(404, f"Expected file {name!r} not found in execution '{execution_id}'")


def _expected_names(session: Session, execution_id: str) -> list[str]:
    return list(
        session.scalars(
            select(ExecutionFile.name).where(
                ExecutionFile.execution_id == execution_id, ExecutionFile.kind == EXPECTED
            )
        )
    )


def _check_room(session: Session, execution_id: str, name: str, field: Field) -> None:
    """409 when ``name`` would collide with a stored folder, 400 when it would be one file too
    many."""
    names = _expected_names(session, execution_id)
    clash = collision(name, names)
    if clash is not None:
        raise conflicting(field, name, clash, "expected file")
    if name not in names and len(names) >= MAX_EXPECTED_FILES:
        message = f"An execution holds at most {MAX_EXPECTED_FILES} expected files"
        raise BadRequest(message, [ErrorDetail(field, message, "value_error", name)])


def _store_row(
    session: Session,
    execution_id: str,
    name: str,
    digest: str,
    size: int,
    content_type: str | None,
) -> None:
    """Create or replace the expected file ``name``."""
    row = session.get(ExecutionFile, (execution_id, EXPECTED, name))
    if row is None:
        session.add(
            ExecutionFile(
                execution_id=execution_id,
                kind=EXPECTED,
                name=name,
                blob_sha256=digest,
                size_bytes=size,
                content_type=content_type,
                created_at=utc_now(),
            )
        )
    else:
        row.blob_sha256, row.size_bytes, row.content_type = digest, size, content_type
        row.created_at = utc_now()


class ExpectedFiles:
    """The expected-artifact operations, over the database and the blob store."""

    def __init__(self, database: Database, blobs: BlobStore) -> None:
        self.database = database
        self.blobs = blobs

    async def list(
        self, principal: Principal, execution_id: str
    ) -> models.AgentExecutionExpectedArtifacts:
        """The expected JSON and the expected files (name, size, content type), by name."""

        def work(session: Session) -> models.AgentExecutionExpectedArtifacts:
            execution = find_execution(session, principal, execution_id)
            return models.AgentExecutionExpectedArtifacts(
                expected=execution.expected, files=expected_file_entries(session, execution.id)
            )

        return await self.database.read(work)

    async def add(
        self,
        principal: Principal,
        execution_id: str,
        body: models.CopyAgentExecutionOutputToExpectedBody | None,
        file: UploadFile | None,
        name: str | None,
    ) -> models.CreateExpectedFileResponse:
        """Upload ``file`` (multipart) or copy the output file ``body`` names (JSON)."""
        if body is not None:
            return await self.copy_output(principal, execution_id, body)
        if file is None:
            message = "Send the expected file as the multipart part 'file'"
            raise BadRequest(message, [ErrorDetail(("body", "file"), message, "missing")])
        return await self.upload(principal, execution_id, file, name)

    async def upload(
        self, principal: Principal, execution_id: str, file: UploadFile, name: str | None
    ) -> models.CreateExpectedFileResponse:
        """Store the uploaded part as the expected file ``name`` (default: its filename)."""
        if name is not None:
            target = expected_name(name, ("body", "name"))
        elif file.filename:
            target = expected_name(file.filename, ("body", "file"))
        else:
            message = "The part 'file' has no filename: give the expected name in 'name'"
            raise BadRequest(message, [ErrorDetail(("body", "name"), message, "missing")])
        data = await file.read(MAX_EXPECTED_FILE_BYTES + 1)
        if len(data) > MAX_EXPECTED_FILE_BYTES:
            raise HttpError(
                413, f"An expected file has at most {MAX_EXPECTED_FILE_BYTES} bytes ({target!r})"
            )
        content_type = _content_type(file.content_type, target)
        # a key that may not see the execution stores nothing, not even an unreferenced blob
        await self.database.read(
            partial(find_execution, principal=principal, execution_id=execution_id)
        )
        digest = await anyio.to_thread.run_sync(self.blobs.put, data)

        def work(session: Session) -> None:
            execution = find_execution(session, principal, execution_id, lock=True)
            field: Field = ("body", "name") if name is not None else ("body", "file")
            _check_room(session, execution.id, target, field)
            _store_row(session, execution.id, target, digest, len(data), content_type)

        await self.database.write(work)
        return models.CreateExpectedFileResponse(name=target)

    async def copy_output(
        self,
        principal: Principal,
        execution_id: str,
        body: models.CopyAgentExecutionOutputToExpectedBody,
    ) -> models.CreateExpectedFileResponse:
        """Copy the output file ``outputFileName`` to ``expectedName`` (default: same name)."""
        source = safe_path(body.output_file_name, ("body", "outputFileName"))
        requested = body.expected_name if isinstance(body.expected_name, str) else None
        field: Field = ("body", "outputFileName") if requested is None else ("body", "expectedName")
        target = expected_name(source if requested is None else requested, field)

        def work(session: Session) -> None:
            execution = find_execution(session, principal, execution_id, lock=True)
            output = session.get(ExecutionFile, (execution.id, "output", source))
            if output is None:
                raise HttpError(
                    404, f"Output file {source!r} not found in execution '{execution_id}'"
                )
            _check_room(session, execution.id, target, field)
            _store_row(
                session,
                execution.id,
                target,
                output.blob_sha256,
                output.size_bytes,
                output.content_type,
            )

        await self.database.write(work)
        return models.CreateExpectedFileResponse(name=target)

    async def download(self, principal: Principal, execution_id: str, filename: str) -> Response:
        """The expected file's exact bytes."""
        name = expected_name(filename, ("path", "filename"))

        def work(session: Session) -> str:
            execution = find_execution(session, principal, execution_id)
            row = session.get(ExecutionFile, (execution.id, EXPECTED, name))
            if row is None:
                raise _not_found(execution_id, name)
            return row.blob_sha256

        digest = await self.database.read(work)
        data = await anyio.to_thread.run_sync(self.blobs.get, digest)
        basename = name.rsplit("/", 1)[-1]
        return (
            Response.ok()
            .type(OCTET_STREAM)
            .header("content-disposition", f'attachment; filename="{basename}"')
            .body(data)
        )

    async def rename(
        self,
        principal: Principal,
        execution_id: str,
        filename: str,
        body: models.RenameExpectedFileBody,
    ) -> models.RenameExpectedFileResponse:
        """Move the expected file to ``body.name``; 409 when that name is taken."""
        old = expected_name(filename, ("path", "filename"))
        new = expected_name(body.name, ("body", "name"))

        def work(session: Session) -> None:
            execution = find_execution(session, principal, execution_id, lock=True)
            if session.get(ExecutionFile, (execution.id, EXPECTED, old)) is None:
                raise _not_found(execution_id, old)
            if new == old:
                return
            if session.get(ExecutionFile, (execution.id, EXPECTED, new)) is not None:
                message = f"An expected file named {new!r} already exists"
                raise HttpError(409, message, [ErrorDetail(("body", "name"), message, "conflict")])
            others = [other for other in _expected_names(session, execution.id) if other != old]
            clash = collision(new, others)
            if clash is not None:
                raise conflicting(("body", "name"), new, clash, "expected file")
            session.execute(
                update(ExecutionFile)
                .where(
                    ExecutionFile.execution_id == execution.id,
                    ExecutionFile.kind == EXPECTED,
                    ExecutionFile.name == old,
                )
                .values(name=new)
            )

        await self.database.write(work)
        return models.RenameExpectedFileResponse(name=new, previous_name=old)

    async def delete(self, principal: Principal, execution_id: str, filename: str) -> None:
        """Delete the expected file (404 when there is none by that name)."""
        name = expected_name(filename, ("path", "filename"))

        def work(session: Session) -> None:
            execution = find_execution(session, principal, execution_id, lock=True)
            row = session.get(ExecutionFile, (execution.id, EXPECTED, name))
            if row is None:
                raise _not_found(execution_id, name)
            session.delete(row)

        await self.database.write(work)
