"""``sdk.agents``: create, get, update, list, and the workspace files (list, read, put, upload),
with the summary fields the SDK parses."""

from __future__ import annotations

import re

from eigenpal import EigenpalClient
from eigenpal._generated.models.agent_summary import AgentSummary
from eigenpal._generated.models.agent_summary_config import AgentSummaryConfig
from eigenpal._generated.models.agent_summary_source_integrity import (
    AgentSummarySourceIntegrity,
)
from eigenpal._generated.models.agent_summary_stats import AgentSummaryStats
from eigenpal._generated.models.agents_files_put_response_200 import AgentsFilesPutResponse200
from eigenpal._generated.models.agents_files_upload_batch_response_200 import (
    AgentsFilesUploadBatchResponse200,
)
from eigenpal._generated.models.create_agent_response import CreateAgentResponse
from eigenpal._generated.models.get_agent_response import GetAgentResponse
from eigenpal._generated.models.patch_agent_response import PatchAgentResponse

from tests.agents.real_sdk.sdk_support import BINARY, b64, new_agent, value_of

SYSTEM_PROMPT = "You extract totals from supplier invoices.\nÜberall: 5 €.\n"


def _manifest(agent: AgentSummary) -> dict[str, object]:
    assert isinstance(agent.config, AgentSummaryConfig)
    return agent.config.additional_properties


def test_create_with_name_slug_description_and_a_config_with_an_api_trigger(
    sdk: EigenpalClient, unique: str
) -> None:
    slug = f"sdk-{unique}-full"
    config = {
        "entrypoint": ["python", "main.py"],
        "timeoutSeconds": 60,
        "triggers": {"api": {"enabled": True}},
    }

    created = sdk.agents.create(
        name=f"Invoice extractor {unique}",
        slug=slug,
        description="Extracts totals from supplier invoices.",
        config=config,
    )

    assert isinstance(created, CreateAgentResponse)
    agent = created.agent
    assert agent.id.startswith("agt_") and agent.slug == slug
    assert agent.name == f"Invoice extractor {unique}"
    assert agent.description == "Extracts totals from supplier invoices."
    manifest = _manifest(agent)
    assert manifest["entrypoint"] == ["python", "main.py"]
    assert manifest["timeoutSeconds"] == 60
    assert manifest["triggers"] == {"api": {"enabled": True}}
    assert isinstance(agent.created_at, str) and isinstance(agent.updated_at, str)
    assert isinstance(agent.stats, AgentSummaryStats)
    assert agent.stats.total_executions == 0


def test_a_config_of_only_an_api_trigger_gets_the_default_entrypoint_and_runs(
    sdk: EigenpalClient, unique: str
) -> None:
    slug = f"sdk-{unique}-trigger"

    created = sdk.agents.create(
        name=slug, slug=slug, config={"triggers": {"api": {"enabled": True}}}
    )

    manifest = _manifest(created.agent)
    assert manifest["entrypoint"] == ["python", "main.py"]
    assert manifest["triggers"] == {"api": {"enabled": True}}
    answer = sdk.agents.run(slug, {"customer": "ACME"}, wait_for_completion=30)
    assert value_of(answer.status) == "completed"
    assert answer.output == {"echo": {"customer": "ACME"}}  # the starter program


def test_the_summary_reports_source_integrity_latest_version_commit_and_credits(
    sdk: EigenpalClient, unique: str
) -> None:
    slug = new_agent(sdk, unique)

    agent = sdk.agents.get(slug).agent

    assert agent.source_integrity == AgentSummarySourceIntegrity.HEALTHY
    assert agent.latest_version is None
    assert isinstance(agent.latest_commit, str)
    assert re.fullmatch(r"[0-9a-f]{64}", agent.latest_commit), agent.latest_commit
    assert isinstance(agent.stats, AgentSummaryStats)
    assert agent.stats.avg_credits is None
    listed = sdk.agents.list(search=slug).data
    assert [(a.slug, a.source_integrity, a.latest_version) for a in listed] == [
        (slug, AgentSummarySourceIntegrity.HEALTHY, None)
    ]
    assert listed[0].latest_commit == agent.latest_commit


def test_source_is_missing_while_the_entrypoint_script_is_absent(
    sdk: EigenpalClient, unique: str
) -> None:
    slug = f"sdk-{unique}-missing"

    created = sdk.agents.create(
        name=slug, slug=slug, config={"entrypoint": ["python", "missing.py"]}
    ).agent

    assert created.source_integrity == AgentSummarySourceIntegrity.SOURCE_MISSING
    assert sdk.agents.get(slug).agent.source_integrity == (
        AgentSummarySourceIntegrity.SOURCE_MISSING
    )
    sdk.agents.put_file(slug, "missing.py", content_base64=b64(b"print('here now')\n"))
    assert sdk.agents.get(slug).agent.source_integrity == AgentSummarySourceIntegrity.HEALTHY


