"""Choosing the sandbox ``AGENTS_SANDBOX`` names, and checking that it works here."""

from __future__ import annotations

import os

from handlers.agents.egress import EgressPolicy
from handlers.agents.runner.bubblewrap import Bubblewrap
from handlers.agents.runner.sandbox import Sandbox, SandboxUnavailable
from handlers.agents.runner.unsandboxed import Unsandboxed

__all__ = ["INSTALL_HINT", "make_sandbox"]

INSTALL_HINT = (
    "install bubblewrap (Debian and Ubuntu: apt-get install bubblewrap; other systems: the "
    "bubblewrap package) on a kernel that allows unprivileged user namespaces "
    "(sysctl kernel.unprivileged_userns_clone=1 and user.max_user_namespaces > 0 where those "
    "exist; Ubuntu 24.04 and later also need kernel.apparmor_restrict_unprivileged_userns=0 or "
    "an AppArmor profile for bwrap), or set AGENTS_SANDBOX=none to run agent programs "
    "unisolated (trusted single-user development only)"
)


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
