"""The egress guard through the real server (SQLite and PostgreSQL): a released workflow whose
http step calls a loopback listener fails with the refusal and the listener sees nothing; a
server whose ``egress`` allowlists the listener's address lets the same call through."""

from __future__ import annotations

from collections.abc import Callable

from generated.agents.client import ServiceClient
from handlers.agents.egress import EgressPolicy
from tests.agents.run_support import tuned_server
from tests.agents.support import Storage
from tests.agents.workflows.api_support import create, run_status, steps_of, wait_for_status
from tests.agents.workflows.support import http_server


def _calling(slug: str, url: str) -> str:
    return (
        f"name: {slug}\nsteps:\n  - id: call\n    type: http\n    method: POST\n"
        f"    url: {url}/echo\n    json: {{n: 7}}\n    retries: 2\n"
        "result: ${{ steps.call.output.body.json.n }}\n"
    )


def test_an_http_step_to_a_loopback_listener_is_refused_unless_allowlisted(
    admin: ServiceClient, new_storage: Callable[[], Storage], unique: str
) -> None:
    slug = f"ssrf-{unique}"
    with http_server() as listener:
        create(admin, _calling(slug, listener.url))
        answer = admin.workflows.run(slug, wait_for_completion=60)
        ended = wait_for_status(admin, answer.execution_id)
        hits = sum(listener.hits.values())

        refusal = f"url '{listener.url}/echo' refused: 127.0.0.1 is a loopback address"
        assert run_status(answer) == "failed"
        assert ended.status.value == "failed"
        assert answer.error == f"step 'call' failed: {refusal}"
        step = steps_of(ended)["call"]
        assert step.status.value == "failed"
        assert step.error == refusal
        assert hits == 0

        # the same call from a server whose AGENTS_EGRESS_ALLOW opens the listener's address
        allow = EgressPolicy.parse(["127.0.0.1/32"])
        with tuned_server(new_storage(), egress=allow) as server:
            key = server.key("admin", scope_all=True, can_create_agents=True)
            with server.client(key) as client:
                create(client, _calling(slug, listener.url))
                answer = client.workflows.run(slug, wait_for_completion=60)
                ended = wait_for_status(client, answer.execution_id)
        assert run_status(answer) == "completed", answer.error
        assert ended.status.value == "completed" and ended.result == 7
        assert steps_of(ended)["call"].output["body"]["method"] == "POST"
        assert listener.hits["/echo"] == 1
