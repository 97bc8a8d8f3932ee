"""webrest: map annotated classes and methods to HTTP routes, as a plain ASGI application.

::

    @Resource("/users")
    class Users:
        @Get("/{id:[0-9]+}")
        def find(self, id: int) -> User: ...

        @Post()
        def create(self, user: NewUser) -> Response:
            return Response.created("/users/{id}", self.store(user).id)

    app = Application({"/users": RestApi(Users())})
"""

from __future__ import annotations

from webrest.api import Endpoint, RestApi
from webrest.application import DEFAULT_MAX_BODY_SIZE, Application
from webrest.asynchronous import Async
from webrest.conversions import Conversion, SeparatedBy
from webrest.declarations import (
    Delete,
    Get,
    Head,
    Options,
    Patch,
    Post,
    Put,
    Resource,
    RouteDeclaration,
    annotate,
)
from webrest.discovery import resource_classes, resources_in
from webrest.error_rendering import ErrorRenderer, default_error_renderer
from webrest.errors import BadRequest, ErrorDetail, HttpError, RegistrationError
from webrest.formats import Formats, JsonReader, JsonWriter, Reader, Writer, default_formats
from webrest.interception import Filter, FilterChain, Interceptor, Invocation, Target
from webrest.multipart import Multipart, Part
from webrest.negotiation import negotiate
from webrest.paging import LinkHeader, PageParameters, Pagination, Paging
from webrest.request import Request
from webrest.response import Response
from webrest.sources import Body, Entity, Header, Matrix, Param, Stream, Value
from webrest.transmission import DefaultHeaders, set_default_headers

__all__ = [
    "DEFAULT_MAX_BODY_SIZE",
    "Application",
    "Async",
    "BadRequest",
    "Body",
    "Conversion",
    "DefaultHeaders",
    "Delete",
    "Endpoint",
    "Entity",
    "ErrorDetail",
    "ErrorRenderer",
    "Filter",
    "FilterChain",
    "Formats",
    "Get",
    "Head",
    "Header",
    "HttpError",
    "Interceptor",
    "Invocation",
    "JsonReader",
    "JsonWriter",
    "LinkHeader",
    "Matrix",
    "Multipart",
    "Options",
    "PageParameters",
    "Pagination",
    "Paging",
    "Param",
    "Part",
    "Patch",
    "Post",
    "Put",
    "Reader",
    "RegistrationError",
    "Request",
    "Resource",
    "Response",
    "RestApi",
    "RouteDeclaration",
    "SeparatedBy",
    "Stream",
    "Target",
    "Value",
    "Writer",
    "annotate",
    "default_error_renderer",
    "default_formats",
    "negotiate",
    "resource_classes",
    "resources_in",
    "set_default_headers",
]
