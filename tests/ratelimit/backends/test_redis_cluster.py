"""RedisStore, type cluster: three masters; keys on different slots, one pipeline per key
on the node serving it, bounded parallelism, redirections, and the other ``KVSTORE_*``
settings in cluster mode (TLS with client certificates, AUTH, URL credentials, pipeline
window, pool, timeout). Slot migrations under load: test_redis_cluster_migration.py."""

from __future__ import annotations

import asyncio
import uuid
from collections.abc import Iterator

import pytest
import redis
from redis.crc import key_slot

from handlers.ratelimit.backends.base import BackendError, Increment
from handlers.ratelimit.backends.redis import RedisStore
from handlers.ratelimit.backends.redis_connections import ClusterRouter
from handlers.ratelimit.backends.redis_protocol import encode_command, encode_get, split_commands
from handlers.ratelimit.settings import KvStoreSettings
from tests.ratelimit.redis_servers import (
    HOST,
    PASSWORD,
    ClusterDeployment,
    make_certificates,
    open_store,
    paused_writes,
    read_and_write_events,
)


@pytest.fixture(scope="module")
def secure_cluster(tmp_path_factory: pytest.TempPathFactory) -> Iterator[ClusterDeployment]:
    """TLS only (client certificates required, certificates for ``redis.invalid``, the
    cluster bus over TLS) and ``requirepass`` :data:`PASSWORD` on every node."""
    directory = tmp_path_factory.mktemp("redis-secure-cluster")
    certificates = make_certificates(directory / "certs")
    deployment = ClusterDeployment(directory, password=PASSWORD, tls=certificates).start()
    try:
        yield deployment
    finally:
        deployment.stop()


def settings(url: str, **changes: object) -> KvStoreSettings:
    options: dict[str, object] = {"type": "cluster", "socket_type": "tcp", "url": url}
    options.update(changes)
    return KvStoreSettings(**options)  # type: ignore[arg-type]


def keys_on_every_node(cluster: ClusterDeployment, per_node: int = 2) -> list[str]:
    """Keys with at least ``per_node`` on each node, on different slots."""
    prefix = f"rl-cluster-{uuid.uuid4().hex[:8]}-"
    found: dict[int, list[str]] = {node.port: [] for node in cluster.nodes}
    n = 0
    while min(len(keys) for keys in found.values()) < per_node:
        key = f"{prefix}{n}"
        n += 1
        node_keys = found[cluster.node_for(key).port]
        if len(node_keys) < per_node:
            node_keys.append(key)
    return [key for keys in found.values() for key in keys]


def router(store: RedisStore) -> ClusterRouter:
    return store._main.router  # type: ignore[union-attr]


async def test_keys_on_different_slots_count_on_their_nodes(
    redis_cluster: ClusterDeployment,
) -> None:
    keys = keys_on_every_node(redis_cluster)
    async with open_store(settings(redis_cluster.url)) as store:
        increments = [Increment(key, i + 1, 60 + i, False) for i, key in enumerate(keys)]
        assert await store.increment(increments) == [i + 1 for i in range(len(keys))]
        assert await store.increment(increments[:2]) == [2, 4]
        expected = [2, 4, *range(3, len(keys) + 1)]
        assert await store.get([(key, False) for key in keys]) == expected
        assert await store.get([(f"{keys[0]}-missing", False)]) == [0]
        assert store.connected()
    for i, key in enumerate(keys):
        with redis_cluster.node_for(key).client() as client:
            assert client.get(key) == str(expected[i])
            assert client.ttl(key) in (59 + i, 60 + i)


async def test_one_pipeline_per_key_on_its_node(redis_cluster: ClusterDeployment) -> None:
    keys = keys_on_every_node(redis_cluster, per_node=2)
    async with open_store(settings(redis_cluster.url)) as store:
        clients = {node.port: node.client() for node in redis_cluster.nodes}
        try:
            for client in clients.values():
                client.ping()
            before = {port: read_and_write_events(c) for port, c in clients.items()}
            await store.increment([Increment(key, 1, 60, False) for key in keys])
            after = {port: read_and_write_events(c) for port, c in clients.items()}
        finally:
            for client in clients.values():
                client.close()
    for node in redis_cluster.nodes:
        # two keys on each node: two round trips (INCRBY+EXPIRE each), plus the INFO
        assert after[node.port][0] - before[node.port][0] == 3, node.address


