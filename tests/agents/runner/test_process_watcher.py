"""The worker and server processes wait for their programs with pidfds, not a thread each."""

from __future__ import annotations

import subprocess
import sys
import textwrap


def test_programs_run_and_are_reaped_with_the_pidfd_watcher() -> None:
    code = textwrap.dedent(
        """
        import asyncio, threading
        from handlers.agents.runner import prefer_pidfd_child_watcher

        assert prefer_pidfd_child_watcher()

        async def main():
            assert isinstance(asyncio.get_child_watcher(), asyncio.PidfdChildWatcher)
            before = threading.active_count()
            codes = []
            for code in (0, 3):
                process = await asyncio.create_subprocess_exec("sh", "-c", f"exit {code}")
                codes.append(await process.wait())
            assert codes == [0, 3], codes
            assert threading.active_count() == before  # no waiting thread was started

        asyncio.run(main())
        print("ok")
        """
    )
    done = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, timeout=60, check=False
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "ok"
