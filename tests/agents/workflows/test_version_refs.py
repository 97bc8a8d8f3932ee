"""Which version a workflow run runs (``version``: ``latest``, a version id ``wfh_…`` or a
release tag such as ``1.0.0`` or ``2.1.0-rc.1``), release tags the API refuses, and the wire
shape of run answers; through the real server, on SQLite and PostgreSQL."""

from __future__ import annotations

import pytest

from generated.agents.client import (
    ServiceClient,
    ServiceConflictError,
    ServiceNotFoundError,
    ServiceValidationError,
)
from tests.agents.run_support import issues
from tests.agents.workflows.api_support import create, run_status, summary_of


def _constant(slug: str, value: str) -> str:
    """A workflow whose result is ``value``."""
    return (
        f"name: {slug}\nsteps:\n  - id: only\n    type: transform\n    value: {value}\n"
        "result: ${{ steps.only.output }}\n"
    )


def _ran(client: ServiceClient, slug: str, version: str | None) -> tuple[object, object]:
    """The result of a waited run of ``version`` and the version id its execution records."""
    answer = client.workflows.run(slug, version=version, wait_for_completion=30)
    assert run_status(answer) == "completed", answer.error
    execution = summary_of(client.workflows.executions.get(answer.execution_id))
    assert execution.status.value == "completed"
    assert execution.result == answer.result
    return answer.result, execution.version_id


def test_runs_choose_the_version_by_tag_id_or_latest(admin: ServiceClient, unique: str) -> None:
    slug = f"semver-{unique}"
    first = create(admin, _constant(slug, "one"), version="1.0.0")
    assert first.version == "1.0.0" and isinstance(first.version_id, str)
    assert first.version_id.startswith("wfh_")
    second = admin.workflows.release(
        slug, {"yamlContent": _constant(slug, "two"), "version": "1.1.0"}
    )
    assert second.version == "1.1.0" and second.is_current
    third = admin.workflows.release(
        slug, {"yamlContent": _constant(slug, "three"), "version": "2.1.0-rc.1"}
    )
    assert third.version == "2.1.0-rc.1"

    assert _ran(admin, slug, "1.0.0") == ("one", first.version_id)
    assert _ran(admin, slug, "1.1.0") == ("two", second.id)
    assert _ran(admin, slug, "2.1.0-rc.1") == ("three", third.id)
    assert _ran(admin, slug, "latest") == ("three", third.id)
    assert _ran(admin, slug, None) == ("three", third.id)
    assert _ran(admin, slug, first.version_id) == ("one", first.version_id)
    assert _ran(admin, slug, second.id) == ("two", second.id)
    assert _ran(admin, first.id, "1.1.0") == ("two", second.id)  # by workflow id too

    listed = admin.workflows.executions.list(slug).data
    assert len(listed) == 8
    assert sorted(str(execution.version_id) for execution in listed) == sorted(
        [str(first.version_id)] * 2 + [second.id] * 3 + [third.id] * 3
    )


def test_an_unknown_version_is_404(admin: ServiceClient, unique: str) -> None:
    slug = f"unknown-{unique}"
    create(admin, _constant(slug, "one"), version="1.0.0")
    for ref in ["1.0.1", "1.0", "wfh_doesnotexist", "Latest"]:
        with pytest.raises(ServiceNotFoundError) as caught:
            admin.workflows.run(slug, version=ref)
        assert caught.value.status == 404
        assert [message for _, message in issues(caught.value)] == [
            f"Workflow '{slug}' has no version '{ref}'"
        ]
    other = create(admin, _constant(f"other-{unique}", "x"))
    assert isinstance(other.version_id, str)
    with pytest.raises(ServiceNotFoundError):  # another workflow's version id
        admin.workflows.run(slug, version=other.version_id)
    with pytest.raises(ServiceValidationError) as bad:  # outside the parameter's pattern
        admin.workflows.run(slug, version="1.0.0+build")
    assert [field for field, _ in issues(bad.value)] == ["query.version"]
    assert admin.workflows.executions.list(slug).total == 0


