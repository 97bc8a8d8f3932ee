"""RedisStore, type cluster, while a slot migrates under load: ``MOVED`` and ``ASK``.

Three real masters (``redis-server --cluster-enabled yes``). Concurrent callers increment
rate-limit keys of one slot (some already live, some created during the move) and keys on
the other masters, while the slot moves to another master in the steps of ``redis-cli
--cluster reshard`` (``CLUSTER SETSLOT IMPORTING``/``MIGRATING``, ``MIGRATE`` a few keys at a
time, ``SETSLOT NODE`` on the target, then on the others). Every increment must be counted
exactly once (the values each key returned are 1..n with none missing or repeated, and the
key holds n, with its expiry), no call may fail, and the router must have followed both
kinds of redirection: as many as the servers sent (``INFO errorstats``).

The deterministic cases first: a key already moved (INCRBY and EXPIRE both answered ASK:
each is re-sent after its own ASKING), a new key during the move, and a redirection of only
some commands of a batch (only those are re-sent).
"""

from __future__ import annotations

import asyncio
import random
import uuid
from collections import defaultdict
from collections.abc import Iterator

import pytest
from redis.crc import key_slot

from handlers.ratelimit.backends.base import BackendError, Increment
from handlers.ratelimit.backends.redis import RedisStore
from handlers.ratelimit.backends.redis_connections import ClusterRouter
from handlers.ratelimit.backends.redis_protocol import encode_get, encode_increment
from handlers.ratelimit.settings import KvStoreSettings
from tests.ratelimit.redis_servers import (
    ClusterDeployment,
    RedisProcess,
    open_store,
)

EXPIRE = 600


@pytest.fixture(scope="module")
def cluster(tmp_path_factory: pytest.TempPathFactory) -> Iterator[ClusterDeployment]:
    """A cluster of its own: the tests move slots."""
    deployment = ClusterDeployment(tmp_path_factory.mktemp("redis-cluster-migration")).start()
    try:
        yield deployment
    finally:
        deployment.stop()


def settings(url: str, **changes: object) -> KvStoreSettings:
    options: dict[str, object] = {"type": "cluster", "socket_type": "tcp", "url": url}
    options.update(changes)
    return KvStoreSettings(**options)  # type: ignore[arg-type]


def router(store: RedisStore) -> ClusterRouter:
    return store._main.router  # type: ignore[union-attr]


def slot_keys(count: int) -> tuple[int, list[str]]:
    """``count`` rate-limit keys in one slot (a hash tag), and the slot."""
    tag = uuid.uuid4().hex[:8]
    keys = [f"edge_remote_address_{{10.{tag}}}.{i}_1700000000" for i in range(count)]
    return key_slot(keys[0].encode()), keys


def other_node_keys(cluster: ClusterDeployment, slot_node: RedisProcess) -> list[str]:
    """One key on each master other than ``slot_node``."""
    prefix = f"edge_path_{uuid.uuid4().hex[:8]}_"
    found: dict[int, str] = {}
    n = 0
    while len(found) < len(cluster.nodes) - 1:
        key = f"{prefix}{n}"
        n += 1
        port = cluster.node_for(key).port
        if port != slot_node.port:
            found.setdefault(port, key)
    return list(found.values())


def another_node(cluster: ClusterDeployment, node: RedisProcess) -> RedisProcess:
    return next(other for other in cluster.nodes if other is not node)


def redirections_sent(cluster: ClusterDeployment) -> tuple[int, int]:
    """(ASK, MOVED) replies sent by the nodes since their stats were reset. (Their other
    errors are the test clients' ``CLIENT SETINFO``, which Redis 7.0 does not know.)"""
    sent = cluster.errorstats()
    return sent.get("ASK", 0), sent.get("MOVED", 0)


def stored(cluster: ClusterDeployment, key: str) -> tuple[int, int]:
    """(value, ttl) of ``key`` on the node now serving it."""
    with cluster.node_for(key).client() as client:
        value = client.get(key)
        return int(value) if value is not None else 0, int(client.ttl(key))


