"""API keys: issuing, checking and revoking them, and what each one may see.

A key is shown once, at creation, as ``sk_<id>_<secret>``: ``<id>`` is 16 hex digits (the row's
primary key, not secret) and ``<secret>`` 32 random bytes in URL-safe base64. The database
keeps only the SHA-256 of the secret, compared in constant time.

Scope (see README.md): ``*`` (every agent and workflow) or a set of agent and workflow
references (ids or slugs), plus, separately, the right to create agents. An agent created by a
scoped key is added to that key's scope in the same transaction.
"""

from __future__ import annotations

import hashlib
import hmac
import re
import secrets
from collections.abc import Iterable
from dataclasses import dataclass, field
from datetime import datetime

from sqlalchemy import select
from sqlalchemy.orm import Session

from handlers.agents.storage.schema import ApiKey, ApiKeyGrant, utc_now

__all__ = [
    "AGENT",
    "WORKFLOW",
    "IssuedKey",
    "KeyInfo",
    "Principal",
    "authenticate",
    "create_key",
    "grant",
    "key_principal",
    "list_keys",
    "revoke_key",
]

AGENT = "agent"
WORKFLOW = "workflow"

_TOKEN = re.compile(r"^sk_([0-9a-f]{16})_([A-Za-z0-9_-]{43})$")
_DUMMY_HASH = hashlib.sha256(b"no such key").hexdigest()


def _hash(secret: str) -> str:
    return hashlib.sha256(secret.encode()).hexdigest()


@dataclass(frozen=True)
class Principal:
    """The authenticated caller: a key and what it may see and do."""

    key_id: str
    name: str
    scope_all: bool
    can_create_agents: bool
    agents: frozenset[str] = field(default_factory=frozenset)
    workflows: frozenset[str] = field(default_factory=frozenset)

    def sees_agent(self, agent_id: str, slug: str) -> bool:
        """Whether the key may use the agent ``agent_id`` / ``slug``."""
        return self.scope_all or agent_id in self.agents or slug in self.agents

    def sees_workflow(self, workflow_id: str, slug: str) -> bool:
        """Whether the key may use the workflow ``workflow_id`` / ``slug``."""
        return self.scope_all or workflow_id in self.workflows or slug in self.workflows


@dataclass(frozen=True)
class IssuedKey:
    """A new key; ``secret`` (the bearer token) is not stored and cannot be shown again."""

    id: str
    name: str
    secret: str


@dataclass(frozen=True)
class KeyInfo:
    """A key as ``list-keys`` shows it (no secret)."""

    id: str
    name: str
    scope_all: bool
    can_create_agents: bool
    agents: tuple[str, ...]
    workflows: tuple[str, ...]
    created_at: datetime
    revoked_at: datetime | None

    @property
    def scope(self) -> str:
        """``*`` or the references, e.g. ``agents: a, b; workflows: w``."""
        if self.scope_all:
            return "*"
        parts = []
        if self.agents:
            parts.append("agents: " + ", ".join(self.agents))
        if self.workflows:
            parts.append("workflows: " + ", ".join(self.workflows))
        return "; ".join(parts) or "(nothing)"


def create_key(
    session: Session,
    name: str,
    *,
    scope_all: bool = False,
    agents: Iterable[str] = (),
    workflows: Iterable[str] = (),
    can_create_agents: bool = False,
) -> IssuedKey:
    """Issue a key with this scope."""
    key_id = secrets.token_hex(8)
    secret = secrets.token_urlsafe(32)
    now = utc_now()
    session.add(
        ApiKey(
            id=key_id,
            name=name,
            secret_sha256=_hash(secret),
            scope_all=scope_all,
            can_create_agents=can_create_agents,
            created_at=now,
            revoked_at=None,
        )
    )
    session.flush()
    for ref in dict.fromkeys(agents):
        grant(session, key_id, AGENT, ref)
    for ref in dict.fromkeys(workflows):
        grant(session, key_id, WORKFLOW, ref)
    return IssuedKey(key_id, name, f"sk_{key_id}_{secret}")


def grant(session: Session, key_id: str, kind: str, ref: str) -> None:
    """Add an agent or workflow (``kind``) to a key's scope (idempotent)."""
    if session.get(ApiKeyGrant, (key_id, kind, ref)) is None:
        session.add(ApiKeyGrant(key_id=key_id, resource_kind=kind, ref=ref, created_at=utc_now()))


def _grants(session: Session, key_id: str) -> tuple[list[str], list[str]]:
    rows = session.execute(
        select(ApiKeyGrant.resource_kind, ApiKeyGrant.ref)
        .where(ApiKeyGrant.key_id == key_id)
        .order_by(ApiKeyGrant.created_at, ApiKeyGrant.ref)
    ).all()
    agents = [ref for kind, ref in rows if kind == AGENT]
    workflows = [ref for kind, ref in rows if kind == WORKFLOW]
    return agents, workflows


def authenticate(session: Session, token: str) -> Principal | None:
    """The principal of a bearer token; ``None`` when it is malformed, unknown or revoked."""
    match = _TOKEN.match(token)
    key = session.get(ApiKey, match.group(1)) if match else None
    expected = key.secret_sha256 if key is not None else _DUMMY_HASH
    given = _hash(match.group(2)) if match else _hash(token)
    if not hmac.compare_digest(expected, given) or key is None or key.revoked_at is not None:
        return None
    # a key scoped to everything needs no grants (none are consulted for it)
    agents, workflows = ([], []) if key.scope_all else _grants(session, key.id)
    return Principal(
        key.id,
        key.name,
        key.scope_all,
        key.can_create_agents,
        frozenset(agents),
        frozenset(workflows),
    )


def list_keys(session: Session) -> list[KeyInfo]:
    """Every key, oldest first."""
    keys = session.scalars(select(ApiKey).order_by(ApiKey.created_at, ApiKey.id)).all()
    infos = []
    for key in keys:
        agents, workflows = _grants(session, key.id)
        infos.append(
            KeyInfo(
                key.id,
                key.name,
                key.scope_all,
                key.can_create_agents,
                tuple(agents),
                tuple(workflows),
                key.created_at,
                key.revoked_at,
            )
        )
    return infos


def revoke_key(session: Session, key_id: str) -> datetime | None:
    """Revoke a key (idempotent); returns when it was revoked, ``None`` for an unknown id."""
    key = session.get(ApiKey, key_id)
    if key is None:
        return None
    if key.revoked_at is None:
        key.revoked_at = utc_now()
    return key.revoked_at


def key_principal(session: Session, key_id: str) -> Principal | None:
    """The principal of the key ``key_id`` as its next request would have it (what it acts as
    when it is not calling: schedules); ``None`` when the key is unknown or revoked."""
    key = session.get(ApiKey, key_id)
    if key is None or key.revoked_at is not None:
        return None
    agents, workflows = _grants(session, key.id)
    return Principal(
        key.id,
        key.name,
        key.scope_all,
        key.can_create_agents,
        frozenset(agents),
        frozenset(workflows),
    )
