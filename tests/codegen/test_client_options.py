"""What the generator gives every client method: the per-call options, the raw-response twin,
and an ``iter_<method>`` exactly for the operations the paging rule (``codegen.clients.paging``,
specs/README.md) finds paged."""

from __future__ import annotations

import copy
import importlib
import inspect
from pathlib import Path
from typing import Any

import pytest
import yaml

from codegen.clients import client_tree, flatten, paging
from codegen.spec import load_api

SPECS = Path(__file__).resolve().parents[2] / "specs"
CLIENTS = {"agents": "ServiceClient", "rag": "RagClient", "ratelimit": "RatelimitClient"}
PAGED_AGENTS = {
    "agents.list": ("data", "models.AgentSummary", 200),
    "agents.executions.list": ("executions", "models.AgentExecutionSummary", 200),
    "workflows.list": ("data", "models.WorkflowSummary", 100),
    "workflows.versions": ("data", "models.WorkflowVersion", 100),
    "workflows.executions.list": ("data", "models.ExecutionSummary", 100),
    "webhooks.list": ("data", "models.Webhook", 100),
    "webhooks.list_deliveries": ("data", "models.WebhookDelivery", 100),
    "schedules.list": ("data", "models.Schedule", 200),
}


def _models(api: Any) -> dict[str, str]:
    return {name: name for name in api.schemas}


def test_the_paged_operations_are_the_offset_lists() -> None:
    found: dict[str, tuple[str, str, int]] = {}
    for name in CLIENTS:
        api = load_api(SPECS / f"{name}.openapi.yaml")
        for operation in api.operations:
            page = paging(operation, _models(api))
            if page is not None:
                assert page.total, operation.client_method
                found[operation.client_method] = (page.items, page.item_type, page.page_size)
    # rag's job list has a limit but no offset: one page, no iterator
    assert found == PAGED_AGENTS


@pytest.mark.parametrize(("package", "client"), CLIENTS.items())
@pytest.mark.parametrize("aio", [False, True])
def test_every_method_takes_the_per_call_options_and_has_a_raw_twin(
    package: str, client: str, aio: bool
) -> None:
    module = importlib.import_module(f"generated.{package}.client")
    cls = getattr(module, ("Async" if aio else "") + client)
    instance = cls(api_key="k", base_url="http://127.0.0.1:9")
    api = load_api(SPECS / f"{package}.openapi.yaml")
    tree = client_tree(api, _models(api), client)
    methods = [method for namespace in flatten(tree) for method in namespace.methods]
    for method in methods:
        target, raw = instance, instance.with_raw_response
        for part in method.dotted.split(".")[:-1]:
            target, raw = getattr(target, part), getattr(raw, part)
        parameters = inspect.signature(getattr(target, method.name)).parameters
        for option in ("timeout", "max_retries"):
            assert parameters[option].kind is inspect.Parameter.KEYWORD_ONLY
            assert parameters[option].default is None
        assert hasattr(raw, method.name) != method.streamed, method.dotted
        assert hasattr(target, f"iter_{method.name}") == (method.page is not None)
    assert methods


def test_a_parameter_named_like_an_option_is_refused(tmp_path: Path) -> None:
    document = yaml.safe_load((SPECS / "agents.openapi.yaml").read_text(encoding="utf-8"))
    edited = copy.deepcopy(document)
    operation = edited["paths"]["/api/v1/agents"]["get"]
    operation["parameters"].append(
        {"name": "timeout", "in": "query", "schema": {"type": "integer", "maximum": 9}}
    )
    spec = tmp_path / "agents.openapi.yaml"
    spec.write_text(yaml.safe_dump(edited), encoding="utf-8")
    api = load_api(spec)
    with pytest.raises(ValueError, match="list_agents: parameter 'timeout' would shadow"):
        client_tree(api, _models(api), "ServiceClient")


def test_an_operation_named_like_an_iterator_is_refused(tmp_path: Path) -> None:
    document = yaml.safe_load((SPECS / "agents.openapi.yaml").read_text(encoding="utf-8"))
    edited = copy.deepcopy(document)
    listing = copy.deepcopy(edited["paths"]["/api/v1/agents"]["get"])
    listing.update(operationId="iterate_agents", **{"x-client-method": "agents.iter_list"})
    edited["paths"]["/api/v1/agents/iterate"] = {"get": listing}
    spec = tmp_path / "agents.openapi.yaml"
    spec.write_text(yaml.safe_dump(edited), encoding="utf-8")
    api = load_api(spec)
    with pytest.raises(ValueError, match=r"agents\.list: iter_list is already a method"):
        client_tree(api, _models(api), "ServiceClient")
