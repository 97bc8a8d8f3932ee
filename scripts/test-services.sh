#!/usr/bin/env bash
# Make sure the servers the tests talk to are installed (Debian packages) and answering on
# loopback: Redis (6379), memcached (11211), PostgreSQL (5432). Starts only what is not
# already running; prints one line per server. Used by `make test` and .ci/run.
set -euo pipefail
here=$(dirname "$0")
run_dir=${TEST_SERVICES_DIR:-/tmp/contract-platform-services}
mkdir -p "$run_dir"

answers() {  # host port
    (exec 3<>"/dev/tcp/$1/$2") 2>/dev/null
}

wait_for() {  # name host port
    for _ in $(seq 1 100); do
        answers "$2" "$3" && { echo "$1: listening on $2:$3"; return 0; }
        sleep 0.1
    done
    echo "$1: did not start on $2:$3" >&2
    return 1
}

"$here/ensure-debian-packages.sh" redis-server memcached postgresql

if answers 127.0.0.1 6379; then
    echo "redis: already listening on 127.0.0.1:6379"
else
    redis-server --port 6379 --bind 127.0.0.1 --daemonize yes --save "" --appendonly no \
        --pidfile "$run_dir/redis.pid" --logfile "$run_dir/redis.log"
    wait_for redis 127.0.0.1 6379
fi

if answers 127.0.0.1 11211; then
    echo "memcached: already listening on 127.0.0.1:11211"
else
    memcached -d -p 11211 -l 127.0.0.1 -u "$(id -un)" -P "$run_dir/memcached.pid"
    wait_for memcached 127.0.0.1 11211
fi

if answers 127.0.0.1 5432; then
    echo "postgresql: already listening on 127.0.0.1:5432"
else
    version=$(ls /etc/postgresql 2>/dev/null | sort -V | tail -n 1)
    if [ -n "$version" ]; then
        pg_ctlcluster --skip-systemctl-redirect "$version" main start
    else
        echo "postgresql: no cluster under /etc/postgresql" >&2
        exit 1
    fi
    wait_for postgresql 127.0.0.1 5432
fi
