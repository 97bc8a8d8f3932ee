"""``/users/{id}/avatar``: uploads streamed to disk (``Multipart``, ``Stream``, ``Async``),
downloads streamed back, and a text ``Body``."""

from __future__ import annotations

from collections.abc import AsyncIterator
from typing import Annotated

import anyio
from pydantic import Field

from examples.webrest_example.models import AvatarInfo, AvatarUpload
from examples.webrest_example.store import AvatarStorage, UserStore
from webrest import (
    Async,
    BadRequest,
    Body,
    Get,
    HttpError,
    Multipart,
    Put,
    Resource,
    Response,
    Stream,
)

__all__ = ["MAX_AVATAR_SIZE", "Avatars"]

MAX_AVATAR_SIZE = 1024 * 1024
"""Uploads with a larger body get 413."""

_NO_USER = "No such user"
_MAX_ALT = 200


@Resource("/users/{id:[0-9]+}/avatar")
class Avatars:
    """A user's avatar: a PNG image and a text alternative."""

    def __init__(self, store: UserStore, storage: AvatarStorage) -> None:
        self.store = store
        self.storage = storage

    @Put("", status=204, responses={404: _NO_USER}, max_body_size=MAX_AVATAR_SIZE)
    def upload(self, id: int, form: Annotated[Multipart, AvatarUpload]) -> Response | Async:
        """Upload the avatar as the file part ``avatar`` of a form, with an optional ``alt``
        text part; the file is written to storage as it arrives."""
        if self.store.find(id) is None:
            return Response.not_found(f"No such user #{id}")

        async def store() -> AsyncIterator[Response | None]:
            incoming = self.storage.incoming(id)
            alt, saved = "", False
            try:
                async for part in form:
                    if part.name == "avatar" and not saved:
                        await part.save(incoming)
                        saved = True
                    elif part.name == "alt":
                        alt = await part.text()
                    yield None  # other requests are served between parts
                if not saved:
                    raise BadRequest("Missing the file part 'avatar'")
                if len(alt) > _MAX_ALT:
                    raise BadRequest(f"The alt text is longer than {_MAX_ALT} characters")
                self.storage.commit(id, incoming, alt)
            finally:
                self.storage.discard(incoming)
            yield Response.no_content()

        return Async(store)

    @Put("/raw", status=204, responses={404: _NO_USER}, max_body_size=MAX_AVATAR_SIZE)
    async def upload_raw(self, id: int, data: Annotated[AsyncIterator[bytes], Stream]) -> Response:
        """Upload the avatar as the request body itself (``application/octet-stream``)."""
        if self.store.find(id) is None:
            return Response.not_found(f"No such user #{id}")
        incoming = self.storage.incoming(id)
        try:
            async with await anyio.open_file(incoming, "wb") as file:
                async for chunk in data:
                    await file.write(chunk)
            self.storage.commit(id, incoming, alt="")
        finally:
            self.storage.discard(incoming)
        return Response.no_content()

    @Get("", produces=["image/png"], responses={404: _NO_USER})
    def download(self, id: int) -> Response:
        """The avatar image, streamed from storage (a generated one until the user uploads
        theirs)."""
        self._user(id)
        blocks, size = self.storage.open(id)
        return Response.ok().type("image/png").stream(blocks, size=size)

    @Get("/info", responses={404: _NO_USER})
    def info(self, id: int) -> AvatarInfo:
        """Size, checksum and text alternative of the avatar."""
        self._user(id)
        return self.storage.info(id)

    @Put("/alt", responses={404: _NO_USER})
    def describe(
        self, id: int, alt: Annotated[str, Body, Field(min_length=1, max_length=_MAX_ALT)]
    ) -> AvatarInfo:
        """Replace the avatar's text alternative with the (``text/plain``) request body."""
        self._user(id)
        return self.storage.describe(id, alt)

    def _user(self, id: int) -> None:
        if self.store.find(id) is None:
            raise HttpError(404, f"No such user #{id}")
