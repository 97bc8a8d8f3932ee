# The two set-up commands: `make run` and `make test`. Everything installs into .venv.
PYTHON ?= python3
VENV ?= .venv
PY := $(VENV)/bin/python
STAMP := $(VENV)/.installed
BENCH_STAMP := $(VENV)/.installed-bench
HOST ?= 127.0.0.1
EXAMPLE_PORT ?= 8070

.PHONY: install test lint format typecheck run bench bench-webrest clean

install: $(STAMP)

$(STAMP): pyproject.toml
	test -x $(PY) || $(PYTHON) -m venv $(VENV)
	$(PY) -m pip install -q --upgrade pip
	$(PY) -m pip install -q -e '.[dev]'
	touch $@

$(BENCH_STAMP): $(STAMP)
	$(PY) -m pip install -q -e '.[dev,bench]'
	touch $@

test: install
	$(PY) -m pytest

lint: install
	$(VENV)/bin/ruff check webrest examples bench tests
	$(VENV)/bin/ruff format --check webrest examples bench tests

format: install
	$(VENV)/bin/ruff format webrest examples bench tests
	$(VENV)/bin/ruff check --fix webrest examples bench tests

typecheck: install
	$(VENV)/bin/mypy

# Services land with their issues; until then `make run` serves the webrest example application.
run: install
	@echo "webrest example application: http://$(HOST):$(EXAMPLE_PORT) (OpenAPI at /openapi.json)"
	$(PY) -m uvicorn examples.webrest_example.app:app --host $(HOST) --port $(EXAMPLE_PORT)

bench: bench-webrest

bench-webrest: $(BENCH_STAMP)
	./scripts/ensure-debian-packages.sh wrk
	$(PY) -m bench.webrest $(BENCH_ARGS)

clean:
	rm -rf $(VENV) .pytest_cache .mypy_cache .ruff_cache .schemathesis .hypothesis
