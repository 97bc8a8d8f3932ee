"""Signed webhooks, on SQLite and PostgreSQL: subscriptions through the API, events recorded
with the execution's end, deliveries to a receiver written here (on loopback, allowlisted)
that checks every signature itself, retries, scope, filters, deletion, the egress guard and
the delivery log; and, below the server, the outbox and the delivery loop on their own."""

from __future__ import annotations

import asyncio
import base64
import hashlib
import hmac
import json
import secrets
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from datetime import UTC, datetime
from functools import partial
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

import pytest
from sqlalchemy import func, select
from sqlalchemy.orm import Session

from generated.agents import models
from generated.agents.client import (
    ServiceClient,
    ServiceConflictError,
    ServiceNotFoundError,
    ServiceValidationError,
)
from handlers.agents.domain.keys import authenticate, create_key
from handlers.agents.domain.webhooks import WebhookStore, add_recorded_listener
from handlers.agents.egress import EgressPolicy
from handlers.agents.execution import webhook_delivery as delivery_loop
from handlers.agents.execution.leases import announce
from handlers.agents.execution.webhook_delivery import DeliverySchedule, WebhookDeliverer
from handlers.agents.storage.database import Database
from handlers.agents.storage.migrate import upgrade
from handlers.agents.storage.schema import Agent, Execution, WebhookDelivery, utc_now
from tests.agents.run_support import new_agent, tuned_server, wait_for
from tests.agents.support import RunningServer, Storage
from tests.agents.workflows.api_support import create, scoped_key, wait_for_status

LOOPBACK = EgressPolicy.parse(["127.0.0.1/32"])
FAST = {
    "egress": LOOPBACK,
    "webhook_retry_base_seconds": 0.05,
    "webhook_retry_cap_seconds": 0.2,
    "webhook_max_attempts": 4,
}
"""A server that may deliver to loopback and retries at once (settings, not sleeps)."""
DEADLINE_SECONDS = 30.0
AGENT_EVENTS = ["agent_execution.completed", "agent_execution.failed", "agent_execution.cancelled"]

# -- the receiver -----------------------------------------------------------------------------


@dataclass
class Received:
    """One request the receiver got."""

    path: str
    webhook_id: str
    timestamp: int
    body: bytes
    signature_valid: bool
    answered: int

    @property
    def event(self) -> dict[str, Any]:
        return dict(json.loads(self.body))


@dataclass
class Receiver:
    """An HTTP receiver on 127.0.0.1. Each path has a secret (set once the subscription is
    created) and a list of statuses to answer in turn (then 204); every request's signature
    is checked here with hmac, independently of the service's code."""

    url: str
    secrets: dict[str, str] = field(default_factory=dict)
    answers: dict[str, list[int]] = field(default_factory=dict)
    requests: list[Received] = field(default_factory=list)
    lock: threading.Lock = field(default_factory=threading.Lock)

    def on(self, path: str) -> list[Received]:
        with self.lock:
            return [request for request in self.requests if request.path == path]

    def unique_events(self, path: str) -> dict[str, dict[str, Any]]:
        """The events of ``path`` after deduplication by webhook-id."""
        return {request.webhook_id: request.event for request in self.on(path)}


def signature_ok(secret: str, webhook_id: str, timestamp: str, body: bytes, header: str) -> bool:
    key = base64.b64decode(secret.removeprefix("whsec_"))
    digest = hmac.new(key, f"{webhook_id}.{timestamp}.".encode() + body, hashlib.sha256).digest()
    expected = "v1," + base64.b64encode(digest).decode()
    return any(hmac.compare_digest(expected, given) for given in header.split(" "))