async def test_a_moved_key_is_followed_with_asking_before_each_command(
    cluster: ClusterDeployment,
) -> None:
    slot, (key,) = slot_keys(1)
    async with open_store(settings(cluster.url)) as store:
        assert await store.increment([Increment(key, 3, EXPIRE, False)]) == [3]
        migration = cluster.migration(slot, another_node(cluster, cluster.slot_owner(slot)))
        await asyncio.to_thread(migration.begin)
        assert await asyncio.to_thread(migration.move_keys, 10) == 1
        cluster.reset_stats()
        # INCRBY and EXPIRE are both answered ASK by the source, and both re-sent to the
        # target, each after an ASKING of its own (ASKING lasts one command): one increment
        assert await store.increment([Increment(key, 2, EXPIRE, False)]) == [5]
        assert await store.get([(key, False)]) == [5]
        routes = router(store)
        assert (routes.ask_redirections, routes.moved_redirections) == (3, 0)
        assert redirections_sent(cluster) == (3, 0)
        await asyncio.to_thread(migration.assign_target)
        await asyncio.to_thread(migration.assign_others)
        assert await store.increment([Increment(key, 1, EXPIRE, False)]) == [6]
        assert routes.moved_redirections == 2  # INCRBY and EXPIRE, then the map is reloaded
        assert await store.increment([Increment(key, 1, EXPIRE, False)]) == [7]
        assert routes.moved_redirections == 2
    value, ttl = stored(cluster, key)
    assert value == 7 and 0 < ttl <= EXPIRE


async def test_a_new_key_during_the_move_is_created_on_the_target(
    cluster: ClusterDeployment,
) -> None:
    slot, (old, new) = slot_keys(2)
    async with open_store(settings(cluster.url)) as store:
        assert await store.increment([Increment(old, 1, EXPIRE, False)]) == [1]
        target = another_node(cluster, cluster.slot_owner(slot))
        migration = cluster.migration(slot, target)
        await asyncio.to_thread(migration.begin)
        cluster.reset_stats()
        values = await store.increment(
            [Increment(old, 1, EXPIRE, False), Increment(new, 4, EXPIRE, False)]
        )
        assert values == [2, 4]
        assert router(store).ask_redirections == 2  # INCRBY and EXPIRE of the new key
        await asyncio.to_thread(migration.move_keys, 10)
        await asyncio.to_thread(migration.assign_target)
        await asyncio.to_thread(migration.assign_others)
    with target.client() as client:
        assert client.get(old) == "2" and client.get(new) == "4"
        assert 0 < client.ttl(new) <= EXPIRE


async def test_only_the_redirected_commands_of_a_batch_are_sent_again(
    cluster: ClusterDeployment,
) -> None:
    slot, (here,) = slot_keys(1)
    owner = cluster.slot_owner(slot)
    elsewhere = other_node_keys(cluster, owner)[0]
    async with open_store(settings(cluster.url)) as store:
        await store.increment([Increment(elsewhere, 7, EXPIRE, False)])
        cluster.reset_stats()
        # a batch for ``here``'s node carrying a GET of a key it does not serve: the GET is
        # answered MOVED and sent again to its node; the INCRBY and EXPIRE run once
        data = encode_increment(here, 1, EXPIRE) + encode_get(elsewhere)
        replies = await router(store).run(here, data, 3)
        assert replies == [1, 1, b"7"]
        assert redirections_sent(cluster) == (0, 1)
    assert stored(cluster, here)[0] == 1


