"""Stop the agents server of the contract suite, then report what the suite covered, per spec,
at the end of the run."""

from __future__ import annotations

import sys
from typing import Any


def pytest_sessionfinish(session: Any, exitstatus: int) -> None:
    """The server's thread must end before the interpreter's exit, which waits for it
    (``atexit`` handlers run only after that wait)."""
    module = sys.modules.get("tests.contract.test_contract")
    if module is not None:
        module.AGENTS.stop()


def pytest_terminal_summary(terminalreporter: Any) -> None:
    module = sys.modules.get("tests.contract.test_contract")
    if module is None:
        return
    terminalreporter.section("contract fuzzing")
    for line in module.report():
        terminalreporter.write_line(line)
