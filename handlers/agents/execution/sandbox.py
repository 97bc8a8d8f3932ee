"""Where an agent's program runs: isolated under bubblewrap (the default), or unisolated.

:class:`Bubblewrap` starts every program in new user, PID, IPC, UTS, mount, cgroup and network
namespaces, as an unprivileged user, with a root file system made of the host's system
directories (read-only), a synthetic ``/etc/passwd``, ``/etc/group`` and ``/etc/hosts``, a
fresh ``/proc`` and ``/dev``, and the run directory: the only writable place. Nothing else of
the host is visible: not the service's data directory, database, blobs or environment, not
other runs, not the host's processes. See README.md ("Isolation") for the whole picture.

:class:`Unsandboxed` (``AGENTS_SANDBOX=none``) runs the program as the service's own user with
the service's view of the machine: for trusted single-user development only.

Both put util-linux's ``prlimit`` in front of the program for its resource limits
(``rlimits.py``).
"""

from __future__ import annotations

import atexit
import contextlib
import fcntl
import logging
import os
import shutil
import stat
import subprocess
import tempfile
import threading
import time
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Protocol

from handlers.agents.egress import EgressPolicy
from handlers.agents.execution.pid_namespace import PidNamespace
from handlers.agents.execution.process_group import ProcessGroup
from handlers.agents.execution.rlimits import find_prlimit, find_system_program, prlimit_command
from handlers.agents.execution.run_directory import (
    RunDirectory,
    create_run_directory,
    fill_run_directory,
    remove_run_directory,
)
from handlers.agents.execution.spec import RunSpec

__all__ = [
    "BRIDGE_PORT",
    "Bubblewrap",
    "Containment",
    "Launch",
    "Sandbox",
    "SandboxUnavailable",
    "Unsandboxed",
    "make_sandbox",
]

log = logging.getLogger(__name__)

INSIDE_ROOT = Path("/agent")
"""The run directory as the program sees it: ``/agent/{workspace,input,output,tmp}``."""
RUNTIME_DIR = "/run/agent"
"""The sandbox's own files: the ``python`` shim, the outbound bridge and proxy socket."""
INSIDE_UID = 1000
INSIDE_GID = 1000
BRIDGE_PORT = 3128
"""Where the program finds its HTTP(S) proxy with ``network: outbound``: 127.0.0.1:3128."""
SHM_BYTES = 64 * 1024 * 1024
PROBE_TIMEOUT_SECONDS = 30.0

SYSTEM_DIRS = ("bin", "sbin", "lib", "lib32", "lib64", "libx32")
ETC_ENTRIES = (
    "alternatives",
    "bash.bashrc",
    "ca-certificates",
    "ca-certificates.conf",
    "crypto-policies",
    "gai.conf",
    "host.conf",
    "inputrc",
    "ld.so.cache",
    "ld.so.conf",
    "ld.so.conf.d",
    "localtime",
    "magic",
    "mime.types",
    "nsswitch.conf",
    "os-release",
    "pki",
    "profile",
    "protocols",
    "services",
    "ssl",
    "terminfo",
    "timezone",
)
"""What the program sees of the host's /etc (read-only): libraries, certificates, time zone and
interpreter configuration, nothing that names the host's users, services or secrets."""

PASSWD = (
    "root:x:0:0:root:/:/usr/sbin/nologin\n"
    f"agent:x:{INSIDE_UID}:{INSIDE_GID}:agent:/agent/workspace:/bin/sh\n"
    "nobody:x:65534:65534:nobody:/:/usr/sbin/nologin\n"
)
GROUP = f"root:x:0:\nagent:x:{INSIDE_GID}:\nnogroup:x:65534:\n"
HOSTS = "127.0.0.1\tlocalhost agent\n::1\tlocalhost ip6-localhost ip6-loopback\n"
SYNTHETIC_ETC = {"passwd": PASSWD, "group": GROUP, "hosts": HOSTS, "hostname": "agent\n"}
"""The sandbox's own users and names: nothing of the host's."""