class _Handler(BaseHTTPRequestHandler):
    server: _ReceiverServer

    def do_POST(self) -> None:
        receiver = self.server.receiver
        body = self.rfile.read(int(self.headers.get("content-length", "0")))
        webhook_id = self.headers.get("webhook-id", "")
        timestamp = self.headers.get("webhook-timestamp", "0")
        with receiver.lock:
            secret = receiver.secrets.get(self.path)
            queue = receiver.answers.setdefault(self.path, [])
            status = queue.pop(0) if queue else 204
        valid = (
            secret is not None
            and self.headers.get("content-type") == "application/json"
            and abs(time.time() - int(timestamp)) < 300
            and signature_ok(secret, webhook_id, timestamp, body,
                             self.headers.get("webhook-signature", ""))
        )  # fmt: skip
        with receiver.lock:
            receiver.requests.append(
                Received(self.path, webhook_id, int(timestamp), body, valid, status)
            )
        payload = b"receiver says no" if status >= 300 else b""
        self.send_response(status)
        self.send_header("content-length", str(len(payload)))
        self.end_headers()
        self.wfile.write(payload)

    def log_message(self, format: str, *args: object) -> None:
        pass


class _ReceiverServer(ThreadingHTTPServer):
    daemon_threads = True
    receiver: Receiver


@contextmanager
def receiver() -> Iterator[Receiver]:
    server = _ReceiverServer(("127.0.0.1", 0), _Handler)
    server.receiver = Receiver(f"http://127.0.0.1:{server.server_address[1]}")
    thread = threading.Thread(target=server.serve_forever, args=(0.02,), daemon=True)
    thread.start()
    try:
        yield server.receiver
    finally:
        server.shutdown()
        server.server_close()
        thread.join(timeout=5)


# -- helpers --------------------------------------------------------------------------------------


def subscribe(
    client: ServiceClient, hooks: Receiver, path: str, events: list[str], **body: Any
) -> models.CreatedWebhook:
    created = client.webhooks.create({"url": hooks.url + path, "events": events, **body})
    with hooks.lock:
        hooks.secrets[path] = created.secret
    return created


def deliveries_when(
    client: ServiceClient,
    webhook_id: str,
    done: Callable[[list[models.WebhookDelivery]], bool],
) -> list[models.WebhookDelivery]:
    """The delivery log once ``done`` holds for it (fails after DEADLINE_SECONDS)."""
    deadline = time.monotonic() + DEADLINE_SECONDS
    while True:
        log = client.webhooks.list_deliveries(webhook_id, limit=100).data
        if done(log):
            return log
        assert time.monotonic() < deadline, f"deliveries of {webhook_id}: {log}"
        time.sleep(0.05)


def all_delivered(count: int) -> Callable[[list[models.WebhookDelivery]], bool]:
    return lambda log: len(log) == count and all(d.status.value == "delivered" for d in log)


def run_agent(
    client: ServiceClient, slug: str, data: dict[str, Any]
) -> models.AgentExecutionSummary:
    answer = client.agents.run(slug, {"input": data})
    return wait_for(client, answer.execution_id)


@pytest.fixture
def fast_server(new_storage: Callable[[], Storage]) -> Iterator[RunningServer]:
    with tuned_server(new_storage(), **FAST) as server:
        yield server


@pytest.fixture
def fast_admin(fast_server: RunningServer) -> Iterator[ServiceClient]:
    key = fast_server.key("admin", scope_all=True, can_create_agents=True)
    with fast_server.client(key) as client:
        yield client


# -- through the server ---------------------------------------------------------------------------


