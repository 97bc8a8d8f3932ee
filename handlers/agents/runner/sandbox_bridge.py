"""Inside a sandbox with ``network: outbound``: the program's HTTP(S) proxy on 127.0.0.1.

This file runs *inside* the sandbox, with the system's ``python3 -I -S`` and the standard
library only: ``python3 bridge.py <proxy socket> <port> -- <command…>``. The sandbox has a
network namespace of its own with nothing but loopback; this bridge listens on
``127.0.0.1:<port>`` there (``HTTP_PROXY`` / ``HTTPS_PROXY`` point at it), and relays every
connection to the run's egress proxy, a Unix socket served by the agents worker outside
(``egress_proxy.py``), which decides where the program may connect. Then it starts the
command and exits with its status (or dies by the signal that ended it).
"""

from __future__ import annotations

import contextlib
import os
import signal
import socket
import sys
import threading

BUFFER_BYTES = 65536


def _pump(source: socket.socket, target: socket.socket) -> None:
    try:
        while True:
            chunk = source.recv(BUFFER_BYTES)
            if not chunk:
                break
            target.sendall(chunk)
    except OSError:
        pass
    finally:
        with contextlib.suppress(OSError):
            target.shutdown(socket.SHUT_WR)


def _relay(client: socket.socket, proxy_path: str) -> None:
    upstream = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    try:
        upstream.connect(proxy_path)
    except OSError:
        client.close()
        upstream.close()
        return
    back = threading.Thread(target=_pump, args=(upstream, client), daemon=True)
    back.start()
    _pump(client, upstream)
    back.join()
    client.close()
    upstream.close()


def _serve(listener: socket.socket, proxy_path: str) -> None:
    while True:
        try:
            client, _ = listener.accept()
        except OSError:
            return
        threading.Thread(target=_relay, args=(client, proxy_path), daemon=True).start()


def main(argv: list[str]) -> int:
    if len(argv) < 4 or argv[2] != "--":
        print("usage: bridge.py <proxy socket> <port> -- <command…>", file=sys.stderr)
        return 2
    proxy_path, port, command = argv[0], int(argv[1]), argv[3:]
    listener = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    listener.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    listener.bind(("127.0.0.1", port))
    listener.listen(128)
    child = os.fork()
    if child == 0:
        listener.close()
        try:
            os.execvp(command[0], command)
        except OSError as error:
            print(f"cannot start {command[0]!r}: {error}", file=sys.stderr)
        os._exit(127)
    # The supervisor sends SIGTERM to every process of the run: the command decides, and this
    # bridge keeps relaying until it has ended (ignored here only, after the fork).
    signal.signal(signal.SIGTERM, signal.SIG_IGN)
    threading.Thread(target=_serve, args=(listener, proxy_path), daemon=True).start()
    while True:
        try:
            _, status = os.waitpid(child, 0)
            break
        except InterruptedError:
            continue
    if os.WIFSIGNALED(status):
        number = os.WTERMSIG(status)
        signal.signal(number, signal.SIG_DFL)
        os.kill(os.getpid(), number)
    return os.waitstatus_to_exitcode(status) if os.WIFEXITED(status) else 1


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