INSTALL_HINT = (
    "install bubblewrap (Debian and Ubuntu: apt-get install bubblewrap; other systems: the "
    "bubblewrap package) on a kernel that allows unprivileged user namespaces "
    "(sysctl kernel.unprivileged_userns_clone=1 and user.max_user_namespaces > 0 where those "
    "exist; Ubuntu 24.04 and later also need kernel.apparmor_restrict_unprivileged_userns=0 or "
    "an AppArmor profile for bwrap), or set AGENTS_SANDBOX=none to run agent programs "
    "unisolated (trusted single-user development only)"
)


class SandboxUnavailable(RuntimeError):
    """The sandbox cannot be set up on this machine; the message says what is missing."""


class Containment(Protocol):
    """How the supervisor ends every process of a run, given the pid it started."""

    async def end(self, pid: int, grace_seconds: float) -> None: ...

    async def kill(self, pid: int) -> None: ...


@dataclass
class Launch:
    """How to start one run's program: what :func:`process.run_process` executes."""

    argv: list[str]
    env: dict[str, str]
    cwd: Path
    containment: Containment
    new_session: bool = False


class Sandbox(Protocol):
    """What the runner asks of the isolation it is given."""

    name: str
    isolated: bool
    egress: EgressPolicy

    def work_root(self, requested: Path | None) -> Path | None:
        """Where run directories are made (``requested``, or the sandbox's own default)."""
        ...

    def prepare(self, directory: RunDirectory) -> None:
        """Make the filled run directory usable by the program (blocking)."""
        ...

    def visible(self, directory: RunDirectory) -> RunDirectory:
        """The run directory's paths as the program sees them."""
        ...

    def launch(
        self,
        spec: RunSpec,
        directory: RunDirectory,
        environment: Mapping[str, str],
        proxy_socket: Path | None,
    ) -> Launch:
        """The command starting ``spec``'s program; ``proxy_socket`` is the run's egress proxy
        when the program has ``network: outbound``."""
        ...

    def probe(self) -> None:
        """Raise :class:`SandboxUnavailable` unless a program can run in this sandbox."""
        ...


@dataclass
class Unsandboxed:
    """The program runs as the service's user, in a session of its own (``AGENTS_SANDBOX=none``)."""

    prlimit: str = "prlimit"
    egress: EgressPolicy = field(default_factory=EgressPolicy)
    name: str = "none"
    isolated: bool = False

    def work_root(self, requested: Path | None) -> Path | None:
        return requested

    def prepare(self, directory: RunDirectory) -> None:
        del directory

    def visible(self, directory: RunDirectory) -> RunDirectory:
        return directory

    def launch(
        self,
        spec: RunSpec,
        directory: RunDirectory,
        environment: Mapping[str, str],
        proxy_socket: Path | None,
    ) -> Launch:
        del proxy_socket  # the program shares the service's network
        return Launch(
            argv=[*prlimit_command(self.prlimit, spec), *spec.command],
            env=dict(environment),
            cwd=directory.workspace,
            containment=ProcessGroup(),
            new_session=True,
        )

    def probe(self) -> None:
        found = find_prlimit()
        if found is None:
            raise SandboxUnavailable("prlimit (util-linux) is not installed")
        self.prlimit = found


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
    name: str = "bwrap"
    isolated: bool = True
    _python: str | None = None
    """The interpreter ``python`` names inside, when the system has no ``python`` of its own."""
    _system_binds: list[str] = field(default_factory=list)

    def __post_init__(self) -> None:
        self._system_binds = _system_binds()
        system_path = "/usr/local/bin:/usr/bin:/bin"
        if shutil.which("python", path=system_path) is None:
            self._python = shutil.which("python3", path=system_path)

    def work_root(self, requested: Path | None) -> Path | None:
        return requested if requested is not None else _WORK_ROOT.path(self.run_as)

    def prepare(self, directory: RunDirectory) -> None:
        self._shared_files()
        if self.run_as is None:
            return
        uid, gid = self.run_as
        directory.root.chmod(0o711)  # bwrap, as ``run_as``, passes through to the four below
        for top in (directory.workspace, directory.input, directory.output, directory.tmp):
            _chown_tree(top, uid, gid)

    def _shared_files(self) -> SharedFiles:
        return SharedFiles.of(_WORK_ROOT.path(self.run_as))

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
        directory = create_run_directory("probe", self.work_root(None))
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