def test_signed_events_are_retried_after_a_500_and_seen_once_each_after_deduplication(
    fast_admin: ServiceClient, unique: str
) -> None:
    with receiver() as hooks:
        hooks.answers["/all"] = [500]  # the very first delivery fails
        created = subscribe(fast_admin, hooks, "/all", AGENT_EVENTS, description="everything")
        slug = new_agent(fast_admin, unique)
        ok = run_agent(fast_admin, slug, {"n": 1})
        failed = run_agent(fast_admin, slug, {"fail": "no"})
        log = deliveries_when(fast_admin, created.id, all_delivered(2))
        requests = hooks.on("/all")
        events = hooks.unique_events("/all")

    assert ok.status.value == "completed" and failed.status.value == "failed"
    assert created.secret.startswith("whsec_") and len(base64.b64decode(created.secret[6:])) == 24
    assert all(request.signature_valid for request in requests), requests
    # the 500 was retried with the same webhook-id; after deduplication each event once
    assert [request.answered for request in requests].count(500) == 1
    first = requests[0]
    assert first.answered == 500
    assert [r.webhook_id for r in requests].count(first.webhook_id) == 2
    assert len(requests) == 3 and len(events) == 2
    by_execution = {event["data"]["id"]: event for event in events.values()}
    assert set(by_execution) == {ok.id, failed.id}

    done = by_execution[ok.id]
    assert done["type"] == "agent_execution.completed"
    assert datetime.fromisoformat(done["timestamp"]).tzinfo is not None
    assert done["data"]["agentSlug"] == slug and done["data"]["agentId"].startswith("agt_")
    assert done["data"]["status"] == "completed" and done["data"]["error"] is None
    assert done["data"]["output"] == ok.output and done["data"]["outputTruncated"] is False
    assert done["data"]["durationMs"] >= 0 and done["data"]["completedAt"]
    gave_up = by_execution[failed.id]
    assert gave_up["type"] == "agent_execution.failed"
    assert gave_up["data"]["error"] == failed.error
    models.WebhookEvent.model_validate(done)  # the spec's schema of the body
    models.WebhookEvent.model_validate(gave_up)

    # the delivery log, newest first: ids are the webhook-ids, attempts and last outcome
    assert {entry.id for entry in log} == set(events)
    retried = next(entry for entry in log if entry.id == first.webhook_id)
    assert retried.attempts == 2 and retried.last_status_code == 204
    assert retried.last_error is None and retried.delivered_at is not None
    assert retried.next_attempt_at is None
    assert [entry.created_at for entry in log] == sorted(
        (entry.created_at for entry in log), reverse=True
    )
    page = fast_admin.webhooks.list_deliveries(created.id, limit=1, offset=1)
    assert page.total == 2 and [entry.id for entry in page.data] == [log[1].id]
    assert fast_admin.webhooks.list_deliveries(created.id, status="failed").total == 0

    # the secret is shown once: never by get or list
    shown = fast_admin.webhooks.get(created.id)
    assert shown.model_dump() == {
        key: value for key, value in created.model_dump().items() if key != "secret"
    }
    listed = fast_admin.webhooks.list()
    assert created.id in [hook.id for hook in listed.data]
    assert created.secret not in json.dumps(listed.model_dump(mode="json"))


def test_filters_keep_only_the_named_agents_and_workflows_and_the_chosen_events(
    fast_admin: ServiceClient, unique: str
) -> None:
    with receiver() as hooks:
        kept, other = new_agent(fast_admin, unique), new_agent(fast_admin, unique)
        flow = create(fast_admin, f"name: wh-{unique}\nsteps:\n  - id: one\n    type: transform\n"
                      "    value: 41\nresult: ${{ steps.one.output }}\n")  # fmt: skip
        create(fast_admin, f"name: wh-other-{unique}\nsteps:\n  - id: one\n    type: transform\n"
               "    value: 1\n")  # fmt: skip
        agents_hook = subscribe(fast_admin, hooks, "/agents", AGENT_EVENTS, agentIds=[kept])
        failures = subscribe(fast_admin, hooks, "/failures", ["agent_execution.failed"])
        flows = subscribe(
            fast_admin, hooks, "/flows", ["workflow_execution.completed"], workflowIds=[flow.slug]
        )
        assert agents_hook.agent_ids[0].root.startswith("agt_")  # stored as ids
        assert [ref.root for ref in flows.workflow_ids] == [flow.id]

        kept_run = run_agent(fast_admin, kept, {"n": 1})
        run_agent(fast_admin, other, {"n": 2})
        failed = run_agent(fast_admin, other, {"fail": "x"})
        for slug in (flow.slug, f"wh-other-{unique}"):
            ended = wait_for_status(
                fast_admin, fast_admin.workflows.run(slug, {"input": {}}).execution_id
            )
            assert ended.status.value == "completed"
        sleeper = fast_admin.agents.run(kept, {"input": {"sleep": 30}}).execution_id
        wait_for(fast_admin, sleeper, {"running"})
        fast_admin.agents.executions.cancel(sleeper)
        assert wait_for(fast_admin, sleeper).status.value == "cancelled"

        deliveries_when(fast_admin, agents_hook.id, all_delivered(2))
        deliveries_when(fast_admin, failures.id, all_delivered(1))
        deliveries_when(fast_admin, flows.id, all_delivered(1))
        agent_events = hooks.unique_events("/agents")
        failure_events = hooks.unique_events("/failures")
        flow_events = hooks.unique_events("/flows")
        assert all(request.signature_valid for request in hooks.requests)

    assert sorted((e["type"], e["data"]["id"]) for e in agent_events.values()) == sorted(
        [("agent_execution.completed", kept_run.id), ("agent_execution.cancelled", sleeper)]
    )
    assert [(e["type"], e["data"]["id"]) for e in failure_events.values()] == [
        ("agent_execution.failed", failed.id)
    ]
    [flow_event] = flow_events.values()
    assert flow_event["type"] == "workflow_execution.completed"
    assert flow_event["data"]["workflowId"] == flow.id
    assert flow_event["data"]["workflowSlug"] == flow.slug
    assert flow_event["data"]["result"] == 41 and flow_event["data"]["resultTruncated"] is False


