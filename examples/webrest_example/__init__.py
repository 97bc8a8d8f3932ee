"""The webrest example application: users, their avatars and a monitoring API.

Run it with ``make run`` (``uvicorn examples.webrest_example.app:app``); the OpenAPI document
is served at ``/openapi.json``. Modeled on the upstream library's test fixtures (``Users``,
``Monitoring``), it exercises every feature of webrest: parameter sources and conversions,
``Response`` and ``Async``, formats, filters and interceptors, paging with ``Link`` headers
and resource discovery (``resources_in``).
"""

from __future__ import annotations

from examples.webrest_example.app import create_app

__all__ = ["create_app"]
