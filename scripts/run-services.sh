#!/usr/bin/env bash
# `make run`: start every service on its embedded defaults, print where each listens, and stop
# them all on Ctrl-C (or when one exits). Ports can be overridden from the environment.
set -euo pipefail
cd "$(dirname "$0")/.."
PY=${PY:-.venv/bin/python}
HOST=${HOST:-127.0.0.1}
EXAMPLE_PORT=${EXAMPLE_PORT:-8070}
RATELIMIT_HTTP_PORT=${RATELIMIT_HTTP_PORT:-8080}
RATELIMIT_GRPC_PORT=${RATELIMIT_GRPC_PORT:-8081}
RAG_PORT=${RAG_PORT:-8000}
RAG_DATA_DIR=${RAG_DATA_DIR:-.data/rag}
AGENTS_PORT=${AGENTS_PORT:-8090}
AGENTS_DATA_DIR=${AGENTS_DATA_DIR:-.data/agents}

pids=()
stop() {
    trap - INT TERM EXIT
    for pid in "${pids[@]}"; do kill -TERM "$pid" 2>/dev/null || true; done
    wait || true
}
trap stop INT TERM EXIT

# ratelimit: in-memory counters, rules from examples/ratelimit/config (reloaded on change)
BACKEND_TYPE=memory RUNTIME_ROOT=examples/ratelimit RUNTIME_APPDIRECTORY=config \
    RUNTIME_WATCH_ROOT=false HOST=$HOST PORT=$RATELIMIT_HTTP_PORT \
    GRPC_HOST=$HOST GRPC_PORT=$RATELIMIT_GRPC_PORT LOG_LEVEL=${LOG_LEVEL:-info} \
    "$PY" -m handlers.ratelimit.server &
pids+=($!)

# rag: LanceDB in $RAG_DATA_DIR, all-MiniLM-L6-v2 and SmolLM2-135M-Instruct from their packages
# (the models load in the background: GET /health answers 503 "loading" until they are ready)
RAG_HOST=$HOST RAG_PORT=$RAG_PORT RAG_DATA_DIR=$RAG_DATA_DIR LOG_LEVEL=${LOG_LEVEL:-info} \
    "$PY" -m handlers.rag.server &
pids+=($!)

# agents: SQLite and blobs in $AGENTS_DATA_DIR, executions run by the server's own worker
AGENTS_HOST=$HOST AGENTS_PORT=$AGENTS_PORT AGENTS_DATA_DIR=$AGENTS_DATA_DIR \
    LOG_LEVEL=${LOG_LEVEL:-INFO} "$PY" -m handlers.agents.server &
pids+=($!)

"$PY" -m uvicorn examples.webrest_example.app:app --host "$HOST" --port "$EXAMPLE_PORT" \
    --log-level warning &
pids+=($!)

cat <<INFO
ratelimit        HTTP  http://$HOST:$RATELIMIT_HTTP_PORT  (POST /json, GET /healthcheck)
                 gRPC  $HOST:$RATELIMIT_GRPC_PORT  (envoy.service.ratelimit.v3.RateLimitService)
                 rules examples/ratelimit/config/*.yaml
rag              HTTP  http://$HOST:$RAG_PORT  (POST /uploadDocument, /generate, /documentSearch;
                 GET /documents, /health; OpenAPI at /openapi.json)  data $RAG_DATA_DIR
agents           HTTP  http://$HOST:$AGENTS_PORT/api/v1  (agents, executions, workflows)  data $AGENTS_DATA_DIR
                 a key: AGENTS_DATA_DIR=$AGENTS_DATA_DIR $PY -m handlers.agents.admin create-key --name me --scope '*' --can-create
webrest example  http://$HOST:$EXAMPLE_PORT  (OpenAPI at /openapi.json)
docs (Swagger UI over each OpenAPI document): http://$HOST:$RATELIMIT_HTTP_PORT/docs  http://$HOST:$RAG_PORT/docs
                 http://$HOST:$AGENTS_PORT/docs  http://$HOST:$EXAMPLE_PORT/docs
Ctrl-C stops everything.
INFO
wait -n