def test_a_block_run_by_a_workflow_sends_its_own_events(
    fast_admin: ServiceClient, unique: str
) -> None:
    block = create(
        fast_admin,
        f"name: wh-block-{unique}\nkind: block\nsteps:\n  - id: one\n    type: transform\n"
        "    value: 20\nresult: ${{ steps.one.output }}\n",
    )
    caller = create(
        fast_admin,
        f"name: wh-caller-{unique}\nsteps:\n  - id: call\n    type: block\n"
        f"    block: {block.slug}\nresult: ${{{{ steps.call.output }}}}\n",
    )
    with receiver() as hooks:
        blocks = subscribe(fast_admin, hooks, "/blocks", ["workflow_execution.completed"],
                           workflowIds=[block.slug])  # fmt: skip
        run = fast_admin.workflows.run(caller.slug, {"input": {}})
        ended = wait_for_status(fast_admin, run.execution_id)
        assert ended.status.value == "completed"
        deliveries_when(fast_admin, blocks.id, all_delivered(1))
        [event] = hooks.unique_events("/blocks").values()
    assert event["type"] == "workflow_execution.completed"
    assert event["data"]["workflowId"] == block.id and event["data"]["id"] != run.execution_id
    assert event["data"]["result"] == 20


def test_a_subscription_is_its_keys_and_sees_only_what_the_key_may_see(
    fast_server: RunningServer, fast_admin: ServiceClient, unique: str
) -> None:
    seen, hidden = new_agent(fast_admin, unique), new_agent(fast_admin, unique)
    owner_key = scoped_key(fast_server, agents=(seen,))
    stranger_key = scoped_key(fast_server, agents=(seen,))
    with (
        receiver() as hooks,
        fast_server.client(owner_key) as owner,
        fast_server.client(stranger_key) as stranger,
    ):
        created = subscribe(owner, hooks, "/scoped", ["agent_execution.completed"])
        with pytest.raises(ServiceValidationError) as refused:
            owner.webhooks.create(
                {"url": hooks.url + "/x", "events": AGENT_EVENTS, "agentIds": [seen, hidden]}
            )
        assert [(i["field"], i["message"]) for i in refused.value.issues] == [
            ("body.agentIds.1", f"Agent '{hidden}' not found")
        ]

        # another key: 404 on everything, and its list is empty; a `*` key sees it
        for call in (
            partial(stranger.webhooks.get, created.id),
            partial(stranger.webhooks.list_deliveries, created.id),
            partial(stranger.webhooks.delete, created.id),
        ):
            with pytest.raises(ServiceNotFoundError):
                call()
        assert stranger.webhooks.list().total == 0
        assert owner.webhooks.list().data[0].id == created.id
        assert fast_admin.webhooks.get(created.id).key_id == created.key_id
        assert created.id in [hook.id for hook in fast_admin.webhooks.list(limit=100).data]

        # events of an agent the owner may not see are not delivered to it
        visible = run_agent(fast_admin, seen, {"n": 1})
        run_agent(fast_admin, hidden, {"n": 2})
        # a subscription of the `*` key made after: it gets the next events of both
        watcher = subscribe(fast_admin, hooks, "/admin", ["agent_execution.completed"])
        run_agent(fast_admin, hidden, {"n": 3})
        deliveries_when(owner, created.id, all_delivered(1))
        deliveries_when(fast_admin, watcher.id, all_delivered(1))
        owner_events = hooks.unique_events("/scoped")
        assert all(request.signature_valid for request in hooks.requests)
        assert owner.webhooks.list_deliveries(created.id).total == 1

    assert [event["data"]["id"] for event in owner_events.values()] == [visible.id]