@dataclass(frozen=True)
class SharedFiles:
    """What every sandbox of this process shares, read-only: its ``/etc`` (the host's
    :data:`ETC_ENTRIES`, copied when the process starts its first run, plus the sandbox's own
    ``passwd``, ``group``, ``hosts`` and ``hostname``) and the outbound bridge.

    One bind of a prepared folder costs a fraction of binding each entry (a mount each);
    a change to the host's ``/etc`` reaches programs when the worker restarts.
    """

    etc: Path
    bridge: Path

    @classmethod
    def of(cls, folder: Path) -> SharedFiles:
        """The shared files in ``folder`` (this process's work folder), built at the first
        call (about half a second: ``/etc/ssl`` holds hundreds of links)."""
        with _SHARED_LOCK:  # runs are prepared in threads
            built = _SHARED.get(folder)
            if built is None or not built.etc.is_dir():
                built = _SHARED[folder] = cls.build(folder)
            return built

    @classmethod
    def build(cls, folder: Path) -> SharedFiles:
        staging = Path(tempfile.mkdtemp(prefix=".etc-", dir=folder))
        for name in ETC_ENTRIES:
            source = Path("/etc") / name
            if source.is_symlink() or source.is_file():
                shutil.copy2(source, staging / name, follow_symlinks=False)
            elif source.is_dir():
                shutil.copytree(source, staging / name, symlinks=True, ignore=_private_keys)
        for python_config in sorted(Path("/etc").glob("python3*")):
            if python_config.is_dir():
                shutil.copytree(python_config, staging / python_config.name, symlinks=True)
        for name, content in SYNTHETIC_ETC.items():
            (staging / name).write_text(content)
        for folder_path, folders, files in os.walk(staging):
            for name in (*folders, *files):
                entry = os.path.join(folder_path, name)
                if not os.path.islink(entry):
                    os.chmod(entry, 0o755 if os.path.isdir(entry) else 0o644)
        staging.chmod(0o755)
        etc = folder / "etc"
        if etc.exists():
            shutil.rmtree(etc)
        staging.rename(etc)
        bridge = folder / "bridge.py"
        bridge.write_text(_bridge_source(), encoding="utf-8")
        bridge.chmod(0o644)
        return cls(etc, bridge)


_SHARED: dict[Path, SharedFiles] = {}
_SHARED_LOCK = threading.Lock()


def _private_keys(folder: str, names: list[str]) -> list[str]:
    """Never copied: private key folders (``/etc/ssl/private``)."""
    del folder
    return [name for name in names if name == "private"]


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


class WorkRoot:
    """The parent of one process's sandboxed run directories, and their clean-up.

    ``<tmp>/agent-runs-<uid>/worker-<pid>-<random>/``: the first level is owned by the service
    and not listable by anyone else (mode 0711: bwrap, as the sandbox user, passes through to a
    run directory whose random name it is given); the second belongs to one process, which
    holds a lock on its ``.lock`` file while it lives. A process killed with SIGKILL leaves its
    run directories behind (its programs died with it); the next process to start here finds
    the lock free and removes them.
    """

    def __init__(self) -> None:
        self._path: Path | None = None
        self._lock_fd: int | None = None
        self._lock = threading.Lock()

    def path(self, run_as: tuple[int, int] | None) -> Path:
        with self._lock:  # the first runs may ask from several threads at once
            return self._claimed(run_as)

    def _claimed(self, run_as: tuple[int, int] | None) -> Path:
        if self._path is not None and self._path.is_dir():
            return self._path
        base = Path(tempfile.gettempdir()) / f"agent-runs-{os.geteuid()}"
        with contextlib.suppress(FileExistsError):
            base.mkdir(mode=0o711)
        info = base.lstat()
        if not stat.S_ISDIR(info.st_mode) or info.st_uid != os.geteuid():
            raise SandboxUnavailable(f"{base} exists and is not a folder of this user")
        if info.st_mode & 0o777 != 0o711:
            base.chmod(0o711)
        if run_as is not None:
            _check_searchable(base, *run_as)
        _remove_abandoned(base)
        self._path, self._lock_fd = _claim_folder(base)
        atexit.register(self._release)
        return self._path

    def _release(self) -> None:
        """At a normal exit: remove this process's folder (empty by then)."""
        if self._path is not None:
            shutil.rmtree(self._path, ignore_errors=True)


