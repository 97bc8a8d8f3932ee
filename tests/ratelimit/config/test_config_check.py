"""``ratelimit-config-check``: exit codes and output."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from handlers.ratelimit.config_check import main

GOOD = """\
domain: mongo_cps
descriptors:
  - key: database
    value: users
    rate_limit: {unit: second, requests_per_unit: 500}
  - key: database
    value: default
    rate_limit: {unit: second, requests_per_unit: 500}
"""
OTHER = """\
domain: rl
descriptors:
  - key: category
    value: account
    rate_limit: {unit: minute, requests_per_unit: 10}
"""


@pytest.fixture
def config_dir(tmp_path: Path) -> Path:
    (tmp_path / "mongo.yaml").write_text(GOOD)
    (tmp_path / "rl.yaml").write_text(OTHER)
    return tmp_path


def test_valid_directory(config_dir: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["-config_dir", str(config_dir)]) == 0
    out, err = capsys.readouterr()
    assert out.splitlines() == [
        "loaded domain: mongo_cps (2 rate limits)",
        "loaded domain: rl (1 rate limits)",
    ]
    assert err == ""


@pytest.mark.parametrize(
    "flag_form", [["-config_dir={d}"], ["--config_dir", "{d}"], ["--config_dir={d}"]]
)
def test_flag_spellings(
    config_dir: Path, flag_form: list[str], capsys: pytest.CaptureFixture[str]
) -> None:
    assert main([part.format(d=config_dir) for part in flag_form]) == 0
    assert len(capsys.readouterr().out.splitlines()) == 2


def test_invalid_file(config_dir: Path, capsys: pytest.CaptureFixture[str]) -> None:
    bad = GOOD.replace("second", "fortnight", 1).replace("mongo_cps", "bad")
    (config_dir / "zz_bad.yaml").write_text(bad)
    assert main(["-config_dir", str(config_dir)]) == 1
    out, err = capsys.readouterr()
    path = os.path.join(str(config_dir), "zz_bad.yaml")
    assert err == (
        f"error loading rate limit configs: {path}: invalid rate limit unit 'fortnight'\n"
    )
    assert out == ""


def test_duplicate_domain_and_merge_flag(
    config_dir: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    (config_dir / "zz_more.yaml").write_text(OTHER.replace("account", "other"))
    assert main(["-config_dir", str(config_dir)]) == 1
    path = os.path.join(str(config_dir), "zz_more.yaml")
    assert capsys.readouterr().err == (
        f"error loading rate limit configs: {path}: duplicate domain 'rl' in config file\n"
    )
    assert main(["-config_dir", str(config_dir), "-merge_domain_configs"]) == 0
    assert "loaded domain: rl (2 rate limits)" in capsys.readouterr().out.splitlines()
    assert main(["-merge_domain_configs=false", "-config_dir", str(config_dir)]) == 1


def test_yaml_error(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    (tmp_path / "bad_yaml.yaml").write_text("'''\n")
    assert main(["-config_dir", str(tmp_path)]) == 1
    path = os.path.join(str(tmp_path), "bad_yaml.yaml")
    assert capsys.readouterr().err == (
        f"error loading rate limit configs: {path}: "
        "error loading config file: yaml: line 2: found unexpected end of stream\n"
    )


def test_subdirectories_are_skipped(config_dir: Path) -> None:
    (config_dir / "..2024_01_01").mkdir()
    assert main(["-config_dir", str(config_dir)]) == 0


def test_missing_directory(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    missing = tmp_path / "missing"
    assert main(["-config_dir", str(missing)]) == 1
    assert capsys.readouterr().err == (
        f"error opening directory {missing}: open {missing}: no such file or directory\n"
    )


@pytest.mark.parametrize(
    ("argv", "message"),
    [
        (["-unknown"], "flag provided but not defined: -unknown"),
        (["-config_dir"], "flag needs an argument: -config_dir"),
        (
            ["-merge_domain_configs=maybe"],
            'invalid boolean value "maybe" for -merge_domain_configs: parse error',
        ),
    ],
)
def test_usage_errors(argv: list[str], message: str, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(argv) == 2
    err = capsys.readouterr().err
    assert err.splitlines()[0] == message
    assert "-config_dir string" in err


def test_help(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["-h"]) == 0
    assert "Usage of ratelimit-config-check:" in capsys.readouterr().err


def test_runs_as_a_module(config_dir: Path) -> None:
    done = subprocess.run(
        [sys.executable, "-m", "handlers.ratelimit.config_check", "-config_dir", str(config_dir)],
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
        cwd=Path(__file__).resolve().parents[3],
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout.splitlines() == [
        "loaded domain: mongo_cps (2 rate limits)",
        "loaded domain: rl (1 rate limits)",
    ]
