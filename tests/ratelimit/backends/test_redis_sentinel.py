"""RedisStore, type sentinel: a master, a replica and two sentinels, all with passwords;
increments reach the master, and go on on the promoted replica after a failover."""

from __future__ import annotations

import time
import uuid

import pytest

from handlers.ratelimit.backends.base import BackendError, Increment
from handlers.ratelimit.settings import KvStoreSettings
from handlers.ratelimit.stats import StatsStore
from tests.ratelimit.redis_servers import (
    HOST,
    PASSWORD,
    SentinelDeployment,
    eventually,
    free_port,
    open_store,
)


def unique(name: str = "k") -> str:
    return f"rl-sentinel-{uuid.uuid4().hex[:10]}-{name}"


def settings(deployment: SentinelDeployment, **changes: object) -> KvStoreSettings:
    options: dict[str, object] = {
        "type": "sentinel",
        "socket_type": "tcp",
        "url": deployment.url,
        "auth": PASSWORD,
        "sentinel_auth": deployment.sentinel_password,
        "timeout": 5.0,
    }
    options.update(changes)
    return KvStoreSettings(**options)  # type: ignore[arg-type]


async def test_increments_reach_the_master(redis_sentinel: SentinelDeployment) -> None:
    a, b = unique("a"), unique("b")
    stats = StatsStore()
    async with open_store(settings(redis_sentinel), stats=stats) as store:
        assert await store.increment([Increment(a, 2, 60, False), Increment(b, 1, 30, False)]) == [
            2,
            1,
        ]
        assert await store.get([(a, False), (b, False), (unique(), False)]) == [2, 1, 0]
        assert store.connected()
    with redis_sentinel.current_master().client() as master:
        assert master.get(a) == "2"
        assert master.ttl(b) in (29, 30)
    assert stats.value("ratelimit.redis_pool.cx_total") == 1


async def test_an_unreachable_sentinel_is_skipped(redis_sentinel: SentinelDeployment) -> None:
    key = unique()
    dead = f"{HOST}:{free_port()}"
    url = ",".join(
        [redis_sentinel.master_name, dead, *(s.address for s in redis_sentinel.sentinels)]
    )
    async with open_store(settings(redis_sentinel, url=url)) as store:
        assert await store.increment([Increment(key, 1, 60, False)]) == [1]


@pytest.mark.parametrize(
    ("changes", "error"),
    [
        (
            {"sentinel_auth": "wrong"},
            "no sentinel gave the address of master rl-master.*(WRONGPASS|invalid)",
        ),
        ({"sentinel_auth": ""}, r"no sentinel gave the address.*(NOAUTH|Authentication required)"),
        ({"auth": "wrong"}, r"WRONGPASS|invalid"),
        ({"url": f"nobody,{HOST}:1"}, "no sentinel gave the address of master nobody"),
    ],
)
async def test_failures(
    redis_sentinel: SentinelDeployment, changes: dict[str, object], error: str
) -> None:
    if "url" in changes:
        changes["url"] = f"nobody,{redis_sentinel.sentinels[0].address}"
    async with open_store(settings(redis_sentinel, **changes), start=False) as store:
        with pytest.raises(BackendError, match=error):
            await store.increment([Increment(unique(), 1, 60, False)])


async def test_increments_continue_on_the_promoted_replica_after_a_failover(
    redis_sentinel: SentinelDeployment,
) -> None:
    key = unique()
    async with open_store(settings(redis_sentinel, pool_size=3)) as store:
        assert await store.increment([Increment(key, 1, 60, False)]) == [1]
        old = redis_sentinel.current_master()
        with old.client() as client:
            assert client.wait(1, 5000) == 1  # the replica has the counter
        new = redis_sentinel.failover()
        assert new is not old
        failures: list[str] = []

        async def counted_on_the_new_master() -> bool:
            try:
                (value,) = await store.increment([Increment(key, 1, 60, False)])
            except BackendError as error:
                failures.append(str(error))
                return False
            with new.client() as client:
                return bool(client.get(key) == str(value))

        # The demoted master keeps accepting writes until the sentinels reconfigure it
        # (seconds later); the store follows +switch-master before that.
        began = time.monotonic()
        await eventually(counted_on_the_new_master, within=4, what="increments on the new master")
        assert time.monotonic() - began < 4
        assert len(failures) <= 2, failures
        with new.client() as client:
            before = int(client.get(key) or 0)
        for step in range(1, 4):
            assert await store.increment([Increment(key, 1, 60, False)]) == [before + step]
        assert store.connected()
    with new.client() as client:
        assert client.get(key) == str(before + 3)
