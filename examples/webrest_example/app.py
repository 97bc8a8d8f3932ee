"""Wiring: the resources, their APIs and the filter, as one ASGI application.

The ``/users`` API serves every resource of the package :mod:`.resources` (found by
``resources_in``, created by a factory that passes them the stores); ``/monitoring`` is built
by hand, with its own format and interceptor.

``uvicorn examples.webrest_example.app:app``, or ``create_app(storage=path)`` in tests.
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

from examples.webrest_example import resources
from examples.webrest_example.models import User
from examples.webrest_example.monitoring import CsvWriter, Metrics, Monitoring, ResultCache
from examples.webrest_example.store import AvatarStorage, UserStore
from webrest import Application, FilterChain, Request, Response, RestApi, resources_in

__all__ = ["app", "authenticate", "create_app"]

_BEARER = re.compile(r"Bearer ([a-z]{1,32})\Z")

SEED = (
    User(
        id=1549,
        name="Timm",
        handle="timm",
        email="timm@example.com",
        role="admin",
        created_by="seed",
    ),
    User(
        id=6100,
        name="Test",
        handle="test",
        email="test@example.com",
        role="author",
        created_by="seed",
    ),
)


async def authenticate(request: Request, chain: FilterChain) -> Response:
    """Filter: pass the caller's name (``Authorization: Bearer <name>``, else ``anonymous``)
    to methods as the value ``caller``. A real filter would check a token and answer 401."""
    found = _BEARER.match(request.headers.get("authorization", ""))
    request.pass_value("caller", found.group(1) if found else "anonymous")
    return await chain.proceed(request)


def create_app(storage: Path | None = None) -> Application:
    """The example application; avatars are stored in ``storage`` (default: a temporary
    directory made on first upload)."""
    store = UserStore(SEED)
    avatars = AvatarStorage(storage)
    metrics = Metrics()

    def create(resource: type[Any]) -> object:
        """Every resource of the package takes the store and the avatar storage."""
        return resource(store, avatars)

    users = RestApi(*resources_in(resources, factory=create)).intercepting(metrics.count)
    monitoring = (
        RestApi(Monitoring(store, metrics))
        .register("text/csv", writer=CsvWriter())
        .intercepting(metrics.count)
        .intercepting(ResultCache())
    )
    return Application(
        {"/users": users, "/monitoring": monitoring},
        filters=[authenticate],
        title="webrest example",
        version="1.0.0",
    )


app = create_app()
