"""The clients as wheels (``make dist-clients``, ``codegen/dist.py``): one wheel per API, named
``<api>-client`` and versioned as its spec, holding only the client and its models, installed
with pip into a fresh virtual environment and used there against the running services.

How the fresh environment gets httpx and pydantic: ``python -m venv`` without the system
site-packages, then ``pip install`` of the three wheels, which resolves their declared
dependencies from the package index pip is configured with (PyPI in CI). That is what another
team does, and it proves the wheels' ``Requires-Dist`` is complete; a ``--system-site-packages``
venv or a ``.pth`` onto this project's environment would let a missing dependency, or an import
of this project's ``generated`` package, pass unnoticed. The scripts in the venv run from a
scratch directory, so nothing of the repository is importable there (the test checks it).
The rag service is not started (it loads models): its wheel is installed, imported and checked
like the others, and the ratelimit and agents services are called for real.
"""

from __future__ import annotations

import base64
import hashlib
import json
import os
import subprocess
import sys
import venv
import zipfile
from collections.abc import Iterator
from email.parser import Parser
from pathlib import Path

import pytest

from codegen.dist import ClientWheel, DistError, build_wheels
from codegen.spec import load_api
from tests.agents.support import Storage, running
from tests.ratelimit.test_server import Process, runtime

ROOT = Path(__file__).resolve().parents[2]
SPECS = ROOT / "specs"
INSTALL_TIMEOUT = 600.0
CALL_TIMEOUT = 120.0


@pytest.fixture(scope="module")
def wheels(tmp_path_factory: pytest.TempPathFactory) -> dict[str, ClientWheel]:
    built = build_wheels(SPECS, ROOT / "generated", tmp_path_factory.mktemp("wheels"))
    return {wheel.api: wheel for wheel in built}