async def test_incrby_and_expire_of_a_key_travel_together(
    redis_cluster: ClusterDeployment,
) -> None:
    keys = keys_on_every_node(redis_cluster, per_node=1)
    node = redis_cluster.node_for(keys[0])
    async with open_store(settings(redis_cluster.url)) as store:
        await store.get([(keys[0], False)])  # connected, slots loaded
        monitor_client = redis.Redis(host=HOST, port=node.port)
        try:
            with monitor_client.monitor() as monitor:  # type: ignore[no-untyped-call]
                await store.increment([Increment(key, 2, 60, False) for key in keys])
                commands = [monitor.next_command()["command"] for _ in range(2)]
        finally:
            monitor_client.close()
    assert commands == [f"INCRBY {keys[0]} 2", f"EXPIRE {keys[0]} 60"]


async def test_parallelism_bounds_the_keys_of_a_call_in_flight(
    redis_cluster: ClusterDeployment,
) -> None:
    tag = uuid.uuid4().hex[:8]
    keys = [f"{{rl-{tag}}}-{i}" for i in range(4)]  # one slot, one node
    node = redis_cluster.node_for(keys[0])
    # (parallelism, pool size, round trips to the node): the keys in flight together share
    # one batch; 0 means the pool size, and a larger value is capped at it
    for parallelism, pool_size, round_trips in (
        (1, 3, 4),
        (2, 3, 2),
        (0, 3, 2),
        (8, 3, 2),
        (0, 4, 1),
    ):
        store_settings = settings(
            redis_cluster.url, cluster_pipeline_parallelism=parallelism, pool_size=pool_size
        )
        async with open_store(store_settings) as store:
            with node.client() as client:
                client.ping()
                before = read_and_write_events(client)
                values = await store.increment([Increment(key, 1, 60, False) for key in keys])
                after = read_and_write_events(client)
            assert len(set(values)) == 1
            assert after[0] - before[0] - 1 == round_trips, parallelism  # less the INFO
            # one connection carries the batches
            assert router(store).nodes[(HOST, node.port)].pool.members == 1


async def test_a_single_seed_finds_every_node(redis_cluster: ClusterDeployment) -> None:
    keys = keys_on_every_node(redis_cluster, per_node=1)
    async with open_store(settings(redis_cluster.nodes[0].address)) as store:
        assert await store.increment([Increment(key, 5, 60, False) for key in keys]) == [5, 5, 5]
        assert len(router(store).nodes) == len(redis_cluster.nodes)


async def test_moved_redirections_are_followed(redis_cluster: ClusterDeployment) -> None:
    keys = keys_on_every_node(redis_cluster, per_node=1)
    async with open_store(settings(redis_cluster.url)) as store:
        routes = router(store)
        await store.get([(keys[0], False)])  # slots loaded
        slot = key_slot(keys[0].encode())
        right = routes._slots[slot]
        wrong = routes.node(HOST, redis_cluster.node_for(keys[1]).port)
        assert right is not wrong
        routes._slots[slot] = wrong  # as if the slot had moved since the map was loaded
        assert await store.increment([Increment(keys[0], 3, 60, False)]) == [3]
        assert await store.get([(keys[0], False)]) == [3]  # the map is reloaded first
        assert routes._slots[slot] is right
    with redis_cluster.node_for(keys[0]).client() as client:
        assert client.get(keys[0]) == "3"


async def test_concurrent_calls_share_one_batch_per_node(redis_cluster: ClusterDeployment) -> None:
    keys = keys_on_every_node(redis_cluster, per_node=1)
    store_settings = settings(redis_cluster.url, cluster_pipeline_parallelism=0)
    async with open_store(store_settings) as store:
        await store.get([(key, False) for key in keys])  # connected to every node, slots loaded
        clients = {node.port: node.client() for node in redis_cluster.nodes}
        try:
            for client in clients.values():
                client.ping()
            before = {port: read_and_write_events(c) for port, c in clients.items()}
            results = await asyncio.gather(
                *(
                    store.increment([Increment(key, 1, 60, False) for key in keys])
                    for _ in range(10)
                )
            )
            after = {port: read_and_write_events(c) for port, c in clients.items()}
        finally:
            for client in clients.values():
                client.close()
        for position in range(len(keys)):
            assert sorted(result[position] for result in results) == list(range(1, 11))
    for node in redis_cluster.nodes:
        # the ten calls' commands for this node in one write, plus the INFO
        assert after[node.port][0] - before[node.port][0] == 2, node.address


def tls_settings(cluster: ClusterDeployment, **changes: object) -> KvStoreSettings:
    assert cluster.tls is not None
    options: dict[str, object] = {
        "tls": True,
        "tls_cacert": str(cluster.tls.ca),
        "tls_client_cert": str(cluster.tls.client_cert),
        "tls_client_key": str(cluster.tls.client_key),
        "tls_skip_hostname_verification": True,
        "auth": PASSWORD,
    }
    options.update(changes)
    url = str(options.pop("url", cluster.url))
    return settings(url, **options)