def test_latest_cannot_be_a_release_tag(admin: ServiceClient, unique: str) -> None:
    slug = f"nolatest-{unique}"
    with pytest.raises(ServiceValidationError) as on_create:
        admin.workflows.create({"yamlContent": _constant(slug, "one"), "version": "latest"})
    assert [field for field, _ in issues(on_create.value)] == ["body.version"]
    with pytest.raises(ServiceNotFoundError):
        admin.workflows.get(slug)

    create(admin, _constant(slug, "one"), version="1.0.0")
    with pytest.raises(ServiceValidationError) as on_release:
        admin.workflows.release(slug, {"yamlContent": _constant(slug, "two"), "version": "latest"})
    assert on_release.value.status == 400
    assert issues(on_release.value) == [
        ("body.version", "'latest' names the current version and cannot be a release tag")
    ]
    assert [version.version for version in admin.workflows.versions(slug).data] == ["1.0.0"]
    with pytest.raises(ServiceConflictError) as reused:
        admin.workflows.release(slug, {"yamlContent": _constant(slug, "two"), "version": "1.0.0"})
    assert [field for field, _ in issues(reused.value)] == ["body.version"]


def test_a_version_id_wins_over_a_tag_spelled_like_it(admin: ServiceClient, unique: str) -> None:
    slug = f"shadow-{unique}"
    first = create(admin, _constant(slug, "first"), version="1.0.0")
    assert isinstance(first.version_id, str)
    shadow = admin.workflows.release(
        slug, {"yamlContent": _constant(slug, "shadow"), "version": first.version_id}
    )
    assert shadow.version == first.version_id and shadow.id != first.version_id

    assert _ran(admin, slug, first.version_id) == ("first", first.version_id)
    assert _ran(admin, slug, shadow.id) == ("shadow", shadow.id)
    assert _ran(admin, slug, "latest") == ("shadow", shadow.id)
    assert _ran(admin, slug, "1.0.0") == ("first", first.version_id)


def test_a_tag_that_is_another_workflows_version_id_is_a_tag(
    admin: ServiceClient, unique: str
) -> None:
    other = create(admin, _constant(f"donor-{unique}", "donor"))
    assert isinstance(other.version_id, str)
    slug = f"borrow-{unique}"
    create(admin, _constant(slug, "first"))
    borrowed = admin.workflows.release(
        slug, {"yamlContent": _constant(slug, "borrowed"), "version": other.version_id}
    )
    admin.workflows.release(slug, {"yamlContent": _constant(slug, "third")})
    assert _ran(admin, slug, other.version_id) == ("borrowed", borrowed.id)


def test_the_wire_shape_of_run_answers(admin: ServiceClient, unique: str) -> None:
    slug = f"wire-{unique}"
    create(admin, _constant(slug, "done"), version="1.0.0")
    path = f"/api/v1/workflows/{slug}/run"

    unwaited = admin._http.post(path, json={"input": {}})
    assert unwaited.status_code == 201
    body = unwaited.json()
    assert list(body) == ["executionId"]
    assert isinstance(body["executionId"], str) and body["executionId"].startswith("wfx_")
    pinned = admin._http.post(path, params={"version": "1.0.0"})
    assert pinned.status_code == 201 and list(pinned.json()) == ["executionId"]

    waited = admin._http.post(path, params={"wait_for_completion": 30}, json={"input": {}})
    assert waited.status_code == 201
    answer = waited.json()
    assert sorted(answer) == ["error", "executionId", "result", "status"]
    assert (answer["status"], answer["result"], answer["error"]) == ("completed", "done", None)

    rejected_slug = f"wire-in-{unique}"
    create(
        admin,
        f"name: {rejected_slug}\ninputs:\n  amount: number\nsteps:\n  - id: only\n"
        "    type: transform\n    value: ${{ inputs.amount }}\nresult: ${{ steps.only.output }}\n",
    )
    refused = admin._http.post(
        f"/api/v1/workflows/{rejected_slug}/run",
        params={"wait_for_completion": 5, "version": "latest"},
        json={"input": {"amount": "lots"}},
    ).json()
    assert sorted(refused) == ["error", "executionId", "result", "status"]
    assert refused["status"] == "rejected" and refused["result"] is None
    assert isinstance(refused["error"], str) and refused["error"].startswith("invalid input:")