@pytest.fixture(scope="module")
def venv_python(wheels: dict[str, ClientWheel], tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A fresh venv's python with the three wheels (and httpx, pydantic) installed."""
    directory = tmp_path_factory.mktemp("venv")
    venv.create(directory, with_pip=True, system_site_packages=False)
    python = directory / "bin" / "python"
    install = subprocess.run(
        [str(python), "-m", "pip", "install", "--quiet", *(str(w.path) for w in wheels.values())],
        capture_output=True,
        text=True,
        timeout=INSTALL_TIMEOUT,
        env=_clean_env(),
        cwd=directory,
    )
    assert install.returncode == 0, f"pip install failed:\n{install.stdout}\n{install.stderr}"
    return python


def _clean_env() -> dict[str, str]:
    return {k: v for k, v in os.environ.items() if k not in {"PYTHONPATH", "VIRTUAL_ENV"}}


def run_in_venv(python: Path, script: str, *args: str) -> object:
    """Run ``script`` with the venv's python in a scratch directory; its JSON output."""
    result = subprocess.run(
        [str(python), "-c", script, *args],
        capture_output=True,
        text=True,
        timeout=CALL_TIMEOUT,
        env=_clean_env(),
        cwd=python.parent.parent,
    )
    assert result.returncode == 0, result.stderr
    return json.loads(result.stdout)


def test_one_wheel_per_api_named_and_versioned_as_its_spec(
    wheels: dict[str, ClientWheel],
) -> None:
    specs = {load_api(spec).package: load_api(spec) for spec in SPECS.glob("*.openapi.yaml")}
    assert set(wheels) == set(specs) == {"agents", "rag", "ratelimit"}
    for api, wheel in wheels.items():
        version = specs[api].version
        assert wheel.path.name == f"{api}_client-{version}-py3-none-any.whl"
        with zipfile.ZipFile(wheel.path) as archive:
            metadata = Parser().parsestr(
                archive.read(f"{api}_client-{version}.dist-info/METADATA").decode()
            )
        assert metadata["Name"] == f"{api}-client"
        assert metadata["Version"] == version
        requirements = metadata.get_all("Requires-Dist") or []
        names = {
            requirement.split(">")[0].split("<")[0].split("=")[0] for requirement in requirements
        }
        assert names == {"httpx", "pydantic"}, requirements


def test_wheels_hold_only_the_client_and_its_models_with_a_valid_record(
    wheels: dict[str, ClientWheel],
) -> None:
    for api, wheel in wheels.items():
        package = f"{api}_client"
        dist_info = f"{package}-{wheel.version}.dist-info"
        with zipfile.ZipFile(wheel.path) as archive:
            members = {name: archive.read(name) for name in archive.namelist()}
        assert {name.split("/")[0] for name in members} == {package, dist_info}
        modules = {name.split("/")[1] for name in members if name.startswith(f"{package}/")}
        assert {"__init__.py", "client.py", "models.py", "py.typed"} <= modules
        assert not {"handlers.py", "routes.py"} & modules
        for name, data in members.items():
            if name.endswith(".py"):
                text = data.decode()
                assert "from generated" not in text and "import generated" not in text, name
        record = members[f"{dist_info}/RECORD"].decode().splitlines()
        assert len(record) == len(members)
        for line in record:
            name, digest, size = line.rsplit(",", 2)
            if name == f"{dist_info}/RECORD":
                continue
            expected = hashlib.sha256(members[name]).digest()
            assert digest == "sha256=" + base64.urlsafe_b64encode(expected).rstrip(b"=").decode()
            assert int(size) == len(members[name])


def test_wheels_are_reproducible(wheels: dict[str, ClientWheel], tmp_path: Path) -> None:
    again = {wheel.api: wheel for wheel in build_wheels(SPECS, ROOT / "generated", tmp_path)}
    for api, wheel in wheels.items():
        assert again[api].path.read_bytes() == wheel.path.read_bytes()


IMPORTS = """
import importlib, json, sys
found = {}
for name in ("generated", "handlers", "codegen"):
    try:
        importlib.import_module(name)
        found[name] = True
    except ModuleNotFoundError:
        found[name] = False
clients = {}
for package in ("agents_client", "rag_client", "ratelimit_client"):
    module = importlib.import_module(package)
    clients[package] = {"version": module.__version__, "models": module.models.__name__,
                        "file": module.__file__, "names": sorted(module.__all__)}
print(json.dumps({"project": found, "clients": clients, "prefix": sys.prefix}))
"""


def test_installed_clients_import_alone(venv_python: Path, wheels: dict[str, ClientWheel]) -> None:
    answer = run_in_venv(venv_python, IMPORTS)
    assert isinstance(answer, dict)
    assert answer["project"] == {"generated": False, "handlers": False, "codegen": False}
    for api, wheel in wheels.items():
        client = answer["clients"][f"{api}_client"]
        assert client["version"] == wheel.version
        assert client["models"] == f"{api}_client.models"
        assert client["file"].startswith(answer["prefix"])  # the installed copy
        assert "RetryPolicy" in client["names"] and "models" in client["names"]


RATELIMIT_CALLS = """
import json, sys
from ratelimit_client import RatelimitClient, models
request = models.RateLimitRequest.model_validate(
    {"domain": "edge", "descriptors": [{"entries": [{"key": "remote_address", "value": "x"}]}]}
)
with RatelimitClient(base_url=sys.argv[1]) as client:
    health = "".join(client.healthcheck())
    decisions = [client.should_rate_limit(request) for _ in range(3)]
    counters = client.read_counters(request)
print(json.dumps({
    "health": health,
    "codes": [d.model_dump(mode="json", by_alias=True)["overallCode"] for d in decisions],
    "counters": counters.model_dump(mode="json", by_alias=True),
    "type": type(counters).__module__,
}))
"""


def test_installed_ratelimit_client_calls_the_running_service(
    venv_python: Path, tmp_path: Path
) -> None:
    process = Process({**runtime(tmp_path), "BACKEND_TYPE": "memory"})
    try:
        process.wait_healthy()
        answer = run_in_venv(venv_python, RATELIMIT_CALLS, f"http://127.0.0.1:{process.http}")
    finally:
        process.stop()
    assert isinstance(answer, dict)
    assert answer["health"] == "OK"
    assert answer["codes"] == ["OK", "OK", "OVER_LIMIT"]  # 2 a minute, as the rules say
    assert answer["counters"]["domain"] == "edge"
    assert answer["counters"]["descriptors"][0]["status"] == "limited"
    assert answer["type"] == "ratelimit_client.models"


AGENTS_CALLS = """
import json, sys
from agents_client import ServiceAuthError, ServiceClient
with ServiceClient(base_url=sys.argv[1], api_key=sys.argv[2]) as client:
    page = client.agents.list(limit=5)
with ServiceClient(base_url=sys.argv[1], api_key="not-a-key", max_retries=0) as client:
    try:
        client.agents.list()
        refused = None
    except ServiceAuthError as error:
        refused = error.status
print(json.dumps({"total": page.total, "data": len(page.data), "refused": refused}))
"""


@pytest.fixture
def agents_url_and_key(tmp_path: Path) -> Iterator[tuple[str, str]]:
    with running(Storage(tmp_path, f"sqlite:///{tmp_path / 'agents.db'}")) as server:
        yield server.url, server.key(scope_all=True, can_create_agents=True)


def test_installed_agents_client_calls_the_running_service(
    venv_python: Path, agents_url_and_key: tuple[str, str]
) -> None:
    url, key = agents_url_and_key
    answer = run_in_venv(venv_python, AGENTS_CALLS, url, key)
    assert answer == {"total": 0, "data": 0, "refused": 401}


def test_packing_a_client_that_imports_the_project_fails(tmp_path: Path) -> None:
    generated = tmp_path / "generated"
    source = ROOT / "generated" / "ratelimit"
    (generated / "ratelimit").mkdir(parents=True)
    for name in ("client.py", "models.py"):
        text = (source / name).read_text(encoding="utf-8")
        if name == "models.py":
            text += "\nfrom handlers.ratelimit import settings  # noqa\n"
        (generated / "ratelimit" / name).write_text(text, encoding="utf-8")
    specs = tmp_path / "specs"
    specs.mkdir()
    (specs / "ratelimit.openapi.yaml").write_bytes((SPECS / "ratelimit.openapi.yaml").read_bytes())

    with pytest.raises(DistError, match=r"imports 'handlers\.ratelimit'"):
        build_wheels(specs, generated, tmp_path / "out")


def test_the_command_line_builds_into_the_output_directory(tmp_path: Path) -> None:
    result = subprocess.run(
        [sys.executable, "-m", "codegen.dist", "--out", str(tmp_path)],
        capture_output=True,
        text=True,
        cwd=ROOT,
        timeout=CALL_TIMEOUT,
    )
    assert result.returncode == 0, result.stderr
    assert sorted(p.name.split("-")[0] for p in tmp_path.glob("*.whl")) == [
        "agents_client",
        "rag_client",
        "ratelimit_client",
    ]
