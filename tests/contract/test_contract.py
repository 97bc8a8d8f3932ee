"""Contract fuzzing: every operation of every spec, against the generated routes.

Every spec runs against its service's real handlers: rag and ratelimit in-process over ASGI
(tests/contract/implementations.py), agents as the real ``agents-server`` on a loopback port
(SQLite in a temporary directory, executions run by its own worker), so that runs really
execute. schemathesis runs its examples, coverage, fuzzing and stateful phases with every
check enabled, and openapi-core validates each response against the spec as a second,
independent judge.
"""

from __future__ import annotations

import shutil
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
import schemathesis
from hypothesis import HealthCheck, Phase, settings
from schemathesis import GenerationMode
from schemathesis.specs.openapi.checks import negative_data_rejection, positive_data_acceptance

from generated.ratelimit.routes import create_app as create_ratelimit_app
from tests.agents.support import RunningServer
from tests.contract.implementations import agents_server, rag_app, ratelimit_handlers
from tests.contract.openapi_check import ResponseChecker

SPECS = Path(__file__).resolve().parents[2] / "specs"

AGENTS = agents_server()
"""The agents server of the examples, coverage and fuzzing phases (the stateful scenarios each
get their own, :class:`AgentsStateMachine`)."""
KEYS = {AGENTS.url: AGENTS.key("contract", scope_all=True, can_create_agents=True)}
"""Each server's key, by server URL."""


APPS: dict[str, Callable[[], Any]] = {
    "rag": rag_app,
    "ratelimit": lambda: create_ratelimit_app(ratelimit_handlers()),
}

FUZZ = settings(
    max_examples=40,
    deadline=None,
    suppress_health_check=list(HealthCheck),
    phases=[Phase.explicit, Phase.generate],
    derandomize=True,
)


def _schema(name: str) -> Any:
    if name == "agents":
        schema = schemathesis.openapi.from_url(f"{AGENTS.url}/openapi.json")
        schema.config.update(base_url=AGENTS.url)
        return schema
    return schemathesis.openapi.from_asgi("/openapi.json", APPS[name]())


SPEC_NAMES = ("agents", "rag", "ratelimit")


def _checker(name: str) -> ResponseChecker:
    return ResponseChecker(SPECS / f"{name}.openapi.yaml")


rag_schema = _schema("rag")
ratelimit_schema = _schema("ratelimit")
agents_schema = _schema("agents")
SCHEMAS = {"agents": agents_schema, "rag": rag_schema, "ratelimit": ratelimit_schema}
CHECKERS = {name: _checker(name) for name in SPEC_NAMES}

# Multipart bodies whose files are the form's extra parts (`additionalProperties: {type:
# string, format: binary}`). schemathesis gives a filename only to the parts of declared
# `properties` (schemathesis/specs/openapi/adapter/formdata.py), so it sends these files as
# plain fields, which the API rightly refuses (400, "Expected a file part"); the known
# limitation makes positive_data_acceptance fail there whatever the server does.
FILES_AS_EXTRA_PARTS = {"run_agent", "run_workflow", "create_ingestion_job"}
# Bodies the service checks beyond what JSON Schema can say, with the documented 400: a run's
# input against the agent's stored `inputSchema`, a workflow definition's YAML against the
# definition format (naming the line), an upload's paths against each other (distinct, none
# another's folder), a webhook's URL against the egress guard and its filters against the
# agents and workflows the key may see, and a schedule's cron expression, time zone, target
# (exactly one of agentId and workflowId) and input (against the target's).
CHECKED_BEYOND_SCHEMA = {
    # the manifest's JSON Schemas and concurrency key expression are checked (400 when invalid)
    "create_agent",
    "update_agent",
    "run_agent",
    "create_workflow",
    "release_workflow_version",
    "upload_agent_files",
    "create_webhook",
    "create_schedule",
    "update_schedule",
    # rag: the metadata filter's nesting depth, condition count and operators are checked
    # beyond its schema (422 naming where)
    "document_search",
    "generate",
}
# Uploads whose content the service must parse: a schema-valid file part (any bytes, any name)
# is rightly refused with the documented 422 when its format is unsupported or unreadable.
PARSED_UPLOADS = {"upload_document"}


@agents_schema.auth(refresh_interval=None)
class BearerKey:
    """Every agents request carries a key of the server it goes to (`ignored_auth` then probes
    each operation without it and with an invalid one, expecting 401)."""

    def get(self, case: Any, ctx: Any) -> str:
        return KEYS[SCENARIO_SERVER[0].url if SCENARIO_SERVER else AGENTS.url]

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
    operation_id = case.operation.definition.raw.get("operationId")
    if operation_id == "should_rate_limit":
        return [negative_data_rejection] if _protojson_integer_forms(case.body) else []
    excluded = []
    if operation_id in CHECKED_BEYOND_SCHEMA:
        excluded.append(positive_data_acceptance)
    if "multipart" in (case.media_type or ""):
        # Form values are strings on the wire: a generated `false` for a text field arrives as
        # "false", which the API rightly accepts; negative_data_rejection would call that a
        # miss.
        excluded.append(negative_data_rejection)
        if operation_id in FILES_AS_EXTRA_PARTS | PARSED_UPLOADS:
            excluded.append(positive_data_acceptance)
    return excluded


CASES: dict[str, int] = dict.fromkeys(SPEC_NAMES, 0)
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


SCENARIO_SERVER: list[RunningServer] = []
"""The server of the running stateful scenario, if one is running."""


class AgentsStateMachine(agents_schema.as_state_machine()):  # type: ignore[misc]
    """Chains operations through the spec's links (create → get → run → get execution →
    feedback → expected files, cancel, rerun), authenticated, every check enabled.

    Each scenario runs against a server of its own on empty storage (about 0.25 s to start and
    stop): hypothesis replays scenarios and requires a replay to get the same answers, so the
    slug a scenario created must not exist yet when it is replayed."""

    def setup(self) -> None:
        server = agents_server()
        KEYS[server.url] = server.key("contract", scope_all=True, can_create_agents=True)
        SCENARIO_SERVER.append(server)

    def teardown(self) -> None:
        server = SCENARIO_SERVER.pop()
        server.stop()
        shutil.rmtree(server.storage.data_dir, ignore_errors=True)

    def get_call_kwargs(self, case: Any) -> dict[str, Any]:
        return {"base_url": SCENARIO_SERVER[0].url}

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
    for spec in SPEC_NAMES:
        operations = len(list(SCHEMAS[spec].get_all_operations()))
        lines.append(
            f"{spec}: {operations} operations, {CASES[spec]} cases, "
            f"{CHECKERS[spec].checked} responses validated by openapi-core"
        )
    return lines


@pytest.mark.parametrize("spec", sorted(CHECKERS))
def test_every_operation_was_checked(spec: str) -> None:
    """Runs last in the module: every spec's cases ran and openapi-core validated them."""
    operations = len(list(SCHEMAS[spec].get_all_operations()))
    assert operations > 0
    assert CASES[spec] >= operations
    assert CHECKERS[spec].checked >= operations
