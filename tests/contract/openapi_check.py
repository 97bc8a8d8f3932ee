"""Validating responses against a spec with openapi-core (independently of schemathesis)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import yaml
from jsonschema_path import SchemaPath
from openapi_core import V30ResponseValidator
from openapi_core.templating.paths.exceptions import OperationNotFound
from openapi_core.testing import MockRequest, MockResponse

__all__ = ["ResponseChecker"]


class ResponseChecker:
    """Checks each (request, response) pair against the spec's documented responses."""

    def __init__(self, spec: Path) -> None:
        document: dict[str, Any] = yaml.safe_load(spec.read_text(encoding="utf-8"))
        # The app runs in-process at http://test: match paths whatever `servers` says.
        document["servers"] = [{"url": "/"}]
        self.document = document
        self.validator = V30ResponseValidator(SchemaPath.from_dict(document))
        self.checked = 0

    def check(
        self,
        method: str,
        path: str,
        status: int,
        content_type: str,
        body: bytes,
        headers: dict[str, str] | None = None,
    ) -> None:
        """Validate one response; requests to undocumented methods are schemathesis' to judge
        (it expects 405 there) and are skipped here."""
        request = MockRequest("http://test", method.lower(), path)
        try:
            found = self.validator.path_finder.find(method.lower(), f"http://test{path}")
        except OperationNotFound:
            return
        if not body and _empty_string_allowed(found.operation, status, content_type):
            # openapi-core reads an empty body as missing data; for a plain-text string schema
            # it is the empty string (a streamed answer whose model stopped at once).
            self.checked += 1
            return
        response = MockResponse(
            body, status_code=status, headers=headers or {}, content_type=content_type
        )
        self.validator.validate(request, response)
        self.checked += 1


def _empty_string_allowed(operation: SchemaPath, status: int, content_type: str) -> bool:
    """True when the documented ``text/plain`` response for ``status`` accepts ``""``."""
    if not content_type.startswith("text/plain"):
        return False
    responses = operation / "responses"
    key = str(status) if str(status) in responses else "default"
    if key not in responses or "content" not in responses / key:
        return False
    content = responses / key / "content"
    if "text/plain" not in content:
        return False
    schema = (content / "text/plain" / "schema").read_value()
    return (
        schema.get("type") == "string" and not schema.get("minLength") and "pattern" not in schema
    )
