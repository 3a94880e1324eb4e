#!/usr/bin/env bash
# with-redis.sh [--cluster|--both] CMD [ARG...]: runs CMD with a throw-away Redis (or a 3-node
# Redis Cluster, or both: a single server and a 3-node cluster) on free loopback ports, and always
# stops them afterwards.
#
# The servers live in a temporary directory (no persistence: --save "" --appendonly no), write
# their pid files there, and every pid file found there at exit is stopped (trap), so a test that
# restarts a server (fault tests) writes its pid file there too. CMD sees:
#   RADIXKV_TEST_REDIS_URL    redis://127.0.0.1:PORT or redis+cluster://127.0.0.1:P1,...:P3
#   RADIXKV_TEST_REDIS_PORTS  the ports, space-separated
#   RADIXKV_TEST_REDIS_DIR    the temporary directory
# With --both, RADIXKV_TEST_REDIS_URL and _PORTS name the single server, and the cluster is
#   RADIXKV_TEST_REDIS_CLUSTER_URL    redis+cluster://127.0.0.1:P1,...:P3
#   RADIXKV_TEST_REDIS_CLUSTER_PORTS  its ports, space-separated
# When Redis cannot start: under CI=true the script fails; otherwise CMD runs with
# RADIXKV_TEST_REDIS_SKIP set to the reason (the tests skip, saying why). A doctest listing
# (--list-test-cases and the like, which ctest runs to discover the cases) runs without a server.
# Time is bounded: the servers get 10 s to come up, CMD WITH_REDIS_TIMEOUT seconds (default 900).
set -euo pipefail

single=1 cluster=0
case ${1:-} in
  --cluster)
    single=0 cluster=1
    shift
    ;;
  --both)
    cluster=1
    shift
    ;;
esac
if (($# == 0)); then
  echo "usage: with-redis.sh [--cluster|--both] CMD [ARG...]" >&2
  exit 2
fi
for arg in "$@"; do
  [[ $arg == --list-* ]] && exec "$@"
done

dir=$(mktemp -d "${TMPDIR:-/tmp}/radixkv-redis.XXXXXX")
stop_servers() {
  local pidfile
  for pidfile in "$dir"/*.pid; do
    [[ -f $pidfile ]] || continue
    kill "$(cat "$pidfile" 2>/dev/null)" 2>/dev/null || true
  done
  # Give them a moment to exit, then make sure. (A server removes its pid file as it exits.)
  for _ in $(seq 20); do
    local alive=0
    for pidfile in "$dir"/*.pid; do
      [[ -f $pidfile ]] && kill -0 "$(cat "$pidfile" 2>/dev/null)" 2>/dev/null && alive=1
    done
    ((alive)) || break
    sleep 0.1
  done
  for pidfile in "$dir"/*.pid; do
    [[ -f $pidfile ]] && kill -9 "$(cat "$pidfile" 2>/dev/null)" 2>/dev/null || true
  done
  rm -rf "$dir"
}
trap stop_servers EXIT

port_free() { ! (echo >"/dev/tcp/127.0.0.1/$1") 2>/dev/null; }

# Starts one server on a free port (several tries: another process may take the port first);
# prints the port.
start_server() {
  local extra=("$@") port
  for _ in $(seq 30); do
    port=$((20000 + RANDOM % 40000))
    port_free "$port" || continue
    # DEBUG (SLEEP) is for the fault tests; Redis 7 allows it only when asked to.
    if redis-server --port "$port" --bind 127.0.0.1 --save "" --appendonly no --daemonize yes \
      --enable-debug-command local \
      --dir "$dir" --pidfile "$dir/redis-$port.pid" --logfile "$dir/redis-$port.log" \
      "${extra[@]}" >/dev/null 2>&1; then
      for _ in $(seq 100); do
        if redis-cli -p "$port" ping 2>/dev/null | grep -q PONG; then
          echo "$port"
          return 0
        fi
        sleep 0.1
      done
    fi
  done
  return 1
}

# Starts a 3-node cluster; sets cluster_ports, or `why` when it cannot.
start_cluster() {
  local n port nodes=() state_ok=0
  cluster_ports=()
  for n in 1 2 3; do
    if port=$(start_server --cluster-enabled yes --cluster-config-file "nodes-$n.conf" \
      --cluster-node-timeout 2000); then
      cluster_ports+=("$port")
    else
      why="cannot start cluster node $n"
      return
    fi
  done
  for port in "${cluster_ports[@]}"; do nodes+=("127.0.0.1:$port"); done
  if ! redis-cli --cluster create "${nodes[@]}" --cluster-replicas 0 --cluster-yes \
    >"$dir/cluster-create.log" 2>&1; then
    why="redis-cli --cluster create failed: $(tail -n 3 "$dir/cluster-create.log")"
    return
  fi
  for _ in $(seq 100); do
    state_ok=1
    for port in "${cluster_ports[@]}"; do
      redis-cli -p "$port" cluster info 2>/dev/null | grep -q "cluster_state:ok" || state_ok=0
    done
    ((state_ok)) && break
    sleep 0.1
  done
  ((state_ok)) || why="the cluster did not reach cluster_state:ok within 10 s"
}

why=""
single_port="" cluster_ports=()
if ! command -v redis-server >/dev/null || ! command -v redis-cli >/dev/null; then
  why="redis-server or redis-cli is not installed (Debian: redis-server, redis-tools)"
else
  if ((single)) && ! single_port=$(start_server); then why="cannot start redis-server"; fi
  if ((cluster)) && [[ -z $why ]]; then start_cluster; fi
fi

if [[ -n $why ]]; then
  if [[ ${CI:-} == true ]]; then
    echo "with-redis.sh: $why (CI=true: failing instead of skipping)" >&2
    exit 1
  fi
  export RADIXKV_TEST_REDIS_SKIP="$why"
else
  cluster_url="redis+cluster://"
  sep=""
  for port in "${cluster_ports[@]}"; do
    cluster_url+="${sep}127.0.0.1:$port"
    sep=","
  done
  if ((single)); then
    export RADIXKV_TEST_REDIS_URL="redis://127.0.0.1:$single_port"
    export RADIXKV_TEST_REDIS_PORTS="$single_port"
    if ((cluster)); then
      export RADIXKV_TEST_REDIS_CLUSTER_URL="$cluster_url"
      export RADIXKV_TEST_REDIS_CLUSTER_PORTS="${cluster_ports[*]}"
    fi
  else
    export RADIXKV_TEST_REDIS_URL="$cluster_url"
    export RADIXKV_TEST_REDIS_PORTS="${cluster_ports[*]}"
  fi
fi
export RADIXKV_TEST_REDIS_DIR="$dir"
set +e
timeout "${WITH_REDIS_TIMEOUT:-900}" "$@"
status=$?
exit "$status"
