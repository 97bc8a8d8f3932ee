"""Settings and the ``rag-server`` process: startup line, readiness, SIGTERM, exit statuses."""

from __future__ import annotations

import json
import os
import re
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

import httpx
import pytest

from handlers.common.settings import SettingsError
from handlers.rag.server import main, serve
from handlers.rag.settings import Settings
from handlers.rag.stores.lancedb_store import INDEX_THRESHOLD

REPO_ROOT = Path(__file__).resolve().parents[2]


def test_defaults() -> None:
    settings = Settings.from_env({})
    assert (settings.host, settings.port) == ("127.0.0.1", 8000)
    assert settings.data_dir == Path(".data/rag")
    assert settings.embedding_model == "all-MiniLM-L6-v2"
    assert settings.llm_model == "SmolLM2-135M-Instruct"
    assert settings.llm_endpoint_model == "SmolLM2-135M-Instruct"
    assert (settings.chunk_tokens, settings.chunk_overlap_tokens) == (200, 40)
    assert settings.max_upload_bytes == 52_428_800
    assert settings.retrieval_top_k == 8
    assert settings.ready_timeout == 120.0
    assert settings.index_threshold == INDEX_THRESHOLD == 5_000  # the store's own default
    assert settings.store_kind == "lancedb"
    assert settings.llm_context_window is None
    assert settings.torch_threads is None
    assert settings.embedding_runtime == "auto"


def test_values_are_read() -> None:
    settings = Settings.from_env(
        {
            "RAG_PORT": "9000",
            "RAG_DATA_DIR": "/srv/rag",
            "RAG_LLM_URL": "http://127.0.0.1:8080/",
            "RAG_LLM_NAME": "llama",
            "RAG_LLM_CONTEXT_WINDOW": "4096",
            "RAG_CHUNK_TOKENS": "60",
            "RAG_TORCH_THREADS": "2",
            "RAG_EMBEDDING_RUNTIME": "Torch",
            "WEAVIATE_URL": "http://weaviate:8080",
            "RAG_COLLECTION": "Docs_2",
            "LOG_LEVEL": "debug",
        }
    )
    assert settings.port == 9000
    assert settings.data_dir == Path("/srv/rag")
    assert settings.llm_url == "http://127.0.0.1:8080"
    assert settings.llm_endpoint_model == "llama"
    assert settings.llm_context_window == 4096
    assert (settings.chunk_tokens, settings.chunk_overlap_tokens) == (60, 29)
    assert settings.torch_threads == 2
    assert settings.embedding_runtime == "torch"
    assert settings.store_kind == "weaviate"
    assert settings.collection == "Docs_2"
    assert settings.log_level == "DEBUG"


def test_the_log_settings_are_the_common_ones() -> None:
    settings = Settings.from_env({"LOG_LEVEL": "WARN", "LOG_FORMAT": "json"})
    assert (settings.log_level, settings.log_format) == ("WARNING", "json")
    assert Settings.from_env({"LOG_LEVEL": "trace"}).log_level == "DEBUG"
    assert Settings.from_env({}).log_format == "plain"


def test_values_are_read_without_surrounding_blanks_and_a_blank_one_is_unset() -> None:
    settings = Settings.from_env({"RAG_HOST": " 0.0.0.0 ", "RAG_PORT": "  ", "LOG_LEVEL": " "})
    assert (settings.host, settings.port, settings.log_level) == ("0.0.0.0", 8000, "INFO")


@pytest.mark.parametrize(
    ("chunk_tokens", "overlap"), [("200", 40), ("81", 40), ("80", 39), ("16", 7)]
)
def test_the_overlap_default_stays_under_half_a_chunk(chunk_tokens: str, overlap: int) -> None:
    assert Settings.from_env({"RAG_CHUNK_TOKENS": chunk_tokens}).chunk_overlap_tokens == overlap


def test_every_setting_has_its_variable_a_description_and_a_row_in_the_readme() -> None:
    readme = (REPO_ROOT / "handlers" / "rag" / "README.md").read_text()
    table = readme.split("\n## Settings\n", 1)[1].split("\n## ", 1)[0]
    documented = {
        name
        for row in table.splitlines()
        if row.startswith("| `")
        for name in re.findall(r"`([A-Z][A-Z0-9_]+)`", row.split(" | ")[0])
    }
    variables: set[str] = set()
    for field, info in Settings.model_fields.items():
        assert info.description, field
        (variable,) = Settings.variable_names(field)
        variables.add(variable)
    assert documented == variables


INTEGER = "expected an integer of at least"


