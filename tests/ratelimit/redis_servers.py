"""Throwaway Redis deployments for tests, from the Debian ``redis-server`` package.

:class:`RedisProcess` runs one ``redis-server`` (or sentinel) on a free loopback port (or a
unix socket, or TLS) with its config, data and log in a temporary directory.
:class:`SentinelDeployment` is a master, a replica and sentinels (password on the data nodes
and on the sentinels); :class:`ClusterDeployment` is a cluster of masters created with
``redis-cli --cluster create``. Readiness is polled with deadlines. The pytest fixtures at
the end are module-scoped; tests are skipped when ``redis-server`` is not installed.
Starting, retrying on a taken port and stopping come from
:class:`~tests.ratelimit.server_process.ServerProcess`.
"""

from __future__ import annotations

import asyncio
import contextlib
import shutil
import subprocess
import time
from collections.abc import AsyncIterator, Awaitable, Callable, Iterator, Sequence
from dataclasses import dataclass
from functools import partial
from pathlib import Path
from typing import Any, ClassVar, TypeVar

import pytest
import redis
from redis.backoff import NoBackoff
from redis.retry import Retry

from handlers.ratelimit.backends.redis import RedisStore
from handlers.ratelimit.settings import KvStoreSettings
from handlers.ratelimit.stats import StatsStore
from tests.ratelimit import server_process
from tests.ratelimit.server_process import (
    HOST,
    START_TIMEOUT,
    PortTaken,
    ServerProcess,
    free_port,
    running,
)

__all__ = ["HOST", "PortTaken", "free_port", "running"]  # shared helpers, re-exported

T = TypeVar("T")

PASSWORD = "main-secret"
ACL_USER, ACL_PASSWORD = "limiter", "limiter-secret"

_REDIS_SERVER = shutil.which("redis-server")
_REDIS_CLI = shutil.which("redis-cli")


def require_redis() -> str:
    if _REDIS_SERVER is None:
        pytest.skip("redis-server is not installed (scripts/ensure-debian-packages.sh)")
    return _REDIS_SERVER


def wait_until(
    probe: Callable[[], T | None], *, timeout: float = START_TIMEOUT, what: str = "condition"
) -> T:
    """Poll ``probe`` until it returns something truthy (Redis and socket errors count as
    not yet)."""
    errors = (redis.RedisError, OSError)
    return server_process.wait_until(probe, timeout=timeout, what=what, retry_on=errors)


@dataclass(frozen=True)
class Certificates:
    """A test CA, a server certificate for ``redis.invalid`` only and a client certificate."""

    ca: Path
    server_cert: Path
    server_key: Path
    client_cert: Path
    client_key: Path


def make_certificates(directory: Path) -> Certificates:
    if shutil.which("openssl") is None:
        pytest.skip("openssl is not installed")
    directory.mkdir(parents=True, exist_ok=True)
    ec = ["-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:prime256v1", "-nodes"]

    def openssl(*args: str) -> None:
        subprocess.run(["openssl", *args], cwd=directory, check=True, capture_output=True)

    openssl(
        "req", "-x509", *ec, "-keyout", "ca.key", "-out", "ca.crt", "-days", "2",
        "-subj", "/CN=ratelimit-test-ca",
        "-addext", "basicConstraints=critical,CA:TRUE",
        "-addext", "keyUsage=critical,keyCertSign,cRLSign",
    )  # fmt: skip
    extensions = {
        "server": "subjectAltName=DNS:redis.invalid\nextendedKeyUsage=serverAuth\n",
        "client": "extendedKeyUsage=clientAuth\n",
    }
    for name, extension in extensions.items():
        (directory / f"{name}.ext").write_text(extension)
        openssl("req", "-new", *ec, "-keyout", f"{name}.key", "-out", f"{name}.csr",
                "-subj", f"/CN={name}.redis.invalid")  # fmt: skip
        openssl("x509", "-req", "-in", f"{name}.csr", "-CA", "ca.crt", "-CAkey", "ca.key",
                "-CAcreateserial", "-out", f"{name}.crt", "-days", "2",
                "-extfile", f"{name}.ext")  # fmt: skip
    return Certificates(
        ca=directory / "ca.crt",
        server_cert=directory / "server.crt",
        server_key=directory / "server.key",
        client_cert=directory / "client.crt",
        client_key=directory / "client.key",
    )


