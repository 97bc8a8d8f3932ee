"""Report what the contract suite covered, per spec, at the end of the run."""

from __future__ import annotations

import sys
from typing import Any


def pytest_terminal_summary(terminalreporter: Any) -> None:
    module = sys.modules.get("tests.contract.test_contract")
    if module is None:
        return
    terminalreporter.section("contract fuzzing")
    for line in module.report():
        terminalreporter.write_line(line)