@pytest.mark.parametrize(
    ("env", "message"),
    [
        ({"RAG_PORT": "http"}, f"RAG_PORT='http' is invalid: {INTEGER} 0 and at most 65535"),
        ({"RAG_CHUNK_TOKENS": "8"}, f"RAG_CHUNK_TOKENS='8' is invalid: {INTEGER} 16"),
        (
            {"RAG_CHUNK_TOKENS": "x", "RAG_CHUNK_OVERLAP_TOKENS": "50"},
            f"RAG_CHUNK_TOKENS='x' is invalid: {INTEGER} 16",
        ),
        (
            {"RAG_CHUNK_TOKENS": "100", "RAG_CHUNK_OVERLAP_TOKENS": "50"},
            f"RAG_CHUNK_OVERLAP_TOKENS='50' is invalid: {INTEGER} 0 and at most 49",
        ),
        ({"RAG_MAX_UPLOAD_BYTES": "0"}, f"RAG_MAX_UPLOAD_BYTES='0' is invalid: {INTEGER} 1"),
        ({"RAG_RETRIEVAL_TOP_K": "101"}, f"RAG_RETRIEVAL_TOP_K='101' is invalid: {INTEGER} 1"),
        ({"RAG_READY_TIMEOUT": "soon"}, "RAG_READY_TIMEOUT='soon' is invalid: expected a number"),
        (
            {"RAG_LLM_URL": "localhost:80"},
            "RAG_LLM_URL='localhost:80' is invalid: expected an http",
        ),
        ({"WEAVIATE_URL": "weaviate"}, "WEAVIATE_URL='weaviate' is invalid: expected an http"),
        (
            {"RAG_LLM_CONTEXT_WINDOW": "100"},
            f"RAG_LLM_CONTEXT_WINDOW='100' is invalid: {INTEGER} 256",
        ),
        ({"RAG_COLLECTION": "my-docs"}, "RAG_COLLECTION='my-docs' is invalid: expected a name"),
        (
            {"LOG_LEVEL": "loud"},
            "LOG_LEVEL='loud' is invalid: expected one of DEBUG, INFO, WARNING",
        ),
        ({"LOG_FORMAT": "xml"}, "LOG_FORMAT='xml' is invalid: expected one of plain, text, json"),
        ({"RAG_TORCH_THREADS": "0"}, f"RAG_TORCH_THREADS='0' is invalid: {INTEGER} 1"),
        (
            {"RAG_EMBEDDING_RUNTIME": "onnx"},
            "RAG_EMBEDDING_RUNTIME='onnx' is invalid: expected one of auto, onnxruntime, torch",
        ),
    ],
)
def test_invalid_settings_name_the_setting(env: dict[str, str], message: str) -> None:
    with pytest.raises(SettingsError) as raised:
        Settings.from_env(env)
    assert str(raised.value).startswith(message)


