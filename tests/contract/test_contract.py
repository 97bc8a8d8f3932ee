"""Contract fuzzing: every operation of every spec, against the generated routes.

Each spec's generated application runs in-process with a test implementation of its handler
Protocol (tests/contract/implementations.py; agents: tests/contract/agents_contract.py, behind
a bearer-key filter). schemathesis runs its examples, coverage,
fuzzing and stateful phases with every check enabled, and openapi-core validates each
response against the spec as a second, independent judge.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
import schemathesis
from hypothesis import HealthCheck, Phase, settings
from schemathesis import GenerationMode
from schemathesis.specs.openapi.checks import negative_data_rejection, positive_data_acceptance

from codegen.runtime import envelope_renderer, request_id_filter
from generated.agents.routes import OPENAPI as AGENTS_OPENAPI
from generated.agents.routes import create_api as create_agents_api
from generated.ratelimit.routes import create_app as create_ratelimit_app
from tests.contract.agents_contract import API_KEY, AgentsContract, bearer_auth
from tests.contract.implementations import rag_app, ratelimit_handlers
from tests.contract.openapi_check import ResponseChecker
from webrest import Application

SPECS = Path(__file__).resolve().parents[2] / "specs"

AGENTS = AgentsContract()


def _agents_app() -> Application:
    """The generated agents API behind a bearer check: the generated ``create_app`` has no
    authentication (the service adds its own filter), and schemathesis' ``ignored_auth`` check
    expects operations declaring ``bearerAuth`` to refuse a missing or invalid key."""
    return Application(
        {"/": create_agents_api(AGENTS)},
        filters=[request_id_filter, bearer_auth],
        error_renderer=envelope_renderer,
        openapi=AGENTS_OPENAPI,
    )


APPS: dict[str, Callable[[], Any]] = {
    "rag": rag_app,
    "ratelimit": lambda: create_ratelimit_app(ratelimit_handlers()),
    "agents": _agents_app,
}

FUZZ = settings(
    max_examples=40,
    deadline=None,
    suppress_health_check=list(HealthCheck),
    phases=[Phase.explicit, Phase.generate],
    derandomize=True,
)


def _schema(name: str) -> Any:
    return schemathesis.openapi.from_asgi("/openapi.json", APPS[name]())


def _checker(name: str) -> ResponseChecker:
    return ResponseChecker(SPECS / f"{name}.openapi.yaml")


rag_schema = _schema("rag")
ratelimit_schema = _schema("ratelimit")
agents_schema = _schema("agents")
CHECKERS = {name: _checker(name) for name in APPS}

# Multipart bodies whose files are the form's extra parts (`additionalProperties: {type:
# string, format: binary}`). schemathesis gives a filename only to the parts of declared
# `properties` (schemathesis/specs/openapi/adapter/formdata.py), so it sends these files as
# plain fields, which the API rightly refuses (400, "Expected a file part"); the known
# limitation makes positive_data_acceptance fail there whatever the server does.
FILES_AS_EXTRA_PARTS = {"run_agent", "run_workflow"}
# Uploads whose content the service must parse: a schema-valid file part (any bytes, any name)
# is rightly refused with the documented 422 when its format is unsupported or unreadable.
PARSED_UPLOADS = {"upload_document"}


@agents_schema.auth()
class BearerKey:
    """Every agents request carries the key the test app accepts (`ignored_auth` then probes
    each operation without it and with an invalid one, expecting 401)."""

    def get(self, case: Any, ctx: Any) -> str:
        return API_KEY

    def set(self, case: Any, data: str, ctx: Any) -> None:
        case.headers = {**(case.headers or {}), "Authorization": f"Bearer {data}"}


# proto3 JSON (Go's protojson, which /json follows) reads an integer written as an integral
# float (`0.0`, `1e2`) or as a decimal string (`"7"`); JSON Schema's `integer` does not.
_PROTOJSON_INTEGERS = {"hitsAddend", "requestsPerUnit"}


def _protojson_integer_forms(value: object) -> bool:
    """Whether a body uses one of those integer forms (the API rightly accepts it)."""
    if isinstance(value, dict):
        for key, item in value.items():
            if key in _PROTOJSON_INTEGERS and (
                (isinstance(item, float) and item.is_integer())
                or (isinstance(item, str) and item.isdigit())
            ):
                return True
            if _protojson_integer_forms(item):
                return True
    elif isinstance(value, list):
        return any(_protojson_integer_forms(item) for item in value)
    return False


def _excluded(case: Any) -> list[Any]:
    if case.operation.definition.raw.get("operationId") == "should_rate_limit":
        return [negative_data_rejection] if _protojson_integer_forms(case.body) else []
    if "multipart" not in (case.media_type or ""):
        return []
    # Form values are strings on the wire: a generated `false` for a text field arrives as
    # "false", which the API rightly accepts; negative_data_rejection would call that a miss.
    excluded = [negative_data_rejection]
    if case.operation.definition.raw.get("operationId") in FILES_AS_EXTRA_PARTS | PARSED_UPLOADS:
        excluded.append(positive_data_acceptance)
    return excluded


CASES: dict[str, int] = dict.fromkeys(APPS, 0)
"""Cases run per spec (examples, coverage and fuzzing phases; stateful steps included)."""


def _call(case: Any, spec: str) -> None:
    CASES[spec] += 1
    response = case.call_and_validate(excluded_checks=_excluded(case))
    _check_with_openapi_core(case, response, spec)


def _check_with_openapi_core(case: Any, response: Any, spec: str) -> None:
    headers = {name: values[0] for name, values in response.headers.items() if values}
    CHECKERS[spec].check(
        case.method,
        case.formatted_path,
        response.status_code,
        headers.get("content-type", ""),
        response.content,
        headers,
    )


@rag_schema.parametrize()
@FUZZ
def test_rag(case: Any) -> None:
    _call(case, "rag")


@ratelimit_schema.parametrize()
@FUZZ
def test_ratelimit(case: Any) -> None:
    _call(case, "ratelimit")


@agents_schema.parametrize()
@FUZZ
def test_agents(case: Any) -> None:
    _call(case, "agents")


# Scenarios send valid data, so that chains reach the executions' operations; invalid data is
# test_agents' part (its negative cases).
agents_schema.config.phases.stateful.generation.update(modes=[GenerationMode.POSITIVE])


class AgentsStateMachine(agents_schema.as_state_machine()):  # type: ignore[misc]
    """Chains operations through the spec's links (create → get → run → get execution →
    feedback → expected files, cancel, rerun), authenticated, every check enabled."""

    def setup(self) -> None:
        AGENTS.reset()  # each scenario from the seed: a replayed scenario gets the same answers

    def validate_response(
        self, response: Any, case: Any, additional_checks: Any = None, **kwargs: Any
    ) -> None:
        CASES["agents"] += 1
        case.validate_response(
            response,
            additional_checks=additional_checks,
            excluded_checks=_excluded(case),
            transport_kwargs=kwargs or None,
            recorder=self.recorder,
        )
        _check_with_openapi_core(case, response, "agents")


TestAgentsStateful = AgentsStateMachine.TestCase
TestAgentsStateful.settings = settings(
    max_examples=100,
    stateful_step_count=10,
    deadline=None,
    suppress_health_check=list(HealthCheck),
    derandomize=True,
)


def report() -> list[str]:
    """One line per spec: operations, cases run, responses openapi-core validated."""
    lines = []
    for spec in sorted(APPS):
        operations = len(list(_schema(spec).get_all_operations()))
        lines.append(
            f"{spec}: {operations} operations, {CASES[spec]} cases, "
            f"{CHECKERS[spec].checked} responses validated by openapi-core"
        )
    return lines


@pytest.mark.parametrize("spec", sorted(CHECKERS))
def test_every_operation_was_checked(spec: str) -> None:
    """Runs last in the module: every spec's cases ran and openapi-core validated them."""
    operations = len(list(_schema(spec).get_all_operations()))
    assert operations > 0
    assert CASES[spec] >= operations
    assert CHECKERS[spec].checked >= operations
