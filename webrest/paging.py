"""Paging: which page of a collection a request asks for, and ``Link`` headers to the others.

A port of upstream's ``web.rest.paging``: ``Paging(size, [PageParameters("page", "per_page")])``
is configured once; ``paging.on(request)`` reads the request into a :class:`Pagination`, whose
offsets select the elements and whose :meth:`~Pagination.paginate` turns them into the
response, with an RFC 8288 ``Link`` header::

    paging = Paging(20, max_size=100)

    @Get("/")
    def list_users(self, request: Request) -> Response:
        pagination = paging.on(request)  # 400 for ?page=0, ?per_page=x
        users = store.select(offset=pagination.start(), limit=pagination.limit() + 1)
        return pagination.paginate(users, total=store.count())

    # Link: <http://host/users?page=1>; rel="first", <http://host/users?page=1>; rel="prev",
    #       <http://host/users?page=3>; rel="next", <http://host/users?page=7>; rel="last"
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Iterator, Mapping, Sequence
from itertools import islice
from typing import Protocol
from urllib.parse import quote, unquote_plus

from starlette.datastructures import URL
from starlette.types import Scope

from webrest.errors import BadRequest, ErrorDetail
from webrest.request import Request
from webrest.response import Response

__all__ = ["Behavior", "LinkHeader", "PageParameters", "Pagination", "Paging"]

_POSITIVE = re.compile(r"[0-9]{1,18}\Z")  # at most 18 digits: an offset stays a machine int
_PATH_SAFE = "/!$&'()*+,;=:@-._~"
_QUERY_SAFE = "/?!$&'()*+,;=:@-._~%"  # a query part as received, only < > " space etc. escaped


class LinkHeader:
    """An RFC 8288 ``Link`` header value: URIs by relation, ``<uri>; rel="next", ...``.

    Relations without a URI (``None``) are left out; ``bool(header)`` says whether any is left.
    """

    __slots__ = ("links",)

    def __init__(self, links: Mapping[str, str | None]) -> None:
        self.links: dict[str, str] = {rel: uri for rel, uri in links.items() if uri}

    def __bool__(self) -> bool:
        return bool(self.links)

    def __str__(self) -> str:
        return ", ".join(f'<{uri}>; rel="{rel}"' for rel, uri in self.links.items())

    def __eq__(self, other: object) -> bool:
        return isinstance(other, LinkHeader) and other.links == self.links

    def __hash__(self) -> int:
        return hash(str(self))

    def __repr__(self) -> str:
        return f"LinkHeader({self.links!r})"


class Behavior(Protocol):
    """How requests name a page, as offsets: :class:`PageParameters` is the one built in.

    ``limit`` is the page size the request asks for (``size`` when it asks for none);
    :class:`Pagination` caps it, and passes the capped value to ``start`` and ``links``.
    Invalid values raise :class:`webrest.BadRequest`.
    """

    def paginates(self, request: Request) -> bool:
        """Whether this behaviour applies to the request."""
        ...

    def limit(self, request: Request, size: int) -> int:
        """The requested number of elements per page, ``size`` by default."""
        ...

    def start(self, request: Request, limit: int) -> int:
        """The offset of the page's first element."""
        ...

    def links(
        self, request: Request, start: int, limit: int, more: bool, total: int | None
    ) -> LinkHeader:
        """Links to the other pages; ``more`` says whether elements follow this page, and
        ``total`` is the size of the whole collection when known."""
        ...


