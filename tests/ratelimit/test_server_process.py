"""The test servers' ports: picked where no outgoing connection can take them, and kept when
a server is started again (its clients know only that port)."""

from __future__ import annotations

import signal
import socket
from pathlib import Path

import pytest

from tests.ratelimit.redis_servers import HOST, PortTaken, RedisProcess
from tests.ratelimit.server_process import CLUSTER_BUS_OFFSET, client_port_floor, free_port


def test_free_ports_are_below_the_ports_of_outgoing_connections() -> None:
    floor = client_port_floor()
    for _ in range(50):
        assert free_port() < floor
        assert free_port(cluster_bus=True) + CLUSTER_BUS_OFFSET < floor


def test_a_restart_keeps_the_port_and_fails_where_it_is_taken(tmp_path: Path) -> None:
    server = RedisProcess(tmp_path / "redis").start()
    port = server.port
    try:
        server.signal(signal.SIGKILL)
        server.start()  # the same port, free again
        assert server.port == port
        with server.client() as client:
            assert client.ping()
        server.signal(signal.SIGKILL)
        with socket.socket() as squatter:
            squatter.bind((HOST, port))
            squatter.listen()
            with pytest.raises(PortTaken):
                server.start()
        assert server.port == port
    finally:
        server.stop()