def test_deleting_a_subscription_drops_its_pending_deliveries(
    new_storage: Callable[[], Storage], unique: str
) -> None:
    slow_retries = {
        **FAST,
        "webhook_retry_base_seconds": 3600.0,
        "webhook_retry_cap_seconds": 3600.0,
    }
    with receiver() as hooks, tuned_server(new_storage(), **slow_retries) as server:
        hooks.answers["/down"] = [500] * 10
        key = server.key("admin", scope_all=True, can_create_agents=True)
        with server.client(key) as client:
            created = subscribe(client, hooks, "/down", ["agent_execution.completed"])
            run_agent(client, new_agent(client, unique), {"n": 1})
            [pending] = deliveries_when(
                client, created.id, lambda log: len(log) == 1 and log[0].attempts == 1
                and log[0].last_status_code == 500
            )  # fmt: skip
            assert pending.status.value == "pending" and pending.next_attempt_at is not None
            assert pending.last_error == "HTTP 500: receiver says no"
            assert pending.delivered_at is None

            client.webhooks.delete(created.id)
            with pytest.raises(ServiceNotFoundError):
                client.webhooks.get(created.id)
            with pytest.raises(ServiceNotFoundError):
                client.webhooks.list_deliveries(created.id)
            with pytest.raises(ServiceNotFoundError):
                client.webhooks.delete(created.id)
        rows = server.server.database.read_sync(
            lambda session: session.scalar(select(func.count()).select_from(WebhookDelivery))
        )
    assert rows == 0


def test_a_delivery_that_never_succeeds_fails_after_the_last_attempt(
    fast_admin: ServiceClient, unique: str
) -> None:
    with receiver() as hooks:
        hooks.answers["/broken"] = [503] * 20
        created = subscribe(fast_admin, hooks, "/broken", ["agent_execution.completed"])
        run_agent(fast_admin, new_agent(fast_admin, unique), {"n": 1})
        [failed] = deliveries_when(
            fast_admin, created.id, lambda log: len(log) == 1 and log[0].status.value == "failed"
        )
        requests = hooks.on("/broken")
    assert failed.attempts == FAST["webhook_max_attempts"] == len(requests)
    assert failed.next_attempt_at is None and failed.last_status_code == 503
    assert len({request.webhook_id for request in requests}) == 1
    assert all(request.signature_valid for request in requests)
    assert fast_admin.webhooks.list_deliveries(created.id, status="failed").total == 1


def test_loopback_receivers_are_refused_unless_allowlisted(
    admin: ServiceClient, new_storage: Callable[[], Storage], unique: str
) -> None:
    # the shared server has no allowlist: an address it refuses is a 400 at creation
    for url in ("http://127.0.0.1:9/hook", "http://169.254.169.254/latest", "http://localhost/"):
        with pytest.raises(ServiceValidationError) as refused:
            admin.webhooks.create({"url": url, "events": ["agent_execution.completed"]})
        [issue] = refused.value.issues
        assert issue["field"] == "body.url" and "refused" in issue["message"], issue
    with pytest.raises(ServiceValidationError):
        admin.webhooks.create({"url": "ftp://example.com/", "events": ["agent_execution.failed"]})

    # at delivery: subscribed while allowlisted, delivered after the allowlist is gone
    storage = new_storage()
    with receiver() as hooks:
        with tuned_server(storage, **FAST) as allowed:
            key = allowed.key("admin", scope_all=True, can_create_agents=True)
            with allowed.client(key) as client:
                created = subscribe(client, hooks, "/late", ["agent_execution.completed"])
                slug = new_agent(client, unique)
        without_allowlist = {**FAST, "egress": EgressPolicy()}
        with tuned_server(storage, **without_allowlist) as guarded, guarded.client(key) as client:
            run_agent(client, slug, {"n": 1})
            [refused_delivery] = deliveries_when(
                client, created.id, lambda log: len(log) == 1 and log[0].attempts >= 2
            )
        assert hooks.requests == []
    assert refused_delivery.last_status_code is None
    assert refused_delivery.last_error == (
        "refused by the egress guard: 127.0.0.1 is a loopback address"
    )