class RedisProcess(ServerProcess):
    """One ``redis-server`` (``sentinel=True``: a sentinel) in ``directory``."""

    name: ClassVar[str] = "redis-server"
    log_name: ClassVar[str] = "redis.log"
    probe_errors: ClassVar[tuple[type[BaseException], ...]] = (redis.RedisError, OSError)

    def __init__(
        self,
        directory: Path,
        *,
        port: int | None = None,
        unix_socket: Path | None = None,
        password: str | None = None,
        tls: Certificates | None = None,
        sentinel: bool = False,
        config: Sequence[str] = (),
    ) -> None:
        super().__init__(directory, port=port)
        self.unix_socket = unix_socket
        self.password = password
        self.tls = tls
        self.sentinel = sentinel
        self.config = list(config)

    def client(self, **options: Any) -> redis.Redis:
        """A synchronous client (replies decoded); close it (``with``)."""
        options.setdefault("password", self.password)
        options.setdefault("socket_timeout", 10)
        options.setdefault("decode_responses", True)
        if self.unix_socket is not None and self.port == 0:
            return redis.Redis(unix_socket_path=str(self.unix_socket), **options)
        if self.tls is not None:
            options.update(
                ssl=True,
                ssl_certfile=str(self.tls.client_cert),
                ssl_keyfile=str(self.tls.client_key),
                ssl_ca_certs=str(self.tls.ca),
                ssl_check_hostname=False,
            )
        return redis.Redis(host=HOST, port=self.port, **options)

    def _config_text(self) -> str:
        lines = [f"bind {HOST}", f"dir {self.directory}", "save ''", "appendonly no"]
        if self.tls is not None:
            lines += [
                "port 0",
                f"tls-port {self.port}",
                f"tls-cert-file {self.tls.server_cert}",
                f"tls-key-file {self.tls.server_key}",
                f"tls-ca-cert-file {self.tls.ca}",
                "tls-auth-clients yes",
            ]
        else:
            lines.append(f"port {self.port}")
        if self.unix_socket is not None:
            lines += [f"unixsocket {self.unix_socket}", "unixsocketperm 700"]
        if not self.sentinel:
            lines.append("enable-debug-command local")
        if self.password:
            lines.append(f"requirepass {self.password}")
        return "\n".join(lines + self.config) + "\n"

    def _command(self) -> list[str]:
        binary = require_redis()
        conf = self.directory / ("sentinel.conf" if self.sentinel else "redis.conf")
        conf.write_text(self._config_text())
        return [binary, str(conf), *(["--sentinel"] if self.sentinel else [])]

    def _answers(self) -> bool:
        once = Retry(NoBackoff(), 0)
        with self.client(socket_timeout=1, socket_connect_timeout=1, retry=once) as client:
            return bool(client.ping())


