"""Wiring: the resources, their APIs and the filter, as one ASGI application.

``uvicorn examples.webrest_example.app:app``, or ``create_app(storage=path)`` in tests.
"""

from __future__ import annotations

import re
from pathlib import Path

from examples.webrest_example.avatars import Avatars
from examples.webrest_example.models import User
from examples.webrest_example.monitoring import CsvWriter, Metrics, Monitoring, ResultCache
from examples.webrest_example.store import AvatarStorage, UserStore
from examples.webrest_example.users import Users
from webrest import Application, FilterChain, Request, Response, RestApi

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
    users = RestApi(Users(store, avatars), Avatars(store, avatars)).intercepting(metrics.count)
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