def test_bad_subscriptions_are_400(admin: ServiceClient) -> None:
    cases: list[dict[str, Any]] = [
        {"url": "https://example.com/hook", "events": []},
        {"url": "https://example.com/hook", "events": ["agent_execution.started"]},
        {"url": "example.com/hook", "events": ["agent_execution.failed"]},
        {"url": "https://example.com/hook"},
        {"url": "https://example.com/hook", "events": ["agent_execution.failed"], "extra": 1},
        {"url": "https://example.com/hook", "events": ["agent_execution.failed"],
         "workflowIds": ["no-such-workflow"]},
    ]  # fmt: skip
    for body in cases:
        with pytest.raises(ServiceValidationError):
            admin.webhooks.create(body)
    with pytest.raises(ServiceNotFoundError):
        admin.webhooks.get("wh_missing")


def test_a_key_has_at_most_100_subscriptions(server: RunningServer) -> None:
    body = {"url": "https://93.184.215.14/hook", "events": ["agent_execution.failed"]}
    with server.client(scoped_key(server)) as client:
        for _ in range(100):
            client.webhooks.create(body)
        with pytest.raises(ServiceConflictError) as refused:
            client.webhooks.create(body)
        assert "100 webhooks" in refused.value.envelope["issues"][0]["message"]
        assert client.webhooks.list().total == 100
        client.webhooks.delete(client.webhooks.list(limit=1).data[0].id)
        client.webhooks.create(body)


# -- below the server: the outbox and the delivery loop -------------------------------------------


@pytest.fixture
def database(new_storage: Callable[[], Storage]) -> Iterator[Database]:
    database = Database(new_storage().database_url)
    upgrade(database)
    yield database
    database.dispose()


def _agent_and_running_execution(session: Session) -> str:
    now = utc_now()
    agent_id = "agt_" + secrets.token_hex(6)
    session.add(Agent(id=agent_id, slug=agent_id.replace("_", "-"), name="a", description=None,
                      config={}, created_at=now, updated_at=now))  # fmt: skip
    session.flush()
    execution_id = "aex_" + secrets.token_hex(6)
    session.add(Execution(id=execution_id, agent_id=agent_id, status="running", created_at=now,
                          started_at=now, attempt=1))  # fmt: skip
    return execution_id


def _end(session: Session, execution_id: str, output: Any, fail: bool = False) -> None:
    execution = session.get(Execution, execution_id)
    assert execution is not None
    execution.status, execution.output = "completed", output
    execution.completed_at = utc_now()
    announce(session, execution_id)  # the hook of every terminal transaction
    if fail:
        raise RuntimeError("the transaction fails after the event was recorded")


def _subscribed(database: Database, url: str, events: list[str]) -> models.CreatedWebhook:
    issued = database.write_sync(partial(create_key, name="k", scope_all=True))
    principal = database.read_sync(partial(authenticate, token=issued.secret))
    assert principal is not None
    body = models.CreateWebhookBody.model_validate({"url": url, "events": events})
    return asyncio.run(WebhookStore(database, LOOPBACK).create(principal, body))


def _deliveries(database: Database) -> list[WebhookDelivery]:
    return list(
        database.read_sync(
            lambda session: session.scalars(
                select(WebhookDelivery).order_by(WebhookDelivery.created_at)
            ).all()
        )
    )