def test_get_with_files_and_dataset_included(sdk: EigenpalClient, unique: str) -> None:
    slug = new_agent(sdk, unique)
    agent_id = sdk.agents.get(slug).agent.id

    by_slug = sdk.agents.get(slug, include="files,dataset")
    by_id = sdk.agents.get(agent_id, include="files,dataset")

    assert isinstance(by_slug, GetAgentResponse)
    assert (by_slug.agent.id, by_slug.agent.slug) == (agent_id, slug)
    assert by_id.agent.slug == slug


def test_list_searches_and_pages_newest_first(sdk: EigenpalClient, unique: str) -> None:
    slugs = [f"sdk-{unique}-list-{n}" for n in range(3)]
    for slug in slugs:
        sdk.agents.create(name=f"Lister {slug}", slug=slug)

    found = sdk.agents.list(search=f"{unique}-list")
    page = sdk.agents.list(search=f"{unique}-LIST", limit=1, offset=1)

    assert [agent.slug for agent in found.data] == slugs[::-1]
    assert found.total == 3
    assert [agent.slug for agent in page.data] == [slugs[1]]
    assert (page.total, page.limit, page.offset) == (3, 1, 1)
    assert sdk.agents.list(search=f"nothing-{unique}").total == 0


def test_update_changes_name_description_and_config(sdk: EigenpalClient, unique: str) -> None:
    slug = new_agent(sdk, unique)

    updated = sdk.agents.update(
        slug,
        name=f"Renamed {unique}",
        description="Now with a description.",
        config={"entrypoint": ["python", "main.py"], "timeoutSeconds": 30},
    )

    assert isinstance(updated, PatchAgentResponse)
    assert updated.agent.name == f"Renamed {unique}"
    assert updated.agent.description == "Now with a description."
    assert _manifest(updated.agent)["timeoutSeconds"] == 30
    again = sdk.agents.get(slug).agent
    assert (again.name, again.description) == (f"Renamed {unique}", "Now with a description.")
    assert _manifest(again)["timeoutSeconds"] == 30
    only_name = sdk.agents.update(slug, name=f"Once more {unique}").agent
    assert only_name.description == "Now with a description."  # what is not sent stays


def test_upload_files_then_list_them_whole_and_under_a_prefix(
    sdk: EigenpalClient, unique: str
) -> None:
    slug = new_agent(sdk, unique)

    uploaded = sdk.agents.upload_files(
        slug,
        [
            {"path": "prompts/system.md", "content": SYSTEM_PROMPT},
            {"path": "assets/logo.bin", "contentBase64": b64(BINARY)},
        ],
    )

    assert isinstance(uploaded, AgentsFilesUploadBatchResponse200)
    assert uploaded.ok is True
    assert sorted(uploaded.files) == ["assets/logo.bin", "prompts/system.md"]
    listing = sdk.agents.list_files(slug)
    sizes = {entry["path"]: entry["sizeBytes"] for entry in listing["files"]}
    assert set(sizes) == {"agent.json", "main.py", "assets/logo.bin", "prompts/system.md"}
    assert sizes["assets/logo.bin"] == len(BINARY)
    assert sizes["prompts/system.md"] == len(SYSTEM_PROMPT.encode())
    under = sdk.agents.list_files(slug, prefix="prompts/")
    assert [entry["path"] for entry in under["files"]] == ["prompts/system.md"]


def test_put_file_writes_base64_content_the_next_run_uses(sdk: EigenpalClient, unique: str) -> None:
    slug = new_agent(sdk, unique)
    program = (
        "import json, os, pathlib\n"
        "out = pathlib.Path(os.environ['AGENT_OUTPUT_DIR'])\n"
        "(out / 'output.json').write_text(json.dumps({'version': 2}))\n"
    )

    answer = sdk.agents.put_file(slug, "main.py", content_base64=b64(program.encode()))

    assert isinstance(answer, AgentsFilesPutResponse200)
    assert (answer.ok, answer.path) == (True, "main.py")
    assert sdk.agents.run(slug, {}, wait_for_completion=30).output == {"version": 2}


def test_list_files_with_path_reads_a_text_file_as_content(
    sdk: EigenpalClient, unique: str
) -> None:
    slug = new_agent(sdk, unique)
    sdk.agents.upload_files(slug, [{"path": "prompts/system.md", "content": SYSTEM_PROMPT}])

    file = sdk.agents.list_files(slug, path="prompts/system.md")

    assert isinstance(file, dict)
    assert file["path"] == "prompts/system.md"
    assert file["content"] == SYSTEM_PROMPT
    assert "contentBase64" not in file
    assert file["sizeBytes"] == len(SYSTEM_PROMPT.encode())
    assert isinstance(file["contentType"], str) and isinstance(file["updatedAt"], str)


def test_list_files_with_path_reads_a_binary_file_as_base64(
    sdk: EigenpalClient, unique: str
) -> None:
    slug = new_agent(sdk, unique)
    sdk.agents.put_file(slug, "assets/logo.bin", content_base64=b64(BINARY))

    file = sdk.agents.list_files(slug, path="assets/logo.bin")

    assert isinstance(file, dict)
    assert file["path"] == "assets/logo.bin"
    assert file["contentBase64"] == b64(BINARY)
    assert "content" not in file
    assert file["sizeBytes"] == len(BINARY)
    assert isinstance(file["updatedAt"], str)