class PageParameters:
    """Page number and page size in query parameters: ``?page=3&per_page=50``.

    Without the page parameter the request is for the first page; without the size parameter
    the :class:`Paging` size applies. Both must be positive integers (else 400). Links keep the
    request's other query parameters, and set the page (and the size, when the request gave
    one) on the request's absolute URI.
    """

    __slots__ = ("page", "per_page")

    def __init__(self, page: str = "page", per_page: str = "per_page") -> None:
        self.page = page
        self.per_page = per_page

    def paginates(self, request: Request) -> bool:
        """Always: a request without the parameters is for the first page."""
        return True

    def limit(self, request: Request, size: int) -> int:
        return _positive(request, self.per_page, size)

    def start(self, request: Request, limit: int) -> int:
        return (_positive(request, self.page, 1) - 1) * limit

    def links(
        self, request: Request, start: int, limit: int, more: bool, total: int | None
    ) -> LinkHeader:
        page = start // limit + 1
        last = max(1, -(-total // limit)) if total is not None else None
        links: dict[str, str | None] = {}
        if page > 1:
            previous = page - 1 if last is None else min(page - 1, last)  # beyond the end: last
            links["first"] = self.uri(request, 1, limit)
            links["prev"] = self.uri(request, previous, limit)
        if more:
            links["next"] = self.uri(request, page + 1, limit)
        if last is not None and page < last:
            links["last"] = self.uri(request, last, limit)
        return LinkHeader(links)

    def uri(self, request: Request, page: int, limit: int) -> str:
        """The request's absolute URI for ``page``; other query parameters are kept as sent."""
        changes = {self.page: str(page)}
        if self.per_page in request.query_params:
            changes[self.per_page] = str(limit)  # the capped size, when the request asked more
        scope = request.scope
        query = _replace_query(scope.get("query_string", b"").decode("latin-1"), changes)
        return _origin(scope) + quote(scope["path"], safe=_PATH_SAFE) + "?" + query


class Pagination:
    """One request's page: its offsets and size, and :meth:`paginate` to answer with it.

    Made by :meth:`Paging.on`, which has validated the request's parameters already.
    """

    __slots__ = ("_limit", "_start", "behavior", "request")

    def __init__(
        self, request: Request, behavior: Behavior, size: int, max_size: int | None = None
    ) -> None:
        limit = behavior.limit(request, size)
        self.request = request
        self.behavior = behavior
        self._limit = min(limit, max_size) if max_size is not None else limit
        self._start = behavior.start(request, self._limit)

    def start(self) -> int:
        """The offset of the page's first element: ``(page - 1) * limit``."""
        return self._start

    def end(self) -> int:
        """The offset after the page's last element: ``start + limit``."""
        return self._start + self._limit

    def limit(self) -> int:
        """The number of elements on a page: the request's (capped) size or the default."""
        return self._limit

    def paginate(
        self, items: Iterable[object], status: int | Response = 200, *, total: int | None = None
    ) -> Response:
        """The response with this page of ``items``, and a ``Link`` header to the other pages.

        ``items`` are the collection's elements from :meth:`start` on: a list is cut to
        :meth:`limit`, an iterator (a generator, a database cursor) is read for at most
        ``limit + 1`` elements and closed. An element beyond the page means there is a next
        page; ``total``, the size of the whole collection, also tells and adds a ``last``
        link. ``status`` is the response's status, or the response to fill.
        """
        limit = self._limit
        if isinstance(items, Sequence):
            elements = list(items[:limit])
            more = len(items) > limit
        else:
            iterator: Iterator[object] = iter(items)
            try:
                elements = list(islice(iterator, limit))
                more = next(iterator, _END) is not _END
            finally:
                close = getattr(iterator, "close", None)
                if close is not None:
                    close()
        if total is not None and self._start + limit < total:
            more = True
        response = status if isinstance(status, Response) else Response.status(status)
        response.entity(elements)
        links = self.behavior.links(self.request, self._start, limit, more, total)
        if links:
            response.header("Link", str(links))
        return response

    def __repr__(self) -> str:
        return f"Pagination(start={self._start}, limit={self._limit})"


class Paging:
    """Paging of a collection: ``size`` elements a page unless the request asks for another
    size, which is capped at ``max_size``; ``behaviors`` (default: ``PageParameters("page",
    "per_page")``) are how requests name pages, the first that applies is used."""

    __slots__ = ("behaviors", "max_size", "size")

    def __init__(
        self, size: int = 20, behaviors: Sequence[Behavior] = (), *, max_size: int = 100
    ) -> None:
        if not 1 <= size <= max_size:
            raise ValueError(f"The page size {size} is not between 1 and max_size={max_size}")
        self.size = size
        self.max_size = max_size
        self.behaviors: tuple[Behavior, ...] = tuple(behaviors) or (PageParameters(),)

    def on(self, request: Request) -> Pagination:
        """The page the request asks for; :class:`webrest.BadRequest` when its parameters are
        invalid, ``LookupError`` when no behaviour applies to it."""
        for behavior in self.behaviors:
            if behavior.paginates(request):
                return Pagination(request, behavior, self.size, self.max_size)
        raise LookupError("No paging behavior applies to the request")


_END = object()


def _positive(request: Request, name: str, default: int) -> int:
    """The query parameter ``name`` (its last value) as a positive integer, or ``default``."""
    raw = request.query_params.get(name)
    if raw is None:
        return default
    if _POSITIVE.match(raw) is None:
        message = "Input should be a valid integer, unable to parse string as an integer"
        kind = "int_parsing"
    elif int(raw) < 1:
        message, kind = "Input should be greater than or equal to 1", "greater_than_equal"
    else:
        return int(raw)
    detail = ErrorDetail(("query", name), message, kind, raw)
    raise BadRequest(f"Invalid argument {name} (query): {message}", [detail])


def _origin(scope: Scope) -> str:
    """``scheme://host[:port]`` of the request, as Starlette's ``request.url`` has it (which
    itself fails on a query string that is not UTF-8)."""
    url = URL(
        scope={
            "scheme": scope.get("scheme", "http"),
            "server": scope.get("server"),
            "path": "",
            "headers": scope["headers"],
        }
    )
    return f"{url.scheme}://{url.netloc}"


def _replace_query(query: str, changes: Mapping[str, str]) -> str:
    """``query`` with each parameter in ``changes`` set once (where it first was, or at the
    end); the other parameters are kept as sent, in their order."""
    parts: list[str] = []
    placed: set[str] = set()
    for part in query.split("&"):
        if not part:
            continue
        name = unquote_plus(part.partition("=")[0])
        if name in changes:
            if name not in placed:
                parts.append(f"{quote(name, safe='')}={quote(changes[name], safe='')}")
                placed.add(name)
            continue
        parts.append(quote(part, safe=_QUERY_SAFE, encoding="latin-1"))
    for name, value in changes.items():
        if name not in placed:
            parts.append(f"{quote(name, safe='')}={quote(value, safe='')}")
    return "&".join(parts)