def test_events_are_recorded_in_the_ending_transaction_or_not_at_all(database: Database) -> None:
    created = _subscribed(database, "http://127.0.0.1:9/x", ["agent_execution.completed"])
    woken: list[str] = []
    remove = add_recorded_listener(lambda: woken.append("after commit"))
    try:
        execution_id = database.write_sync(_agent_and_running_execution)
        with pytest.raises(RuntimeError):
            database.write_sync(partial(_end, execution_id=execution_id, output=1, fail=True))
        assert _deliveries(database) == [] and woken == []  # rolled back together

        big = {"blob": "x" * (300 * 1024)}
        database.write_sync(partial(_end, execution_id=execution_id, output=big))
        database.write_sync(partial(announce, execution_id=execution_id))  # announced again
    finally:
        remove()
    [delivery] = _deliveries(database)
    assert woken == ["after commit"]
    assert delivery.webhook_id == created.id and delivery.status == "pending"
    assert delivery.execution_id == execution_id and delivery.id.startswith("msg_")
    event = json.loads(delivery.body)
    assert event["type"] == "agent_execution.completed"
    assert event["data"]["outputTruncated"] is True and "output" not in event["data"]


def test_a_crash_between_sending_and_recording_sends_again_with_the_same_id(
    database: Database,
) -> None:
    with receiver() as hooks:
        created = _subscribed(database, hooks.url + "/crash", ["agent_execution.completed"])
        hooks.secrets["/crash"] = created.secret
        execution_id = database.write_sync(_agent_and_running_execution)
        database.write_sync(partial(_end, execution_id=execution_id, output={"ok": True}))
        schedule = DeliverySchedule(base_seconds=0.01, cap_seconds=0.01, max_attempts=3)
        deliverer = WebhookDeliverer(database, LOOPBACK, schedule)

        async def crash_after_sending() -> None:
            # claim as the loop does, with a lease that ends at once, send, then "die"
            claim = partial(delivery_loop._claim, limit=10, lease_seconds=0.0)
            [claimed] = await database.write(claim)
            async with delivery_loop._new_client() as client:
                assert (await deliverer.send(client, claimed)).delivered

        asyncio.run(crash_after_sending())
        assert _deliveries(database)[0].status == "pending"  # not recorded: sent again
        assert asyncio.run(deliverer.deliver_due()) == 1
        requests = hooks.on("/crash")
    [delivery] = _deliveries(database)
    assert delivery.status == "delivered" and delivery.attempts == 2
    assert [request.webhook_id for request in requests] == [delivery.id, delivery.id]
    assert all(request.signature_valid for request in requests)
    assert requests[0].body == requests[1].body


def test_redirects_are_not_followed_and_error_bodies_are_cut_to_1_kib(database: Database) -> None:
    class Redirecting(BaseHTTPRequestHandler):
        def do_POST(self) -> None:
            self.rfile.read(int(self.headers.get("content-length", "0")))
            if self.path == "/moved":
                self.send_response(307)
                self.send_header("location", "/elsewhere")
                self.send_header("content-length", "0")
                self.end_headers()
                return
            payload = b"e" * 5000
            self.send_response(502)
            self.send_header("content-length", str(len(payload)))
            self.end_headers()
            self.wfile.write(payload)

        def log_message(self, format: str, *args: object) -> None:
            pass

    server = ThreadingHTTPServer(("127.0.0.1", 0), Redirecting)
    thread = threading.Thread(target=server.serve_forever, args=(0.02,), daemon=True)
    thread.start()
    try:
        base = f"http://127.0.0.1:{server.server_address[1]}"
        for path in ("/moved", "/big"):
            _subscribed(database, base + path, ["agent_execution.completed"])
        execution_id = database.write_sync(_agent_and_running_execution)
        database.write_sync(partial(_end, execution_id=execution_id, output=None))
        schedule = DeliverySchedule(base_seconds=60.0, cap_seconds=60.0, max_attempts=3)
        assert asyncio.run(WebhookDeliverer(database, LOOPBACK, schedule).deliver_due()) == 2
    finally:
        server.shutdown()
        server.server_close()
        thread.join(timeout=5)
    errors = sorted((d.last_status_code, d.last_error, d.status) for d in _deliveries(database))
    assert errors == [
        (307, "HTTP 307", "pending"),
        (502, "HTTP 502: " + "e" * 1024, "pending"),
    ]
    assert all(
        d.next_attempt_at is not None and d.next_attempt_at > datetime.now(UTC)
        for d in _deliveries(database)
    )