def _claim_folder(base: Path) -> tuple[Path, int]:
    """A new ``worker-…`` folder under ``base``, locked by this process."""
    staging = Path(tempfile.mkdtemp(prefix=".new-", dir=base))
    staging.chmod(0o711)
    fd = os.open(staging / ".lock", os.O_CREAT | os.O_RDWR | os.O_CLOEXEC, 0o600)
    fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    final = base / f"worker-{os.getpid()}-{staging.name[len('.new-') :]}"
    staging.rename(final)
    return final, fd


def _remove_abandoned(base: Path) -> None:
    removed = 0
    for entry in base.iterdir():
        if not entry.name.startswith(("worker-", ".new-")) or entry.is_symlink():
            continue
        try:
            fd = os.open(entry / ".lock", os.O_RDWR | os.O_CLOEXEC | os.O_NOFOLLOW)
        except FileNotFoundError:
            if entry.name.startswith(".new-") and time.time() - entry.lstat().st_mtime > 60:
                remove_run_directory(RunDirectory(entry))  # a process died while creating it
            continue
        except OSError:
            continue
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            continue  # its process is alive
        finally:
            os.close(fd)
        remove_run_directory(RunDirectory(entry))
        removed += 1
    if removed:
        log.info("removed the run directories of %d stopped worker(s) under %s", removed, base)


def _check_searchable(path: Path, uid: int, gid: int) -> None:
    """Raise unless ``uid``/``gid`` may pass through every folder down to ``path``."""
    for folder in (*reversed(path.parents), path):
        info = folder.stat()
        if info.st_uid == uid:
            allowed = info.st_mode & stat.S_IXUSR
        elif info.st_gid == gid:
            allowed = info.st_mode & stat.S_IXGRP
        else:
            allowed = info.st_mode & stat.S_IXOTH
        if not allowed:
            raise SandboxUnavailable(
                f"the sandbox user (uid {uid}) cannot pass through {folder} to the run "
                f"directories in {path}: point TMPDIR to a folder whose parents others may "
                "pass through (mode 0711 or 0755), such as /tmp"
            )


_WORK_ROOT = WorkRoot()


def _bridge_source() -> str:
    return (Path(__file__).with_name("sandbox_bridge.py")).read_text(encoding="utf-8")


def make_sandbox(
    mode: str,
    *,
    uid: int,
    gid: int,
    egress: EgressPolicy,
    probe: bool = True,
) -> Sandbox:
    """The sandbox of ``AGENTS_SANDBOX`` (``bwrap`` or ``none``), probed unless told not to:
    raises :class:`SandboxUnavailable` (with how to fix it) when it cannot work here."""
    sandbox: Sandbox
    if mode == "none":
        sandbox = Unsandboxed(egress=egress)
    elif mode == "bwrap":
        run_as = (uid, gid) if os.geteuid() == 0 else None
        sandbox = Bubblewrap(run_as=run_as, egress=egress)
    else:
        raise SandboxUnavailable(f"unknown sandbox {mode!r}")
    if probe:
        try:
            sandbox.probe()
        except SandboxUnavailable as error:
            hint = INSTALL_HINT if mode == "bwrap" else "install util-linux"
            raise SandboxUnavailable(
                f"agent programs cannot be sandboxed: {error}; {hint}"
            ) from None
    return sandbox
