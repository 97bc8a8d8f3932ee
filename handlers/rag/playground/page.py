"""The playground page and its fixed set of files, as the responses to ``GET`` of each path.

The page (``index.html``), its style sheet and its script are this package's data files, read
once, each at most :data:`MAX_FILE_BYTES`. Like webrest's docs page (:mod:`webrest.docs`),
no file is ever looked up by a name from the request: the paths served are the keys of
:meth:`PlaygroundPage.routes`, built from :data:`FILES`, so no path can reach another file.
The style sheet and the script are served under ``/playground/<tag>/`` where ``<tag>`` is a
digest of their contents (browsers keep them for a year); the page itself is not cached.

The page's ``Content-Security-Policy`` allows scripts, styles and requests from its own origin
only, no inline script or style, no frames, no plugins, and requires Trusted Types with no
policy: a script that tried to write HTML into the page (``innerHTML`` and the like) would be
refused by the browser. Everything the script shows from the server is set as text.
"""

from __future__ import annotations

import hashlib
import html
from collections.abc import Callable
from functools import cache
from importlib import resources
from string import Template

from webrest.response import Response

__all__ = ["ASSETS_PREFIX", "CONTENT_SECURITY_POLICY", "FILES", "MAX_FILE_BYTES", "PlaygroundPage"]

FILES: dict[str, str] = {
    "playground.js": "text/javascript; charset=utf-8",
    "playground.css": "text/css; charset=utf-8",
}
"""The files served beside the page, by name, with their media types (the page's template,
``index.html``, is served at the page's own path)."""

PAGE_TEMPLATE = "index.html"
MAX_FILE_BYTES = 256 * 1024
"""Largest data file the page may have: a larger one is a packaging mistake, refused at start."""

ASSETS_PREFIX = "/playground"
"""Where the page's files are served: ``/playground/<tag>/<name>``."""

CONTENT_SECURITY_POLICY = (
    "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self' data:; "
    "connect-src 'self'; base-uri 'none'; form-action 'none'; frame-ancestors 'none'; "
    "require-trusted-types-for 'script'; trusted-types 'none'"
)
"""The page's policy: its own origin only, no inline code, no HTML written from script."""

_PAGE_HEADERS = {
    "Cache-Control": "no-cache",
    "Content-Security-Policy": CONTENT_SECURITY_POLICY,
    "Cross-Origin-Opener-Policy": "same-origin",
    "Referrer-Policy": "no-referrer",
    "X-Frame-Options": "DENY",
}
_ASSET_HEADERS = {
    "Cache-Control": "public, max-age=31536000, immutable",
    "Content-Security-Policy": CONTENT_SECURITY_POLICY,
}


@cache
def read_file(name: str) -> bytes:
    """The contents of the package's data file ``name`` (read once per process); a file over
    :data:`MAX_FILE_BYTES` is refused (``RuntimeError``)."""
    if name != PAGE_TEMPLATE and name not in FILES:
        raise KeyError(name)
    with resources.files(__package__ or __name__).joinpath(name).open("rb") as file:
        data = file.read(MAX_FILE_BYTES + 1)
    if len(data) > MAX_FILE_BYTES:
        raise RuntimeError(f"The playground's {name} is over {MAX_FILE_BYTES} bytes")
    return data


def _tag() -> str:
    """Names the files' contents: changes whenever one of them does."""
    digest = hashlib.sha256()
    for name in sorted(FILES):
        digest.update(read_file(name))
    return digest.hexdigest()[:12]


class PlaygroundPage:
    """The page at ``path`` (``/`` by default) calling the API under the request's root path,
    and its files, as the answers to ``GET`` of each path it serves (:meth:`routes`)."""

    def __init__(self, path: str = "/") -> None:
        if not path.startswith("/"):
            raise ValueError(f"The playground path must start with /, not {path!r}")
        self.path = path
        self.assets_path = f"{ASSETS_PREFIX}/{_tag()}"
        self._template = Template(read_file(PAGE_TEMPLATE).decode("utf-8"))

    def routes(self) -> dict[str, Callable[[str], Response]]:
        """Every path served, with the function answering ``GET`` of it given the request's
        ``root_path``."""
        routes: dict[str, Callable[[str], Response]] = {self.path: self.page}
        for name in FILES:
            routes[f"{self.assets_path}/{name}"] = _file_response(name)
        return routes

    def page(self, root_path: str = "") -> Response:
        """The HTML page, its links and its API calls under ``root_path``."""
        body = self._template.substitute(
            assets=html.escape(root_path + self.assets_path),
            api=html.escape(root_path),
        )
        response = Response.ok().type("text/html; charset=utf-8").body(body.encode())
        for name, value in _PAGE_HEADERS.items():
            response.header(name, value)
        return response


def _file_response(name: str) -> Callable[[str], Response]:
    media_type = FILES[name]
    data = read_file(name)

    def answer(root_path: str) -> Response:
        response = Response.ok().type(media_type).body(data)
        for header, value in _ASSET_HEADERS.items():
            response.header(header, value)
        return response

    return answer
