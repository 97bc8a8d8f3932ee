"""Attaching the playground page to the rag application, outside the API's contract.

The page and its files are answered by a webrest filter placed first in the application's
chain, so, like webrest's ``/docs`` page, they are answered before any other filter (an
authentication filter included: the page holds no data; its API calls carry the key) and
before the API, and they are not in the OpenAPI document. Its paths answer ``GET`` and
``HEAD``, ``OPTIONS`` with 204, any other method with 405, each with ``Allow``; every other
path goes on to the API unchanged (``/`` then is the API's 404 when the page is off).
"""

from __future__ import annotations

from collections.abc import Callable

from handlers.rag.playground.page import PlaygroundPage
from webrest.application import Application
from webrest.errors import HttpError
from webrest.interception import FilterChain, check_filter
from webrest.request import Request
from webrest.response import Response

__all__ = ["PlaygroundFilter", "mount_playground"]

_METHODS = "GET, HEAD, OPTIONS"


class PlaygroundFilter:
    """A webrest filter answering the page's fixed paths itself and passing on the rest."""

    def __init__(self, page: PlaygroundPage) -> None:
        self.page = page
        self._routes: dict[str, Callable[[str], Response]] = page.routes()

    async def __call__(self, request: Request, chain: FilterChain) -> Response:
        scope = request.scope
        root: str = scope.get("root_path", "")
        path: str = scope["path"]
        if root and path.startswith(root):
            path = path[len(root) :] or "/"
        answer = self._routes.get(path)
        if answer is None:
            return await chain.proceed(request)
        method = request.method
        if method == "GET" or method == "HEAD":
            return answer(root)
        if method == "OPTIONS":
            return Response.no_content().header("Allow", _METHODS)
        raise HttpError(405, f"Method {method} not allowed", headers={"Allow": _METHODS})


def mount_playground(app: Application, path: str = "/") -> PlaygroundPage:
    """Serves the playground page at ``path`` of ``app`` (its files under ``/playground/``),
    ahead of every filter already installed; returns the page."""
    playground = PlaygroundFilter(PlaygroundPage(path))
    app.filters.insert(0, check_filter(playground))
    return playground.page
