"""The bubblewrap sandbox: every agent program in namespaces of its own.

:class:`Bubblewrap` starts every program in new user, PID, IPC, UTS, mount, cgroup and network
namespaces, as an unprivileged user, with a root file system made of the host's system
directories (read-only), an ``/etc`` of its own (``sandbox_files.py``), a fresh ``/proc`` and
``/dev``, and the run directory: the only writable place. Nothing else of the host is visible:
not the service's data directory, database, blobs or environment, not other runs, not the
host's processes. Every process of a run ends with it (``pid_namespace.py``). util-linux's
``prlimit`` in front of the program sets its resource limits (``rlimits.py``).
"""

from __future__ import annotations

import os
import shutil
import subprocess
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path

from handlers.agents.egress import EgressPolicy
from handlers.agents.runner.pid_namespace import PidNamespace
from handlers.agents.runner.rlimits import find_prlimit, find_system_program, prlimit_command
from handlers.agents.runner.run_directory import (
    RunDirectory,
    create_run_directory,
    fill_run_directory,
    remove_run_directory,
)
from handlers.agents.runner.sandbox import Launch, SandboxUnavailable
from handlers.agents.runner.sandbox_files import INSIDE_GID, INSIDE_UID, SharedFiles
from handlers.agents.runner.spec import RunSpec
from handlers.agents.runner.work_root import WORK_ROOT

__all__ = ["BRIDGE_PORT", "INSIDE_ROOT", "RUNTIME_DIR", "Bubblewrap"]

INSIDE_ROOT = Path("/agent")
"""The run directory as the program sees it: ``/agent/{workspace,input,output,tmp}``."""
RUNTIME_DIR = "/run/agent"
"""The sandbox's own files: the ``python`` shim, the outbound bridge and proxy socket."""
BRIDGE_PORT = 3128
"""Where the program finds its HTTP(S) proxy with ``network: outbound``: 127.0.0.1:3128."""
SHM_BYTES = 64 * 1024 * 1024
PROBE_TIMEOUT_SECONDS = 30.0

SYSTEM_DIRS = ("bin", "sbin", "lib", "lib32", "lib64", "libx32")


