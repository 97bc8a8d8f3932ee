"""Per-service installs: each service's third-party packages come with its extra.

``pip install 'contract-platform[ratelimit]'`` installs the rate limit service and nothing of
the others (no ML or database libraries); ``[rag]``, ``[agents]`` and ``[all]`` likewise. The
console scripts check their extra before importing the service, so a missing one is a clear
message naming the extra, not an ``ImportError`` traceback.
"""

from __future__ import annotations

import importlib.util
import sys

__all__ = ["DISTRIBUTION", "EXTRAS", "missing_modules", "require_extra"]

DISTRIBUTION = "contract-platform"

EXTRAS: dict[str, tuple[str, ...]] = {
    "ratelimit": (
        "grpc", "grpc_health", "google.protobuf", "redis", "watchfiles", "dns",
        "prometheus_client", "datadog", "opentelemetry.sdk",
    ),
    "rag": (
        "torch", "transformers", "numpy", "jinja2", "onnxruntime", "onnx", "lancedb", "pyarrow",
        "pypdf", "docx", "weaviate",
    ),
    "agents": ("sqlalchemy", "alembic", "psycopg", "jsonschema", "croniter", "grpc"),
}  # fmt: skip
"""The modules (import names) each extra brings, as the services import them."""


def missing_modules(extra: str) -> list[str]:
    """The modules of ``extra`` that cannot be imported here."""
    missing = []
    for module in EXTRAS[extra]:
        try:
            found = importlib.util.find_spec(module) is not None
        except (ImportError, ValueError):
            found = False
        if not found:
            missing.append(module)
    return missing


def require_extra(extra: str, program: str) -> None:
    """Exit (status 2) with how to install ``extra`` when any of its modules is missing."""
    missing = missing_modules(extra)
    if missing:
        print(
            f"{program}: the '{extra}' extra is not installed (missing: {', '.join(missing)}); "
            f"install it with: pip install '{DISTRIBUTION}[{extra}]'",
            file=sys.stderr,
        )
        raise SystemExit(2)