async def test_tls_and_auth_reach_every_node(secure_cluster: ClusterDeployment) -> None:
    keys = keys_on_every_node(secure_cluster, per_node=1)
    async with open_store(tls_settings(secure_cluster)) as store:
        assert await store.increment([Increment(key, 2, 60, False) for key in keys]) == [2, 2, 2]
        # the nodes found in CLUSTER SLOTS get the same TLS and credentials as the seeds
        assert len(router(store).nodes) == len(secure_cluster.nodes)
    for key in keys:
        with secure_cluster.node_for(key).client() as client:
            assert client.get(key) == "2"


async def test_credentials_in_the_url_apply_to_every_node(
    secure_cluster: ClusterDeployment,
) -> None:
    keys = keys_on_every_node(secure_cluster, per_node=1)
    url = f"rediss://:{PASSWORD}@{secure_cluster.nodes[0].address}"
    async with open_store(tls_settings(secure_cluster, url=url, auth="")) as store:
        assert await store.increment([Increment(key, 1, 60, False) for key in keys]) == [1, 1, 1]
        assert len(router(store).nodes) == len(secure_cluster.nodes)


@pytest.mark.parametrize(
    ("changes", "error"),
    [
        ({"auth": "wrong"}, "WRONGPASS|invalid"),
        ({"auth": ""}, "Authentication required"),
        ({"tls_client_cert": "", "tls_client_key": ""}, r"reset|certificate required|closed"),
    ],
)
async def test_tls_and_auth_failures_are_backend_errors(
    secure_cluster: ClusterDeployment, changes: dict[str, object], error: str
) -> None:
    async with open_store(tls_settings(secure_cluster, **changes), start=False) as store:
        with pytest.raises(BackendError, match=error):
            await store.increment([Increment("any", 1, 60, False)])


async def test_pipeline_window_gathers_calls_per_node(redis_cluster: ClusterDeployment) -> None:
    keys = keys_on_every_node(redis_cluster, per_node=1)
    store_settings = settings(
        redis_cluster.url, pipeline_window=0.02, cluster_pipeline_parallelism=0, timeout=5.0
    )
    async with open_store(store_settings) as store:
        await store.get([(key, False) for key in keys])  # connected, slots loaded
        clients = {node.port: node.client() for node in redis_cluster.nodes}
        try:
            for client in clients.values():
                client.ping()
            before = {port: read_and_write_events(c) for port, c in clients.items()}

            async def call(delay: float) -> list[int]:
                await asyncio.sleep(delay)  # calls from different passes of the loop
                return await store.increment([Increment(key, 1, 60, False) for key in keys])

            results = await asyncio.gather(*(call(i * 0.002) for i in range(5)))
            after = {port: read_and_write_events(c) for port, c in clients.items()}
        finally:
            for client in clients.values():
                client.close()
    for position in range(len(keys)):
        assert sorted(result[position] for result in results) == [1, 2, 3, 4, 5]
    for node in redis_cluster.nodes:
        # five calls 2 ms apart, in one write per node within the 20 ms window, plus the INFO
        assert after[node.port][0] - before[node.port][0] == 2, node.address


async def test_pool_on_empty_error_in_cluster_mode(redis_cluster: ClusterDeployment) -> None:
    keys = keys_on_every_node(redis_cluster, per_node=1)
    node = redis_cluster.node_for(keys[0])
    store_settings = settings(
        redis_cluster.url,
        pool_size=1,
        pool_on_empty_behavior="ERROR",
        pool_on_empty_wait_duration=0.05,
        timeout=5.0,
    )
    async with open_store(store_settings) as store:
        await store.get([(keys[0], False)])
        with paused_writes(node):
            first = asyncio.create_task(store.increment([Increment(keys[0], 1, 60, False)]))
            await asyncio.sleep(0.01)  # its batch holds the only connection
            with pytest.raises(BackendError, match="connection pool is empty"):
                await store.increment([Increment(keys[0], 1, 60, False)])
        assert await first == [1]


def test_a_batch_splits_into_its_commands_for_redirections() -> None:
    commands = [
        encode_command("INCRBY", "edge_{tag}_1", 3),
        encode_command("EXPIRE", "edge_{tag}_1", 60),
        encode_get("a key\r\n$3\r\nwith RESP inside"),  # lengths, not delimiters, count
    ]
    assert split_commands(b"".join(commands)) == commands
    assert split_commands(b"") == []
    for broken in (b"+OK\r\n", b"*1\r\n:1\r\n", b"*1\r\n$5\r\nab\r\n"):
        with pytest.raises(ValueError):
            split_commands(broken)