def test_an_invalid_setting_stops_main_with_status_2(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setenv("RAG_PORT", "-1")
    assert main() == 2
    assert capsys.readouterr().err == (
        "rag-server: RAG_PORT='-1' is invalid: expected an integer of at least 0 and at most "
        "65535\n"
    )


async def test_a_chunk_size_over_the_models_window_stops_the_server(
    tmp_path: Path, stopping_model: Path
) -> None:
    settings = Settings.from_env(
        {
            "RAG_PORT": "0",
            "RAG_DATA_DIR": str(tmp_path),
            "RAG_LLM_MODEL": str(stopping_model),
            "RAG_CHUNK_TOKENS": "300",
            "RAG_CHUNK_OVERLAP_TOKENS": "0",
        }
    )
    assert await serve(settings) == 2


def test_the_server_process_announces_itself_serves_and_stops_on_sigterm(
    tmp_path: Path, stopping_model: Path
) -> None:
    env = {
        **os.environ,
        "RAG_PORT": "0",
        "RAG_DATA_DIR": str(tmp_path / "data"),
        "RAG_LLM_MODEL": str(stopping_model),
        "LOG_LEVEL": "DEBUG",
    }
    process = subprocess.Popen(
        [sys.executable, "-m", "handlers.rag.server"],
        cwd=REPO_ROOT,
        env=env,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        assert process.stderr is not None
        lines: list[str] = []
        found = None
        while found is None and len(lines) < 500:
            lines.append(process.stderr.readline())
            found = re.search(r"rag listening on (http://127\.0\.0\.1:\d+) ", lines[-1])
        assert found, "".join(lines)
        url = found.group(1)
        with httpx.Client(base_url=url, timeout=30) as client:
            assert client.get("/health").status_code in (200, 503)
            deadline = time.monotonic() + 60
            while client.get("/health").status_code != 200:
                assert time.monotonic() < deadline, client.get("/health").text
                time.sleep(0.05)
            prompt = {"question": "Hello?", "context": "", "use_knowledge_base": False}
            assert client.post("/generate", json=prompt).status_code == 200
        process.send_signal(signal.SIGTERM)
        assert process.wait(timeout=30) == 0
        rest = process.stderr.read()
        assert "shutting down" in rest
        assert "Traceback" not in rest
        # once loaded, the heap (torch, transformers, models) is out of the collector's scans
        (frozen,) = re.findall(r"startup heap frozen: (\d+) objects", "".join(lines) + rest)
        assert int(frozen) > 100_000
    finally:
        if process.poll() is None:
            process.kill()
            process.wait()
        if process.stderr is not None:
            process.stderr.close()


def rag_server(env: dict[str, str]) -> subprocess.Popen[str]:
    """``rag-server`` (its entry point, ``main``) in a child process on ``env`` over this one's,
    its output piped."""
    return subprocess.Popen(
        [sys.executable, "-m", "handlers.rag.server"],
        cwd=REPO_ROOT,
        env={**os.environ, **env},
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )


def test_a_component_that_cannot_load_stops_the_process_with_status_1(
    tmp_path: Path, tiny_model: Path
) -> None:
    """A generator whose weights are damaged: the reason in one log line, then exit status 1
    (so a supervisor restarts it), rather than a process answering /health 503 forever."""
    broken = tmp_path / "broken-model"
    shutil.copytree(tiny_model, broken)
    (weights,) = broken.glob("*.safetensors")
    weights.write_bytes(b"not a safetensors file")
    process = rag_server(
        {"RAG_PORT": "0", "RAG_DATA_DIR": str(tmp_path / "data"), "RAG_LLM_MODEL": str(broken)}
    )
    try:
        _out, err = process.communicate(timeout=120)
    finally:
        if process.poll() is None:
            process.kill()
            process.communicate()
    assert process.returncode == 1, err
    reasons = [line for line in err.splitlines() if "cannot load the generator: " in line]
    assert len(reasons) == 1, err
    assert " ERROR " in reasons[0]
    assert "exiting with status 1: a component cannot load" in err
    assert "Traceback" not in err


def test_the_server_process_refuses_an_unknown_log_level_naming_it() -> None:
    process = rag_server({"LOG_LEVEL": "loud"})
    out, err = process.communicate(timeout=120)
    assert process.returncode == 2
    assert (out, err) == (
        "",
        "rag-server: LOG_LEVEL='loud' is invalid: expected one of DEBUG, INFO, WARNING, ERROR "
        "(or WARN, TRACE)\n",
    )


def test_the_server_process_takes_log_level_warn_and_log_format_json(
    tmp_path: Path, stopping_model: Path
) -> None:
    """The listener line shows at WARN (as JSON); nothing else at INFO does, nor a plain line."""
    process = rag_server(
        {
            "RAG_PORT": "0",
            "RAG_DATA_DIR": str(tmp_path / "data"),
            "RAG_LLM_MODEL": str(stopping_model),
            "LOG_LEVEL": "WARN",
            "LOG_FORMAT": "json",
        }
    )
    try:
        assert process.stderr is not None
        lines: list[str] = []
        while not any("rag listening on http://127.0.0.1:" in line for line in lines):
            lines.append(process.stderr.readline())
            assert lines[-1] or process.poll() is None, "".join(lines)
            assert len(lines) < 500, "".join(lines)
        process.send_signal(signal.SIGTERM)
        _out, rest = process.communicate(timeout=120)
        assert process.returncode == 0, "".join(lines) + rest
    finally:
        if process.poll() is None:
            process.kill()
            process.communicate()
    records = [json.loads(line) for line in [*lines, *rest.splitlines()] if line.startswith("{")]
    assert records[0]["@message"].startswith("rag listening on http://127.0.0.1:")
    assert records[0]["level"] == "info"
    assert set(records[0]) == {"@message", "@timestamp", "level"}
    assert [r["@message"] for r in records if r["level"] in ("info", "debug")][1:] == [
        "shutting down"
    ]
    plain = re.compile(r"^\d{4}-\d\d-\d\d \d\d:\d\d:\d\d,\d+ [A-Z]+ ", re.MULTILINE)
    assert not plain.search("".join(lines) + rest)
