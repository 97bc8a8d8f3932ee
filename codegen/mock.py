"""``python -m codegen.mock SPEC``: serve a spec's examples with connexion's mock mode.

For contract review before handlers exist: every operation answers with the example of its
documented success response (``make mock SPEC=specs/agents.openapi.yaml``); Swagger UI is at
``/ui/``. Requests are validated against the spec, so reviewers see its errors too.
"""

from __future__ import annotations

import argparse
import logging
import sys
from pathlib import Path
from typing import Any

__all__ = ["accept_any_token", "mock_app"]


def accept_any_token(token: str) -> dict[str, Any]:
    """The mock accepts any bearer token: it reviews contracts, not credentials."""
    return {"sub": "reviewer", "token": token}


def _example(operation: Any) -> tuple[int, str, Any] | None:
    """The first documented 2xx response with an example: status, media type, value."""
    for status, response in sorted(operation.responses.items(), key=lambda item: str(item[0])):
        if not str(status).startswith("2"):
            continue
        for media_type, media in (response.get("content") or {}).items():
            if "example" in media:
                return int(status), media_type, media["example"]
            for example in (media.get("examples") or {}).values():
                if "value" in example:
                    return int(status), media_type, example["value"]
        if not response.get("content"):
            return int(status), "", None
    return None


def mock_app(spec: Path) -> Any:
    """A connexion ``AsyncApp`` answering every operation of ``spec`` with its examples."""
    import json

    import yaml
    from connexion import AsyncApp
    from connexion.lifecycle import ConnexionResponse
    from connexion.mock import MockResolver

    class ExampleResolver(MockResolver):  # type: ignore[misc]  # connexion is untyped
        """Answers with the documented example in its own media type."""

        def mock_operation(self, operation: Any, *args: Any, **kwargs: Any) -> Any:
            found = _example(operation)
            if found is None:
                return "No example response documented for this operation", 501
            status, media_type, value = found
            if not media_type:
                return ConnexionResponse(status_code=status, body=b"")
            if isinstance(value, (str, bytes)) and not media_type.endswith("json"):
                body = value.encode() if isinstance(value, str) else value
            else:
                body = json.dumps(value).encode()
            return ConnexionResponse(status_code=status, content_type=media_type, body=body)

    document = yaml.safe_load(spec.read_text(encoding="utf-8"))
    for scheme in document.get("components", {}).get("securitySchemes", {}).values():
        if scheme.get("type") == "http" and scheme.get("scheme") == "bearer":
            scheme["x-bearerInfoFunc"] = f"{__name__}.accept_any_token"
    app = AsyncApp(__name__)
    app.add_api(document, resolver=ExampleResolver(mock_all=True), validate_responses=False)
    return app


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m codegen.mock", description=__doc__)
    parser.add_argument("spec", type=Path)
    parser.add_argument("--host", default="127.0.0.1")
    parser.add_argument("--port", type=int, default=8099)
    arguments = parser.parse_args(argv)
    if not arguments.spec.is_file():
        parser.error(f"no such spec: {arguments.spec}")
    import uvicorn

    logging.basicConfig(level=logging.INFO, format="%(message)s")
    uvicorn.run(mock_app(arguments.spec), host=arguments.host, port=arguments.port)
    return 0


if __name__ == "__main__":
    sys.exit(main())
