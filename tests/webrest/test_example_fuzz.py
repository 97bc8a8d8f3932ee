"""Fuzzing the example application against its own generated OpenAPI document."""

from __future__ import annotations

import atexit
import shutil
import tempfile
from collections import Counter
from pathlib import Path
from typing import Any

import pytest
import schemathesis
from hypothesis import HealthCheck, settings
from schemathesis.checks import CheckFunction
from schemathesis.specs.openapi.checks import negative_data_rejection
from starlette.types import Receive, Scope, Send

from examples.webrest_example.app import create_app
from webrest import Application


class Fresh:
    """The example application, made anew by :meth:`reset` so that every stateful run starts
    from the same users (hypothesis replays runs and needs them to behave the same)."""

    def __init__(self) -> None:
        self.root = Path(tempfile.mkdtemp(prefix="webrest-fuzz-"))
        atexit.register(shutil.rmtree, self.root, ignore_errors=True)
        self.app: Application = create_app(storage=self.root / "avatars")

    def reset(self) -> None:
        shutil.rmtree(self.root / "avatars", ignore_errors=True)
        self.app = create_app(storage=self.root / "avatars")

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        await self.app(scope, receive, send)


fresh = Fresh()
schema = schemathesis.openapi.from_asgi("/openapi.json", fresh)


@schema.hook
def filter_query(ctx: schemathesis.HookContext, query: dict[str, object] | None) -> bool:
    """Skip negative query values that are valid once on the wire, which schemathesis would
    report as accepted invalid data:

    * a scalar for an array parameter: ``ids=5`` is the list ``[5]``;
    * the list ``[""]``: with ``explode: false`` it is sent as ``?roles=``, like the empty
      list, and webrest (like upstream) reads that as ``[]``;
    * several values for a scalar parameter (a list, or an object's keys):
      ``?count=x&count=1.0`` is read as its last value, as Starlette and FastAPI do, and
      pydantic's lax mode reads ``"1.0"`` as ``1``.
    """
    if not query or ctx.operation is None:
        return True
    arrays = {p.name for p in ctx.operation.query if p.definition["schema"].get("type") == "array"}
    for name, value in query.items():
        if name in arrays and (not isinstance(value, list) or value == [""]):
            return False
        if name not in arrays and isinstance(value, (list, dict)) and len(value) > 1:
            return False
    return True


def excluded(case: schemathesis.Case) -> list[CheckFunction]:
    """Form values are strings on the wire: a generated ``false`` for a string field arrives as
    ``"false"`` and is rightly accepted, so negative multipart data is not judged."""
    return [negative_data_rejection] if "multipart/form-data" in (case.media_type or "") else []


CASES: Counter[str] = Counter()
STEPS: Counter[str] = Counter()


@schema.parametrize()
@settings(max_examples=50, suppress_health_check=list(HealthCheck), deadline=None)
def test_api(case: schemathesis.Case) -> None:
    CASES[case.operation.label] += 1
    case.call_and_validate(excluded_checks=excluded(case))


class Workflow(schema.as_state_machine()):  # type: ignore[misc]
    """Sequences of calls linked by the responses' values (a created user's id...)."""

    def setup(self) -> None:
        fresh.reset()

    def call(self, case: schemathesis.Case, **kwargs: Any) -> schemathesis.Response:
        STEPS[case.operation.label] += 1
        response: schemathesis.Response = super().call(case, **kwargs)
        return response

    def validate_response(
        self,
        response: schemathesis.Response,
        case: schemathesis.Case,
        additional_checks: list[CheckFunction] | None = None,
        **kwargs: Any,
    ) -> None:
        case.validate_response(
            response,
            additional_checks=additional_checks,
            excluded_checks=excluded(case),
            transport_kwargs=kwargs or None,
            recorder=self.recorder,
        )


TestStateful = Workflow.TestCase
TestStateful.settings = settings(
    max_examples=30, stateful_step_count=8, suppress_health_check=list(HealthCheck), deadline=None
)


def test_summary(capsys: pytest.CaptureFixture[str]) -> None:
    """How much was fuzzed (this runs last: pytest keeps the order of the file)."""
    operations = [result.ok().label for result in schema.get_all_operations()]
    assert len(operations) == 17
    with capsys.disabled():
        print(
            f"\nfuzzed {len(set(CASES))} of {len(operations)} operations with"
            f" {sum(CASES.values())} cases, and {sum(STEPS.values())} stateful calls"
            f" over {len(set(STEPS))} operations"
        )