class SentinelDeployment:
    """A master and a replica (password :data:`PASSWORD`) watched by sentinels (password
    ``sentinel_password``) under :attr:`master_name`."""

    master_name = "rl-master"
    sentinel_password = "sentinel-secret"

    def __init__(self, directory: Path, sentinels: int = 2) -> None:
        self.directory = directory
        auth = [f"masterauth {PASSWORD}", "repl-diskless-sync-delay 0"]
        self.master = RedisProcess(directory / "master", password=PASSWORD, config=auth)
        self.replica = RedisProcess(directory / "replica", password=PASSWORD, config=auth)
        self.sentinels = [
            RedisProcess(directory / f"sentinel{i}", password=self.sentinel_password, sentinel=True)
            for i in range(sentinels)
        ]

    @property
    def url(self) -> str:
        """``KVSTORE_URL`` for the deployment."""
        return ",".join([self.master_name, *(s.address for s in self.sentinels)])

    def start(self) -> SentinelDeployment:
        try:
            self.master.start()
            self.replica.config.append(f"replicaof {HOST} {self.master.port}")
            self.replica.start()
            wait_until(self._replica_in_sync, what="the replica to sync")
            for sentinel in self.sentinels:
                sentinel.config += [
                    f"sentinel monitor {self.master_name} {HOST} {self.master.port} 1",
                    f"sentinel auth-pass {self.master_name} {PASSWORD}",
                    f"sentinel sentinel-pass {self.sentinel_password}",
                    f"sentinel down-after-milliseconds {self.master_name} 5000",
                    f"sentinel failover-timeout {self.master_name} 10000",
                ]
                sentinel.start()
            for sentinel in self.sentinels:
                wait_until(partial(self._sees_replica, sentinel), what="sentinels to see it")
        except BaseException:
            self.stop()
            raise
        return self

    def _replica_in_sync(self) -> bool:
        with self.replica.client() as client:
            return bool(client.info("replication")["master_link_status"] == "up")

    def _sees_replica(self, sentinel: RedisProcess) -> bool:
        with sentinel.client() as client:
            replicas = client.execute_command("SENTINEL", "REPLICAS", self.master_name)
        # redis-py parses the reply into dicts
        return any(
            replica["flags"] == "slave" and replica["master-link-status"] == "ok"
            for replica in replicas
        )

    def master_address(self) -> tuple[str, int]:
        with self.sentinels[0].client() as client:
            host, port = client.execute_command(
                "SENTINEL", "get-master-addr-by-name", self.master_name
            )
        return host, int(port)

    def node(self, port: int) -> RedisProcess:
        return next(n for n in (self.master, self.replica) if n.port == port)

    def current_master(self) -> RedisProcess:
        return self.node(self.master_address()[1])

    def failover(self) -> RedisProcess:
        """``SENTINEL FAILOVER``; returns the promoted node once it is master and every
        sentinel names it."""
        old = self.current_master()
        with self.sentinels[0].client() as client:
            client.execute_command("SENTINEL", "FAILOVER", self.master_name)
        new = self.replica if old is self.master else self.master

        def promoted() -> bool:
            with new.client() as client:
                if client.info("replication")["role"] != "master":
                    return False
            for sentinel in self.sentinels:
                with sentinel.client() as client:
                    reply = client.execute_command(
                        "SENTINEL", "get-master-addr-by-name", self.master_name
                    )
                if int(reply[1]) != new.port:
                    return False
            return True

        wait_until(promoted, timeout=30, what="the failover")
        return new

    def stop(self) -> None:
        for process in (*self.sentinels, self.replica, self.master):
            process.stop()


class ClusterDeployment:
    """``masters`` cluster nodes (no replicas), all slots assigned; with ``password``
    (``requirepass``) and ``tls`` (TLS only, client certificates required, the cluster bus
    over TLS too) when given."""

    def __init__(
        self,
        directory: Path,
        masters: int = 3,
        *,
        password: str | None = None,
        tls: Certificates | None = None,
    ) -> None:
        self.password = password
        self.tls = tls
        config = ["cluster-enabled yes"]
        if tls is not None:
            config += [
                "tls-cluster yes",
                f"tls-client-cert-file {tls.client_cert}",
                f"tls-client-key-file {tls.client_key}",
            ]
        if password:
            config.append(f"masterauth {password}")
        self.nodes = [
            RedisProcess(
                directory / f"node{i}",
                port=port,
                password=password,
                tls=tls,
                config=[*config, f"cluster-config-file nodes-{port}.conf"],
            )
            for i, port in enumerate(free_port(cluster_bus=True) for _ in range(masters))
        ]

    @property
    def url(self) -> str:
        return ",".join(node.address for node in self.nodes)

    def start(self) -> ClusterDeployment:
        try:
            for node in self.nodes:
                node.start()
            if _REDIS_CLI is None:
                pytest.skip("redis-cli is not installed")
            create = [_REDIS_CLI, "--cluster", "create", *(n.address for n in self.nodes)]
            if self.password:
                create += ["-a", self.password, "--no-auth-warning"]
            if self.tls is not None:
                create += ["--tls", "--cacert", str(self.tls.ca), "--sni", "redis.invalid"]
                create += ["--cert", str(self.tls.client_cert), "--key", str(self.tls.client_key)]
            subprocess.run(
                [*create, "--cluster-replicas", "0", "--cluster-yes"],
                check=True,
                capture_output=True,
                timeout=60,
            )
            wait_until(self._ready, what="cluster_state:ok on every node")
        except BaseException:
            self.stop()
            raise
        return self

    def _ready(self) -> bool:
        for node in self.nodes:
            with node.client() as client:
                info = client.execute_command("CLUSTER", "INFO")
            if (
                "cluster_state:ok" not in info
                or f"cluster_known_nodes:{len(self.nodes)}" not in info
            ):
                return False
        return True

    def slot_owner(self, slot: int) -> RedisProcess:
        """The node serving ``slot``, as the first node's map says."""
        with self.nodes[0].client() as client:
            ranges = client.execute_command("CLUSTER", "SLOTS")
        for start, end, primary, *_ in ranges:
            if start <= slot <= end:
                return next(node for node in self.nodes if node.port == int(primary[1]))
        raise LookupError(f"slot {slot} is not served")

    def node_for(self, key: str) -> RedisProcess:
        """The node serving ``key``'s slot."""
        with self.nodes[0].client() as client:
            slot = client.execute_command("CLUSTER", "KEYSLOT", key)
        return self.slot_owner(int(slot))

    def node_id(self, node: RedisProcess) -> str:
        with node.client() as client:
            return str(client.execute_command("CLUSTER", "MYID"))

    def errorstats(self) -> dict[str, int]:
        """Error replies sent by every node, by code (``MOVED``, ``ASK``...), summed
        (``INFO errorstats``; :meth:`reset_stats` zeroes them)."""
        totals: dict[str, int] = {}
        for node in self.nodes:
            with node.client() as client:
                for name, value in client.info("errorstats").items():
                    code = name.removeprefix("errorstat_")
                    totals[code] = totals.get(code, 0) + int(value["count"])
        return totals

    def reset_stats(self) -> None:
        for node in self.nodes:
            with node.client() as client:
                client.config_resetstat()

    def migration(self, slot: int, target: RedisProcess) -> SlotMigration:
        return SlotMigration(self, slot, target)

    def stop(self) -> None:
        for node in self.nodes:
            node.stop()


