"""The example's data types: what clients send and what they get back."""

from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime
from typing import Annotated, Literal

from pydantic import BaseModel, BeforeValidator, ConfigDict, Field, StringConstraints

__all__ = [
    "AuthorFilter",
    "AvatarInfo",
    "AvatarUpload",
    "EntityTags",
    "Handle",
    "Metric",
    "NewUser",
    "Role",
    "Status",
    "User",
    "UserChanges",
]

Role = Literal["author", "editor", "admin"]
Name = Annotated[str, StringConstraints(min_length=1, max_length=100)]
Handle = Annotated[str, StringConstraints(min_length=1, max_length=32, pattern=r"^[a-z]+$")]
Email = Annotated[
    str,
    StringConstraints(min_length=3, max_length=254, pattern=r"^[A-Za-z0-9._%+-]+@[A-Za-z0-9.-]+$"),
]
EntityTags = Annotated[str, StringConstraints(max_length=512)]


class NewUser(BaseModel):
    """A user as created (``POST /users``) or replaced (``PUT /users/{id}``)."""

    model_config = ConfigDict(extra="forbid")

    name: Name
    handle: Handle
    email: Email
    role: Role = "author"


class UserChanges(BaseModel):
    """The fields a ``PATCH /users/{id}`` changes; absent ones stay as they are."""

    model_config = ConfigDict(extra="forbid")

    name: Name | None = None
    email: Email | None = None
    role: Role | None = None


class User(BaseModel):
    """A stored user."""

    id: int
    name: str
    handle: str
    email: str
    role: Role
    created_by: str


def _as_list(value: object) -> object:
    """A matrix value is a string, a list (``a,b``) or ``None`` (a bare key)."""
    if value is None:
        return []
    return [value] if isinstance(value, str) else value


MatrixList = Annotated[Sequence[str], BeforeValidator(_as_list)]


class AuthorFilter(BaseModel):
    """Matrix parameters of ``/users/{filter}/authors``: ``handles=a,b;created_by=admin``.

    Keys it does not know are ignored, so any segment is a valid (if unusual) filter.
    """

    handles: MatrixList = ()
    created_by: MatrixList = ()


class AvatarUpload(BaseModel):
    """The parts of a ``multipart/form-data`` avatar upload (documentation only)."""

    avatar: bytes = Field(description="The image, a file part")
    alt: str = Field(default="", max_length=200, description="A text alternative")


class AvatarInfo(BaseModel):
    """What is stored about a user's avatar."""

    size: int
    alt: str
    sha256: str


class Status(BaseModel):
    """The service's health."""

    status: Literal["ok"]
    started: datetime
    users: int


class Metric(BaseModel):
    """How often a method was called."""

    name: str
    calls: int
