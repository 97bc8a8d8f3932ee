"""The files every bubblewrap sandbox of a process shares: its ``/etc`` and the bridge.

``/etc`` inside a sandbox is not the host's: it is a folder prepared once per process with the
host's :data:`ETC_ENTRIES` (what programs need to start: the dynamic loader's cache,
certificates, time zone, interpreter configuration; private key folders never) and the
sandbox's own ``passwd``, ``group``, ``hosts`` and ``hostname``, bound read-only. One bind of a
prepared folder costs a fraction of binding each entry (a mount each); a change to the host's
``/etc`` reaches programs when the worker restarts.
"""

from __future__ import annotations

import os
import shutil
import tempfile
import threading
from dataclasses import dataclass
from pathlib import Path

__all__ = ["ETC_ENTRIES", "INSIDE_GID", "INSIDE_UID", "SharedFiles"]

INSIDE_UID = 1000
INSIDE_GID = 1000

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


@dataclass(frozen=True)
class SharedFiles:
    """The sandboxes' ``/etc`` folder and the outbound bridge (``sandbox_bridge.py``), in the
    process's work folder."""

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


def _bridge_source() -> str:
    return (Path(__file__).with_name("sandbox_bridge.py")).read_text(encoding="utf-8")