@dataclass
class Bubblewrap:
    """Every program in namespaces of its own under ``bwrap``; see the module docstring.

    ``run_as`` is the (uid, gid) bwrap itself runs as when the service runs as root, so that
    the program is an unprivileged user on the host too (its processes count against their
    own limits, and root's exemptions do not apply); None runs it as the service's user, which
    is unprivileged already.
    """

    bwrap: str = "bwrap"
    prlimit: str = "prlimit"
    setpriv: str = "setpriv"
    run_as: tuple[int, int] | None = None
    egress: EgressPolicy = field(default_factory=EgressPolicy)
    isolated: bool = True
    _python: str | None = None
    """The interpreter ``python`` names inside, when the system has no ``python`` of its own."""
    _system_binds: list[str] = field(default_factory=list)

    def __post_init__(self) -> None:
        self._system_binds = _system_binds()
        system_path = "/usr/local/bin:/usr/bin:/bin"
        if shutil.which("python", path=system_path) is None:
            self._python = shutil.which("python3", path=system_path)

    def describe(self) -> str:
        return "bubblewrap" + (f", as uid {self.run_as[0]}" if self.run_as is not None else "")

    def work_root(self, requested: Path | None) -> Path | None:
        return requested if requested is not None else WORK_ROOT.path(self.run_as)

    def prepare(self, directory: RunDirectory) -> None:
        self._shared_files()
        if self.run_as is None:
            return
        uid, gid = self.run_as
        directory.root.chmod(0o711)  # bwrap, as ``run_as``, passes through to the four below
        for top in (directory.workspace, directory.input, directory.output, directory.tmp):
            _chown_tree(top, uid, gid)

    def _shared_files(self) -> SharedFiles:
        return SharedFiles.of(WORK_ROOT.path(self.run_as))

    def visible(self, directory: RunDirectory) -> RunDirectory:
        del directory
        return RunDirectory(INSIDE_ROOT)

    def launch(
        self,
        spec: RunSpec,
        directory: RunDirectory,
        environment: Mapping[str, str],
        proxy_socket: Path | None,
    ) -> Launch:
        env = dict(environment)
        if self._python is not None:
            env["PATH"] = f"{RUNTIME_DIR}/bin:{env.get('PATH', '')}"
        if proxy_socket is not None:
            proxy = f"http://127.0.0.1:{BRIDGE_PORT}"
            for name in ("HTTP_PROXY", "HTTPS_PROXY", "http_proxy", "https_proxy"):
                env[name] = proxy
        return Launch(
            argv=self._argv(spec, directory, proxy_socket),
            env=env,
            cwd=Path("/"),
            containment=PidNamespace(),
        )

    def _argv(self, spec: RunSpec, directory: RunDirectory, proxy_socket: Path | None) -> list[str]:
        inside = RunDirectory(INSIDE_ROOT)
        shared = self._shared_files()
        argv = [
            *self._switch_user(),
            self.bwrap,
            "--unshare-user",
            "--unshare-pid",
            "--unshare-ipc",
            "--unshare-uts",
            "--unshare-net",
            "--unshare-cgroup-try",
            "--uid", str(INSIDE_UID),
            "--gid", str(INSIDE_GID),
            "--hostname", "agent",
            "--die-with-parent",
            "--new-session",
            "--disable-userns",
            *self._system_binds,
            "--ro-bind", str(shared.etc), "/etc",
            "--proc", "/proc",
            "--dev", "/dev",
            "--size", str(SHM_BYTES), "--tmpfs", "/dev/shm",
            "--bind", str(directory.workspace), str(inside.workspace),
            "--ro-bind", str(directory.input), str(inside.input),
            "--bind", str(directory.output), str(inside.output),
            "--bind", str(directory.tmp), str(inside.tmp),
            "--bind", str(directory.tmp), "/tmp",
        ]  # fmt: skip
        if self._python is not None:
            argv += ["--symlink", self._python, f"{RUNTIME_DIR}/bin/python"]
        command = [*prlimit_command(self.prlimit, spec), *spec.command]
        if proxy_socket is not None:
            bridge = f"{RUNTIME_DIR}/bridge.py"
            socket_inside = f"{RUNTIME_DIR}/proxy.sock"
            argv += ["--bind", str(proxy_socket), socket_inside]
            argv += ["--ro-bind", str(shared.bridge), bridge]
            python = self._python or "python3"
            command = [python, "-I", "-S", bridge, socket_inside, str(BRIDGE_PORT), "--", *command]
        argv += [
            "--remount-ro", "/dev",
            "--remount-ro", "/",
            "--chdir", str(inside.workspace),
            "--",
            *command,
        ]  # fmt: skip
        return argv

    def _switch_user(self) -> list[str]:
        """``setpriv`` to run bwrap as ``run_as``: a plain ``exec`` where the service's own
        switch (``subprocess``'s ``user=``) would fork the whole service first (tens of ms)."""
        if self.run_as is None:
            return []
        uid, gid = self.run_as
        return [self.setpriv, f"--reuid={uid}", f"--regid={gid}", "--clear-groups", "--"]

    def probe(self) -> None:
        if self.run_as is not None:
            setpriv = find_system_program("setpriv")
            if setpriv is None:
                raise SandboxUnavailable("setpriv (util-linux) is not installed")
            self.setpriv = setpriv
        found = shutil.which(self.bwrap)
        if found is None:
            raise SandboxUnavailable(f"bubblewrap ({self.bwrap}) is not installed")
        self.bwrap = found
        prlimit = find_prlimit()
        if prlimit is None:
            raise SandboxUnavailable("prlimit (util-linux) is not installed")
        self.prlimit = prlimit
        python = self._python or shutil.which("python3", path="/usr/local/bin:/usr/bin:/bin")
        if python is None:
            raise SandboxUnavailable(
                "no python3 under /usr/local/bin, /usr/bin or /bin to run agent programs with "
                "(Debian and Ubuntu: apt-get install python3)"
            )
        self._run_probe()

    def _run_probe(self) -> None:
        try:
            directory = create_run_directory("probe", self.work_root(None))
        except OSError as error:  # WorkRootError says which folder and what to do
            raise SandboxUnavailable(str(error)) from None
        try:
            fill_run_directory(directory, {"probe.py": b"print('sandbox ok')\n"}, None, {})
            self.prepare(directory)
            spec = RunSpec(execution_id="probe", command=("python", "probe.py"), timeout_seconds=30)
            env = {"PATH": "/usr/local/bin:/usr/bin:/bin", "LANG": "C.UTF-8"}
            launch = self.launch(spec, directory, env, None)
            done = subprocess.run(
                launch.argv,
                env=launch.env,
                cwd=launch.cwd,
                stdin=subprocess.DEVNULL,
                capture_output=True,
                timeout=PROBE_TIMEOUT_SECONDS,
                check=False,
            )
        except (OSError, subprocess.SubprocessError) as error:
            raise SandboxUnavailable(f"bwrap cannot be run: {error}") from None
        finally:
            remove_run_directory(directory)
        if done.returncode != 0 or done.stdout.strip() != b"sandbox ok":
            said = (done.stderr or done.stdout).decode(errors="replace").strip()[-500:]
            raise SandboxUnavailable(
                f"a test program did not run in the sandbox (exit status {done.returncode}): "
                f"{said or 'no output'}"
            )


def _system_binds() -> list[str]:
    """bwrap arguments exposing the host's system directories read-only."""
    binds = ["--ro-bind", "/usr", "/usr"]
    for name in SYSTEM_DIRS:
        path = Path("/") / name
        if path.is_symlink():
            binds += ["--symlink", os.readlink(path), str(path)]
        elif path.is_dir():
            binds += ["--ro-bind", str(path), str(path)]
    return binds


def _chown_tree(top: Path, uid: int, gid: int) -> None:
    os.chown(top, uid, gid, follow_symlinks=False)
    for folder, subfolders, files in os.walk(top):
        for name in (*subfolders, *files):
            os.chown(os.path.join(folder, name), uid, gid, follow_symlinks=False)
