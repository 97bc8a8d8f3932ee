"""Running one claimed execution: its program, its lease, and storing how it ended.

:class:`ExecutionJob` is what every queue pool runs once it holds a :class:`Lease` (the
server's pool, and each ``agents-worker`` process's):

1. the run spec is rebuilt from the execution's snapshot (config, workspace, input JSON and
   input files, all blobs; the workspaces run lately are kept in memory by snapshot hash,
   :mod:`~handlers.agents.execution.workspace_cache`);
2. the program runs (:func:`handlers.agents.runner.run`) while the lease is renewed every
   ``heartbeat_seconds`` and the cancel flag is polled every ``cancel_poll_seconds`` (through
   ``CancelSignal``'s poll callback; a cancel handled in this process also signals at once);
3. the execution turns ``finalizing``, the outputs are written as blobs, then one transaction
   stores the result and the file rows (guarded by the lease), and waiters are told.

A lost lease (the execution was declared lost and retried elsewhere) stops the program and
discards its results. A job cancelled from outside (worker shutdown) gives the execution back
to the queue.
"""

from __future__ import annotations

import asyncio
import json
import logging
import mimetypes
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from functools import partial
from typing import Any

import anyio
from sqlalchemy.exc import SQLAlchemyError
from sqlalchemy.orm import Session

from handlers.agents.domain.run_policy import retry_delay
from handlers.agents.domain.snapshots import (
    ISSUES,
    ISSUES_NAME,
    LOG,
    OUTPUT,
    TRACE,
    TRACE_NAME,
    read_run_snapshot,
    read_workspace_manifest,
)
from handlers.agents.execution.leases import (
    Lease,
    LeaseLost,
    cancel_is_requested,
    finish,
    mark_finalizing,
    record_attempt,
    record_files,
    release,
    renew,
    retry_later,
)
from handlers.agents.execution.workspace_cache import WorkspaceCache
from handlers.agents.runner import (
    CancelSignal,
    RunLimits,
    RunOutcome,
    RunSpec,
    Sandbox,
    SandboxUnavailable,
    make_sandbox,
    run,
)
from handlers.agents.settings import Settings
from handlers.agents.storage.blobs import BlobNotFound, BlobStore
from handlers.agents.storage.database import Database
from handlers.agents.storage.schema import utc_now

__all__ = [
    "MAX_ERROR_CHARS",
    "ExecutionJob",
    "LeaseState",
    "SandboxUnavailable",
    "keep_lease",
    "run_limits",
    "sandbox_for",
]

log = logging.getLogger("agents.worker")
sandbox_log = logging.getLogger("agents.sandbox")

MAX_ERROR_CHARS = 10000
MAX_FILE_NAME_CHARS = 255


@dataclass(frozen=True)
class _StoredFile:
    kind: str
    name: str
    digest: str
    size: int
    content_type: str


class LeaseState:
    """Whether the worker lost its lease while running (its results are then discarded)."""

    lost = False


async def keep_lease(
    database: Database,
    heartbeat_seconds: float,
    lease: Lease,
    cancel: CancelSignal,
    state: LeaseState,
) -> None:
    """Renew ``lease`` every ``heartbeat_seconds`` until cancelled; once it is lost, set
    ``state.lost`` and request ``cancel``."""
    while True:
        await asyncio.sleep(heartbeat_seconds)
        try:
            held = await database.write(partial(renew, lease=lease))
        except SQLAlchemyError as error:
            log.warning("execution %s: heartbeat failed: %s", lease.execution_id, error)
            continue
        if not held:
            state.lost = True
            cancel.request()
            return


def sandbox_for(settings: Settings) -> Sandbox:
    """The sandbox ``AGENTS_SANDBOX`` names, checked to work on this machine: raises
    :class:`SandboxUnavailable` saying what is missing and how to install it. With
    ``AGENTS_SANDBOX=none`` logs a warning that programs run unisolated."""
    sandbox = make_sandbox(
        settings.sandbox,
        uid=settings.sandbox_uid,
        gid=settings.sandbox_gid,
        egress=settings.egress,
    )
    if sandbox.isolated:
        sandbox_log.info(
            "agent programs run sandboxed (%s; network per agent, egress: %s)",
            sandbox.describe(),
            settings.egress.describe(),
        )
    else:
        sandbox_log.warning(
            "AGENTS_SANDBOX=none: agent programs run UNISOLATED, %s; for trusted single-user "
            "development only",
            sandbox.describe(),
        )
    return sandbox


def run_limits(settings: Settings) -> RunLimits:
    """The resource limits of every run, from the ``AGENTS_RUN_MAX_*`` settings."""
    return RunLimits(
        max_memory_bytes=settings.run_max_memory_bytes,
        max_cpu_seconds=settings.run_max_cpu_seconds,
        max_processes=settings.run_max_processes,
        max_file_bytes=settings.run_max_file_bytes,
        max_open_files=settings.run_max_open_files,
    )


