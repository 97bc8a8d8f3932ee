"""The documentation page: Swagger UI over the application's OpenAPI document.

Its files come from the ``swagger-ui-bundle-v2`` package (Swagger UI 5, for OpenAPI 3.0 and
3.1), so the page works offline: it loads nothing from another host. With
``Application(docs_path="/docs")`` (the default), the application answers:

* ``/docs`` (and ``/docs/``): the page, pointing at the application's ``openapi_path`` under the
  request's ``root_path``; not cached (``no-cache``);
* ``/docs/<tag>/<name>``: Swagger UI's script and style sheet, its icons and the page's start
  script, for the names in :data:`ASSETS` only. No file is ever looked up by a name from the
  request, so no path can reach another file. ``<tag>`` changes whenever their contents do, so
  browsers keep them for a year.

The page's ``Content-Security-Policy`` allows scripts, styles and requests from its own origin
only (images also from ``data:`` URLs, which Swagger UI's style sheet uses for its icons): the
start script is a file, not inline, and Swagger UI's online validator is off.
"""

from __future__ import annotations

import hashlib
import html
import importlib
import re
from collections.abc import Callable
from dataclasses import dataclass
from functools import cache
from importlib.resources.abc import Traversable

from webrest.response import Response

__all__ = ["ASSETS", "CONTENT_SECURITY_POLICY", "DocsPage"]

ASSETS: dict[str, str] = {
    "swagger-ui-bundle.js": "text/javascript; charset=utf-8",
    "swagger-ui.css": "text/css; charset=utf-8",
    "index.css": "text/css; charset=utf-8",
    "favicon-32x32.png": "image/png",
    "favicon-16x16.png": "image/png",
    "docs.js": "text/javascript; charset=utf-8",
}
"""The files served under the page's path, by name, with their media types."""

CONTENT_SECURITY_POLICY = (
    "default-src 'self'; script-src 'self'; style-src 'self'; img-src 'self' data:; "
    "connect-src 'self'; font-src 'self'; object-src 'none'; base-uri 'none'; "
    "form-action 'self'; frame-ancestors 'none'"
)
"""The page's policy: its own origin only (and ``data:`` images)."""

_START_SCRIPT = b"""\
"use strict";
// Starts Swagger UI on the page's #swagger-ui element, over the document its data attribute
// names (a file rather than an inline script, so the page's policy can forbid inline scripts).
(function () {
  var root = document.getElementById("swagger-ui");
  window.ui = SwaggerUIBundle({
    url: root.getAttribute("data-openapi-url"),
    domNode: root,
    deepLinking: true,
    validatorUrl: null,
    presets: [SwaggerUIBundle.presets.apis],
    layout: "BaseLayout",
  });
})();
"""

_PAGE = """\
<!DOCTYPE html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>{title}</title>
<link rel="stylesheet" href="{assets}/swagger-ui.css">
<link rel="stylesheet" href="{assets}/index.css">
<link rel="icon" type="image/png" href="{assets}/favicon-32x32.png" sizes="32x32">
<link rel="icon" type="image/png" href="{assets}/favicon-16x16.png" sizes="16x16">
</head>
<body>
<div id="swagger-ui" data-openapi-url="{openapi}"></div>
<script src="{assets}/swagger-ui-bundle.js"></script>
<script src="{assets}/docs.js"></script>
</body>
</html>
"""

_SOURCE_MAP = re.compile(rb"\s*(?://# sourceMappingURL=\S+|/\*# sourceMappingURL=\S+ ?\*/)\s*\Z")
"""The trailing reference to a source map, which is not served."""

_PAGE_HEADERS = {
    "Cache-Control": "no-cache",
    "Content-Security-Policy": CONTENT_SECURITY_POLICY,
    "Referrer-Policy": "no-referrer",
    "X-Frame-Options": "DENY",
}
_ASSET_CACHE_CONTROL = "public, max-age=31536000, immutable"


@dataclass(frozen=True, slots=True)
class _Bundle:
    """Where Swagger UI's files are, and the version they are of."""

    directory: Traversable
    version: str


@cache
def _bundle() -> _Bundle:
    try:
        package = importlib.import_module("swagger_ui_bundle")
    except ImportError as error:
        raise RuntimeError(
            "The docs page needs the swagger-ui-bundle-v2 package: install it, "
            "or pass docs_path=None"
        ) from error
    directory: Traversable = package.swagger_ui_path
    return _Bundle(directory, directory.name.removeprefix("swagger-ui-"))


@cache
def _asset(name: str) -> bytes:
    """The contents of asset ``name`` (read once per process)."""
    if name == "docs.js":
        return _START_SCRIPT
    data = _bundle().directory.joinpath(name).read_bytes()
    return _SOURCE_MAP.sub(b"\n", data) if name.endswith((".js", ".css")) else data


def _tag() -> str:
    """Names the assets' contents: Swagger UI's version and the start script's digest."""
    digest = hashlib.sha256(_START_SCRIPT).hexdigest()[:8]
    return f"{_bundle().version}-{digest}"


class DocsPage:
    """The page at ``path`` over the document at ``openapi_path`` and its assets, as the
    responses to ``GET`` of each path it serves (:meth:`routes`)."""

    def __init__(self, path: str, openapi_path: str, title: Callable[[], str]) -> None:
        if not path.startswith("/") or path.rstrip("/") == "":
            raise ValueError(f"The docs path must start with / and name a path, not {path!r}")
        self.path = path.rstrip("/")
        if self.path == openapi_path:
            raise ValueError(f"The docs path {path!r} is the OpenAPI document's path")
        self.openapi_path = openapi_path
        self.assets_path = f"{self.path}/{_tag()}"
        self._title = title

    def routes(self) -> dict[str, Callable[[str], Response]]:
        """Every path served, with the function answering ``GET`` of it given the request's
        ``root_path``."""
        routes: dict[str, Callable[[str], Response]] = {
            self.path: self.page,
            self.path + "/": self.page,
        }
        for name in ASSETS:
            routes[f"{self.assets_path}/{name}"] = _asset_response(name)
        return routes

    def page(self, root_path: str = "") -> Response:
        """The HTML page, its links under ``root_path``."""
        body = _PAGE.format(
            title=html.escape(self._title()),
            assets=html.escape(root_path + self.assets_path),
            openapi=html.escape(root_path + self.openapi_path),
        )
        response = Response.ok().type("text/html; charset=utf-8").body(body.encode())
        for name, value in _PAGE_HEADERS.items():
            response.header(name, value)
        return response


def _asset_response(name: str) -> Callable[[str], Response]:
    media_type = ASSETS[name]

    def answer(root_path: str) -> Response:
        return (
            Response.ok()
            .type(media_type)
            .header("Cache-Control", _ASSET_CACHE_CONTROL)
            .body(_asset(name))
        )

    return answer