class SlotMigration:
    """Moves ``slot`` to ``target`` as ``redis-cli --cluster reshard`` does, one step per
    method, so that a test can run load between the steps: :meth:`begin` (``CLUSTER
    SETSLOT IMPORTING`` on the target, ``MIGRATING`` on the source: the source answers
    ``ASK`` for the slot's keys it no longer holds), :meth:`move_keys` (``MIGRATE`` some of
    the keys), :meth:`assign_target` (``SETSLOT NODE`` on the target: it owns the slot, the
    source still answers ``ASK``) and :meth:`assign_others` (``SETSLOT NODE`` on the source
    and every other node: they answer ``MOVED``)."""

    def __init__(self, cluster: ClusterDeployment, slot: int, target: RedisProcess) -> None:
        self.cluster = cluster
        self.slot = slot
        self.source = cluster.slot_owner(slot)
        self.target = target
        if self.source is target:
            raise ValueError(f"slot {slot} is already on {target.address}")
        self.source_id = cluster.node_id(self.source)
        self.target_id = cluster.node_id(target)
        self.moved_keys = 0

    def begin(self) -> None:
        with self.target.client() as client:
            client.execute_command("CLUSTER", "SETSLOT", self.slot, "IMPORTING", self.source_id)
        with self.source.client() as client:
            client.execute_command("CLUSTER", "SETSLOT", self.slot, "MIGRATING", self.target_id)

    def keys_left(self) -> int:
        """Keys of the slot still on the source."""
        with self.source.client() as client:
            return int(client.execute_command("CLUSTER", "COUNTKEYSINSLOT", self.slot))

    def move_keys(self, count: int) -> int:
        """``MIGRATE`` up to ``count`` of the slot's keys still on the source (atomic: a key
        is on one node or the other); how many moved."""
        with self.source.client() as client:
            keys = client.execute_command("CLUSTER", "GETKEYSINSLOT", self.slot, count)
            if keys:
                client.execute_command(
                    "MIGRATE", HOST, self.target.port, "", 0, 5000, "KEYS", *keys
                )
        self.moved_keys += len(keys)
        return len(keys)

    def assign_target(self) -> None:
        with self.target.client() as client:
            client.execute_command("CLUSTER", "SETSLOT", self.slot, "NODE", self.target_id)

    def assign_others(self) -> None:
        for node in [self.source] + [
            n for n in self.cluster.nodes if n not in (self.source, self.target)
        ]:
            with node.client() as client:
                client.execute_command("CLUSTER", "SETSLOT", self.slot, "NODE", self.target_id)