QUICK_STORE_BYTES = 1 << 20
"""Results this small are stored at once, without the ``finalizing`` status first (one
transaction less per execution)."""


def _slow_to_store(outcome: RunOutcome) -> bool:
    """Whether storing ``outcome``'s files takes long enough to show ``finalizing``."""
    size = len(outcome.stdout_tail) + len(outcome.stderr_tail) + len(outcome.issues_md or "")
    size += sum(len(data) for data in outcome.output_files.values())
    return size > QUICK_STORE_BYTES or len(outcome.output_files) > 16


def _failed(error: str) -> RunOutcome:
    now = datetime.now(UTC)
    return RunOutcome("failed", None, error, now, now, 0.0)


class ExecutionJob:
    """Runs claimed executions and stores their outcomes; ``on_end(id)`` after each."""

    def __init__(
        self,
        database: Database,
        blobs: BlobStore,
        settings: Settings,
        on_end: Callable[[str], None],
        sandbox: Sandbox,
    ) -> None:
        self.database = database
        self.blobs = blobs
        self.settings = settings
        self.on_end = on_end
        self.sandbox = sandbox
        self.limits = run_limits(settings)
        self.workspaces = WorkspaceCache()
        """The workspaces run lately (content-addressed: never stale)."""
        self._cancels: dict[str, CancelSignal] = {}

    def request_cancel(self, execution_id: str) -> None:
        """Stop ``execution_id`` now if this process runs it (the poll would see it later)."""
        signal = self._cancels.get(execution_id)
        if signal is not None:
            signal.request()

    async def run(self, lease: Lease) -> None:
        """Run the leased execution to its end and store the result."""
        execution_id = lease.execution_id
        cancel = CancelSignal(
            partial(self._cancel_requested, execution_id),
            poll_interval=self.settings.cancel_poll_seconds,
        )
        state = LeaseState()
        self._cancels[execution_id] = cancel
        keeper = asyncio.create_task(self._keep(lease, cancel, state))
        try:
            config: dict[str, Any] = {}
            try:
                spec, config = await self._spec(lease)
            except (LookupError, ValueError, BlobNotFound, OSError) as error:
                outcome = _failed(f"cannot prepare the run: {error}")
            else:
                outcome = await run(spec, cancel, sandbox=self.sandbox)
            if state.lost:
                log.warning("execution %s: lease lost, result discarded", execution_id)
                return
            if not await self._retried(lease, outcome, config, cancel.requested):
                await self._store(lease, outcome)
        except asyncio.CancelledError:
            await asyncio.shield(self._give_back(lease))
            raise
        finally:
            keeper.cancel()
            self._cancels.pop(execution_id, None)

    async def _cancel_requested(self, execution_id: str) -> bool:
        return await self.database.read(partial(cancel_is_requested, execution_id=execution_id))

    async def _keep(self, lease: Lease, cancel: CancelSignal, state: LeaseState) -> None:
        await keep_lease(self.database, self.settings.heartbeat_seconds, lease, cancel, state)

    async def _give_back(self, lease: Lease) -> None:
        try:
            if await self.database.write(partial(release, lease=lease)):
                log.info("execution %s: worker stopping, back in the queue", lease.execution_id)
        except SQLAlchemyError as error:
            log.warning("execution %s: cannot give it back: %s", lease.execution_id, error)

    async def _retried(
        self, lease: Lease, outcome: RunOutcome, config: dict[str, Any], cancelled: bool
    ) -> bool:
        """Queue the execution again when its manifest retries this failed attempt (the
        attempt is recorded); False when the attempt is the execution's last."""
        if outcome.status != "failed" or cancelled:
            return False
        kind = "timeout" if outcome.timed_out else "failed"
        delay = retry_delay(config, kind, lease.attempt)
        if delay is None:
            return False
        error = outcome.error[:MAX_ERROR_CHARS] if outcome.error else None
        now = utc_now()

        def work(session: Session) -> None:
            retry_later(session, lease, now + timedelta(seconds=delay), error)
            record_attempt(session, lease, kind, error, outcome.started_at, now)

        try:
            await self.database.write(work)
        except LeaseLost:
            log.warning("execution %s: lease lost, result discarded", lease.execution_id)
            return True
        log.info("execution %s attempt=%d %s: retried in %.1f s", lease.execution_id,
                 lease.attempt, kind, delay)  # fmt: skip
        return True

    async def _spec(self, lease: Lease) -> tuple[RunSpec, dict[str, Any]]:
        snapshot = lease.snapshot
        if snapshot is None:  # a workflow's agent step, or a claim that could not read it
            snapshot = await self.database.read(
                partial(read_run_snapshot, execution_id=lease.execution_id)
            )

        cached = self.workspaces.get(snapshot.workspace_manifest)

        def load() -> tuple[Mapping[str, bytes], dict[str, bytes]]:
            workspace = cached
            if workspace is None:
                manifest = read_workspace_manifest(self.blobs.get(snapshot.workspace_manifest))
                workspace = self.workspaces.put(
                    snapshot.workspace_manifest,
                    {path: self.blobs.get(digest) for path, digest in manifest.items()},
                )
            inputs = {name: self.blobs.get(digest) for name, digest in snapshot.input_files.items()}
            return workspace, inputs

        workspace: Mapping[str, bytes]
        inputs: dict[str, bytes]
        if cached is not None and not snapshot.input_files:
            workspace, inputs = cached, {}  # nothing to read: no trip to a thread
        else:
            workspace, inputs = await anyio.to_thread.run_sync(load)
        config = snapshot.config
        entrypoint = config.get("entrypoint")
        if not isinstance(entrypoint, list) or not entrypoint:
            raise ValueError("the agent's manifest has no entrypoint")
        spec = RunSpec(
            execution_id=lease.execution_id,
            command=tuple(str(part) for part in entrypoint),
            workspace=workspace,
            input_json=snapshot.input_json,
            input_files=inputs,
            output_schema=config.get("outputSchema"),
            timeout_seconds=float(config.get("timeoutSeconds") or 300),
            env={"PATH": self.settings.effective_run_path},
            limits=self.limits,
            network="outbound" if config.get("network") == "outbound" else "none",
        )
        return spec, config

    async def _store(self, lease: Lease, outcome: RunOutcome) -> None:
        try:
            files: list[_StoredFile] | None = None
            if _slow_to_store(outcome):  # shown as finalizing while the blobs are written
                await self.database.write(partial(mark_finalizing, lease=lease))
                files = await anyio.to_thread.run_sync(self._put_blobs, lease.execution_id, outcome)
            error = outcome.error[:MAX_ERROR_CHARS] if outcome.error else None
            values = {
                "status": outcome.status,
                "output": outcome.output_json,
                "schema_valid": outcome.schema_valid,
                "error": error,
                "completed_at": utc_now(),
                "duration_ms": max(0, round(outcome.duration_seconds * 1000)),
            }

            def work(session: Session) -> list[_StoredFile]:
                # small results: their blobs are written here, in the transaction's thread,
                # before its first statement (which is when it takes a connection)
                stored = files if files is not None else self._put_blobs(lease.execution_id,
                                                                         outcome)  # fmt: skip
                finish(session, lease, values)
                now = utc_now()
                kind = "timeout" if outcome.timed_out else outcome.status
                record_attempt(session, lease, kind, error, outcome.started_at, now)
                record_files(
                    session,
                    [
                        {
                            "execution_id": lease.execution_id,
                            "kind": file.kind,
                            "name": file.name,
                            "blob_sha256": file.digest,
                            "size_bytes": file.size,
                            "content_type": file.content_type,
                            "created_at": now,
                        }
                        for file in stored
                    ],
                )
                return stored

            stored = await self.database.write(work)
        except LeaseLost:
            log.warning("execution %s: lease lost, result discarded", lease.execution_id)
            return
        log.info(
            "execution %s %s attempt=%d files=%d",
            lease.execution_id,
            outcome.status,
            lease.attempt,
            len(stored),
        )
        self.on_end(lease.execution_id)

    def _put_blobs(self, execution_id: str, outcome: RunOutcome) -> list[_StoredFile]:
        contents: list[tuple[str, str, bytes, str]] = []
        for name, data in sorted(outcome.output_files.items()):
            if len(name) > MAX_FILE_NAME_CHARS:
                log.warning("execution %s: output file name too long, not kept: %.80s…",
                            execution_id, name)  # fmt: skip
                continue
            media = mimetypes.guess_type(name)[0] or "application/octet-stream"
            contents.append((OUTPUT, name, data, media))
        if outcome.issues_md is not None:
            contents.append((ISSUES, ISSUES_NAME, outcome.issues_md.encode(), "text/markdown"))
        if outcome.trace:
            lines = "".join(json.dumps(event, ensure_ascii=False) + "\n" for event in outcome.trace)
            contents.append((TRACE, TRACE_NAME, lines.encode(), "application/x-ndjson"))
        for name, tail in (
            ("stdout.txt", outcome.stdout_tail),
            ("stderr.txt", outcome.stderr_tail),
        ):
            if tail:
                contents.append((LOG, name, tail.encode(), "text/plain"))
        return [
            _StoredFile(kind, name, self.blobs.put(data), len(data), media)
            for kind, name, data, media in contents
        ]
