"""Imports in parallel threads can fail on a partially initialised module (the half-failed
start of issue 24: ``cannot import name 'AcceleratorState' from partially initialized module
'accelerate.state'``); imported serially first, as the server does before its parallel loads,
they cannot.

The race is made deterministic with a package shaped like ``accelerate``: ``state`` imports
``utils`` and ``utils`` imports a name ``state`` defines after that import (importing ``utils``
first works: ``state`` then finds the ``utils`` names it needs). Each module waits at a barrier
before its cross-import, so two threads that start one each are both half-way when they cross,
``utils`` second: Python breaks the deadlock by handing that thread the half-initialised
``state``, without the name. Imported in one thread, the barrier times out and the import
simply goes on.
"""

from __future__ import annotations

import itertools
import sys
import threading
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from handlers.rag.components import Components
from handlers.rag.generation.base import Generator
from handlers.rag.generation.local import LocalGenerator
from handlers.rag.ingest.base import Embedder
from handlers.rag.ingest.embedder import LoadedModel, TransformersEmbedder
from handlers.rag.model_loading import import_serially
from handlers.rag.stores.lancedb_store import LanceDbStore

BARRIER_TIMEOUT_S = 1.0
_packages = itertools.count()

STATE = """
import threading
from {package} import crossing
crossing.wait_for_the_other()
from {package}.utils import helper


class AcceleratorState:
    pass
"""
UTILS = """
import threading
from {package} import crossing


def helper():
    return AcceleratorState


crossing.wait_for_the_other()
crossing.let_the_other_block_first()
from {package}.state import AcceleratorState
"""
CROSSING = """
import threading
import time

barrier = threading.Barrier(2)


def wait_for_the_other():
    try:
        barrier.wait({timeout})
    except threading.BrokenBarrierError:
        pass  # alone: nobody to cross with


def let_the_other_block_first():
    if not barrier.broken:
        time.sleep(0.2)
"""


@pytest.fixture
def crossing_package(tmp_path: Path) -> Iterator[str]:
    """A fresh package (new name each time: imports are cached per process) on sys.path."""
    package = f"crossing_imports_{next(_packages)}"
    root = tmp_path / package
    root.mkdir()
    (root / "__init__.py").write_text("")
    values = {"package": package, "timeout": BARRIER_TIMEOUT_S}
    (root / "crossing.py").write_text(CROSSING.format(**values))
    (root / "state.py").write_text(STATE.format(**values))
    (root / "utils.py").write_text(UTILS.format(**values))
    sys.path.insert(0, str(tmp_path))
    try:
        yield package
    finally:
        sys.path.remove(str(tmp_path))
        for name in [name for name in sys.modules if name.startswith(package)]:
            del sys.modules[name]


def in_two_threads(first: Callable[[], object], second: Callable[[], object]) -> list[str]:
    """Runs both at once; the errors they raised, as text."""
    errors: list[str] = []

    def run(work: Callable[[], object]) -> None:
        try:
            work()
        except ImportError as error:
            errors.append(str(error))

    threads = [threading.Thread(target=run, args=(work,)) for work in (first, second)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(30)
    return errors


def test_parallel_imports_of_crossing_modules_fail_half_initialised(crossing_package: str) -> None:
    """The reproduction: this is what the parallel loads hit before they imported serially."""
    errors = in_two_threads(
        lambda: __import__(f"{crossing_package}.state"),
        lambda: __import__(f"{crossing_package}.utils"),
    )
    assert errors  # one, or both: the other then finds a module its failure left incomplete
    assert "partially initialized module" in errors[0], errors


def test_imported_serially_first_the_same_modules_load_in_both_threads(
    crossing_package: str,
) -> None:
    import_serially(f"{crossing_package}.utils")  # what the server's ``prepare`` does
    errors = in_two_threads(
        lambda: import_serially(f"{crossing_package}.state"),
        lambda: import_serially(f"{crossing_package}.utils"),
    )
    assert errors == []
    state = sys.modules[f"{crossing_package}.state"]
    assert sys.modules[f"{crossing_package}.utils"].helper() is state.AcceleratorState


async def test_components_prepare_before_loading_in_parallel(
    crossing_package: str, tmp_path: Path, minilm: LoadedModel, tiny_model: Path
) -> None:
    """The real loaders, each importing one of the crossing modules: with the imports done
    in ``prepare`` first (as the server does), every component loads."""

    def load_embedder() -> Embedder:
        __import__(f"{crossing_package}.state")
        return TransformersEmbedder(minilm)

    def load_generator() -> Generator:
        __import__(f"{crossing_package}.utils")
        return LocalGenerator.load(str(tiny_model), cache_dir=tmp_path / "models")

    components = Components(
        embedder=load_embedder,
        generator=load_generator,
        store=lambda dimension: LanceDbStore(tmp_path / "lancedb", dimension),
        prepare=lambda: import_serially(f"{crossing_package}.utils"),
    )
    try:
        states = await components.wait_ready(60)
    finally:
        await components.close()
    assert states == {"embedder": "ready", "generator": "ready", "store": "ready"}


async def test_a_failed_prepare_fails_every_component_and_is_reported_once(
    tmp_path: Path,
) -> None:
    reported: list[tuple[str, str]] = []

    def never_called() -> Embedder:
        raise AssertionError("a load ran after a failed prepare")

    def never_called_generator() -> Generator:
        raise AssertionError("a load ran after a failed prepare")

    components = Components(
        embedder=never_called,
        generator=never_called_generator,
        store=lambda dimension: LanceDbStore(tmp_path / "lancedb", dimension),
        prepare=lambda: import_serially("no_such_module_for_this_test"),
        on_failure=lambda what, error: reported.append((what, type(error).__name__)),
    )
    try:
        states = await components.wait_ready(30)
    finally:
        await components.close()
    assert states == {"embedder": "failed", "generator": "failed", "store": "failed"}
    assert reported == [("model libraries", "ModuleNotFoundError")]
