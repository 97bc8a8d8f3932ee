"""``/users``: the upstream ``Users`` fixture, with every parameter source webrest offers, and
a paged list."""

from __future__ import annotations

import hashlib
from collections.abc import Sequence
from typing import Annotated

from pydantic import Field

from examples.webrest_example.models import (
    AuthorFilter,
    EntityTags,
    NewUser,
    Role,
    User,
    UserChanges,
)
from examples.webrest_example.store import AvatarStorage, Conflict, UserStore
from webrest import (
    Delete,
    Get,
    Header,
    HttpError,
    Matrix,
    Paging,
    Patch,
    Post,
    Put,
    Request,
    Resource,
    Response,
    SeparatedBy,
    Value,
)

__all__ = ["Users"]

_NOT_FOUND = "No such user"
_CONFLICT = "The handle is taken by another user"

PAGING = Paging(20, max_size=100)
"""``?page=2&per_page=50``: 20 users a page unless the client asks for up to 100."""


@Resource("/users")
class Users:
    """Create, find, change and delete users."""

    def __init__(self, store: UserStore, avatars: AvatarStorage) -> None:
        self.store = store
        self.avatars = avatars

    @Get("/", responses={200: list[User]})
    def list_users(
        self,
        request: Request,
        roles: Annotated[Sequence[Role], SeparatedBy(",")] = (),
        ids: Annotated[Sequence[int], SeparatedBy(",")] = (),
        page: Annotated[int, Field(ge=1, le=10_000)] = 1,
        per_page: Annotated[int, Field(ge=1, le=100)] = 20,
    ) -> Response:
        """Users by id, a page at a time, with a ``Link`` header to the first, previous, next
        and last pages; ``?roles=author,editor`` and ``?ids=1,2`` filter."""
        # page and per_page are declared for their validation and the OpenAPI document;
        # the pagination reads the same query parameters and builds the links from them.
        pagination = PAGING.on(request)
        users = self.store.list(roles, ids, pagination.start(), pagination.limit())
        return pagination.paginate(users, total=self.store.count(roles, ids))  # links last too

    @Get("/count")
    def count(self) -> int:
        """How many users there are."""
        return len(self.store)

    @Get("/{id:[0-9]+}", responses={200: User, 304: "Not modified", 404: _NOT_FOUND})
    def find(
        self, id: int, if_none_match: Annotated[EntityTags | None, Header("If-None-Match")] = None
    ) -> Response:
        """One user, with an ``ETag``; 304 when ``If-None-Match`` names it (or is ``*``)."""
        user = self.store.find(id)
        if user is None:
            return Response.not_found(f"No such user #{id}")
        etag = '"' + hashlib.sha256(user.model_dump_json().encode()).hexdigest()[:16] + '"'
        if if_none_match is not None:
            tags = {tag.strip() for tag in if_none_match.split(",")}
            if "*" in tags or etag in tags or f"W/{etag}" in tags:
                return Response.not_modified().header("ETag", etag)
        return Response.ok().header("ETag", etag).entity(user)

    @Get("/@{handle:[a-z]+}", responses={404: _NOT_FOUND})
    def by_handle(self, handle: str) -> User:
        """The user with this handle."""
        user = self.store.by_handle(handle)
        if user is None:
            raise HttpError(404, f"No user @{handle}")
        return user

    @Get("/{filter}/authors")
    def authors(self, filter: Annotated[AuthorFilter, Matrix]) -> list[User]:
        """Authors selected by matrix parameters: ``/users/handles=a,b;created_by=c/authors``."""
        return [
            user
            for user in self.store.list(roles=["author"], limit=len(self.store))
            if (not filter.handles or user.handle in filter.handles)
            and (not filter.created_by or user.created_by in filter.created_by)
        ]

    @Post("/", status=201, responses={201: User, 409: _CONFLICT})
    def create(self, user: NewUser, caller: Annotated[str, Value("caller")]) -> Response:
        """Create a user; the caller (see the application's filter) is recorded."""
        try:
            created = self.store.create(user, created_by=caller)
        except Conflict as exc:
            return Response.error(409, exc)
        return Response.created("/users/{id}", created.id).entity(created)

    @Put("/{id:[0-9]+}", responses={404: _NOT_FOUND, 409: _CONFLICT})
    def replace(self, id: int, user: NewUser) -> User:
        """Replace every field of a user."""
        try:
            replaced = self.store.replace(id, user)
        except Conflict as exc:
            raise HttpError(409, str(exc)) from exc
        if replaced is None:
            raise HttpError(404, f"No such user #{id}")
        return replaced

    @Patch("/{id:[0-9]+}", responses={404: _NOT_FOUND})
    def change(self, id: int, changes: UserChanges) -> User:
        """Change some fields of a user."""
        changed = self.store.change(id, changes)
        if changed is None:
            raise HttpError(404, f"No such user #{id}")
        return changed

    @Delete("/{id:[0-9]+}", status=204, responses={404: _NOT_FOUND})
    def delete(self, id: int) -> Response:
        """Delete a user and their avatar."""
        if not self.store.delete(id):
            return Response.not_found(f"No such user #{id}")
        self.avatars.delete(id)
        return Response.no_content()