class Load:
    """Callers incrementing one hot key of the migrating slot and one key elsewhere per
    call, and a reader, until :meth:`stop`; what each key returned, and every failure."""

    def __init__(self, store: RedisStore, hot: list[str], cold: list[str]) -> None:
        self.store = store
        self.hot, self.cold = hot, cold
        self.values: dict[str, list[int]] = defaultdict(list)
        self.errors: list[BaseException] = []
        self.calls = 0
        self.reads = 0
        self._stopping = False
        self._tasks: list[asyncio.Task[None]] = []

    def start(self, callers: int) -> None:
        for n in range(callers):
            self._tasks.append(asyncio.create_task(self._caller(random.Random(n))))
        self._tasks.append(asyncio.create_task(self._reader(random.Random(-1))))

    async def _caller(self, rng: random.Random) -> None:
        while not self._stopping:
            keys = [rng.choice(self.hot), rng.choice(self.cold)]
            try:
                values = await self.store.increment([Increment(k, 1, EXPIRE, False) for k in keys])
            except BackendError as error:
                self.errors.append(error)
                await asyncio.sleep(0.001)
                continue
            for key, value in zip(keys, values, strict=True):
                self.values[key].append(value)
            self.calls += 1

    async def _reader(self, rng: random.Random) -> None:
        while not self._stopping:
            key = rng.choice(self.hot)
            floor = max(self.values[key], default=0)  # answered before the read began
            try:
                (value,) = await self.store.get([(key, False)])
            except BackendError as error:
                self.errors.append(error)
                await asyncio.sleep(0.001)
                continue
            if value < floor:
                self.errors.append(AssertionError(f"GET {key} gave {value} after {floor}"))
            self.reads += 1

    async def advance(self, calls: int) -> None:
        """Wait until ``calls`` more calls have been answered."""
        goal = self.calls + calls
        async with asyncio.timeout(20):
            while self.calls < goal:
                if self.errors:
                    raise AssertionError(f"calls failed: {self.errors[:3]}")
                await asyncio.sleep(0.002)

    async def stop(self) -> None:
        self._stopping = True
        await asyncio.gather(*self._tasks)


@pytest.mark.parametrize("parallelism", [1, 0])
async def test_a_slot_moves_under_load_without_losing_or_repeating_an_increment(
    cluster: ClusterDeployment, parallelism: int
) -> None:
    slot, hot = slot_keys(16)
    live, new = hot[:8], hot[8:]  # live before the move; created during it
    source = cluster.slot_owner(slot)
    target = another_node(cluster, source)
    cold = other_node_keys(cluster, source)
    store_settings = settings(cluster.url, cluster_pipeline_parallelism=parallelism)
    async with open_store(store_settings) as store:
        load = Load(store, live, cold)
        for key in live:  # live rate-limit keys in the slot before it moves
            (value,) = await store.increment([Increment(key, 1, EXPIRE, False)])
            load.values[key].append(value)
        migration = cluster.migration(slot, target)
        assert migration.keys_left() == len(live)
        cluster.reset_stats()
        load.start(callers=32)

        async def step(action: str, *args: int) -> None:
            await asyncio.to_thread(getattr(migration, action), *args)
            await load.advance(60)

        await load.advance(60)
        await step("begin")
        load.hot = hot  # the new keys are created during the move (on the target, by ASK)
        await load.advance(60)
        while migration.keys_left():
            await step("move_keys", 2)  # a few keys at a time, with load in between
        await step("assign_target")
        await step("assign_others")
        await load.advance(200)
        await load.stop()
        routes = router(store)
        asks, moves = routes.ask_redirections, routes.moved_redirections

    assert load.errors == []
    assert migration.moved_keys == len(live)
    # both kinds of redirection happened, and each one sent was followed by the router
    assert asks > 0 and moves > 0
    assert redirections_sent(cluster) == (asks, moves)
    with source.client() as client:
        assert client.execute_command("CLUSTER", "COUNTKEYSINSLOT", slot) == 0
    assert cluster.slot_owner(slot) is target
    for key in [*hot, *cold]:
        returned = sorted(load.values[key])
        # each increment of 1 was counted once: the values returned are 1..n, none missing
        # (lost) or repeated (counted twice), and the key holds n with its expiry
        assert returned == list(range(1, len(returned) + 1)), key
        value, ttl = stored(cluster, key)
        assert value == len(returned), key
        assert 0 < ttl <= EXPIRE, key
    assert all(load.values[key] for key in new)  # new keys were created during the move
    assert load.reads > 0