def read_and_write_events(client: redis.Redis) -> tuple[int, int]:
    """The server's ``total_reads_processed`` and ``total_writes_processed``: socket read and
    write events on client connections. A pipelined call costs one of each; so does the
    ``INFO`` that reads them (``client`` stays connected between the two readings)."""
    stats = client.info("stats")
    return int(stats["total_reads_processed"]), int(stats["total_writes_processed"])


def store_settings(address: str, **changes: Any) -> KvStoreSettings:
    """Settings of one instance at ``address`` (TCP unless told otherwise)."""
    changes.setdefault("socket_type", "tcp")
    return KvStoreSettings(url=address, **changes)


@contextlib.asynccontextmanager
async def open_store(
    settings: KvStoreSettings,
    *,
    per_second: KvStoreSettings | None = None,
    stats: StatsStore | None = None,
    start: bool = True,
) -> AsyncIterator[RedisStore]:
    store = RedisStore(settings, per_second=per_second, stats=stats)
    try:
        if start:
            await store.start()
        yield store
    finally:
        await store.close()


async def eventually(
    probe: Callable[[], Awaitable[T | None]], *, within: float = 10.0, what: str = "condition"
) -> T:
    """Await ``probe`` until it returns something truthy, for at most ``within`` seconds."""
    deadline = time.monotonic() + within
    while True:
        result = await probe()
        if result:
            return result
        if time.monotonic() > deadline:
            raise TimeoutError(f"timed out waiting for {what}")
        await asyncio.sleep(0.01)


@contextlib.contextmanager
def paused_writes(server: RedisProcess) -> Iterator[None]:
    """``CLIENT PAUSE ... WRITE``: write commands (INCRBY, EXPIRE) wait until the end of the
    block; reads and connects go on."""
    with server.client() as client:
        client.execute_command("CLIENT", "PAUSE", 30000, "WRITE")
        try:
            yield
        finally:
            client.execute_command("CLIENT", "UNPAUSE")


@pytest.fixture(scope="module")
def redis_server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[RedisProcess]:
    """A plain TCP server (no auth, DEBUG enabled)."""
    with running(RedisProcess(tmp_path_factory.mktemp("redis"))) as server:
        yield server


@pytest.fixture(scope="module")
def redis_second_server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[RedisProcess]:
    """Another plain TCP server (the per-second instance)."""
    with running(RedisProcess(tmp_path_factory.mktemp("redis-second"))) as server:
        yield server


@pytest.fixture(scope="module")
def redis_auth_server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[RedisProcess]:
    """``requirepass`` :data:`PASSWORD`, and ACL user :data:`ACL_USER`."""
    acl = f"user {ACL_USER} on >{ACL_PASSWORD} ~* &* +@all"
    process = RedisProcess(tmp_path_factory.mktemp("redis-auth"), password=PASSWORD, config=[acl])
    with running(process) as server:
        yield server


@pytest.fixture(scope="module")
def redis_unix_server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[RedisProcess]:
    """Listening on a unix socket only."""
    directory = tmp_path_factory.mktemp("redis-unix")
    process = RedisProcess(directory, port=0, unix_socket=directory / "redis.sock")
    with running(process) as server:
        yield server


@pytest.fixture(scope="module")
def redis_tls_server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[RedisProcess]:
    """TLS only, client certificates required; its certificate names ``redis.invalid``."""
    directory = tmp_path_factory.mktemp("redis-tls")
    certificates = make_certificates(directory / "certs")
    with running(RedisProcess(directory, tls=certificates)) as server:
        yield server


@pytest.fixture(scope="module")
def redis_sentinel(tmp_path_factory: pytest.TempPathFactory) -> Iterator[SentinelDeployment]:
    deployment = SentinelDeployment(tmp_path_factory.mktemp("redis-sentinel")).start()
    try:
        yield deployment
    finally:
        deployment.stop()


@pytest.fixture(scope="module")
def redis_cluster(tmp_path_factory: pytest.TempPathFactory) -> Iterator[ClusterDeployment]:
    deployment = ClusterDeployment(tmp_path_factory.mktemp("redis-cluster")).start()
    try:
        yield deployment
    finally:
        deployment.stop()
