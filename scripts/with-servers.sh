#!/usr/bin/env bash
# with-servers.sh CMD...: run CMD with private Redis servers started for it.
#
# Installs Debian's redis-server when it is missing, starts (on free
# loopback ports, with a password, never a fixed shared port):
#   - one standalone redis-server 7.0  -> RESPIRE_REAL_REDIS70[_PASSWORD]
#   - a 3-master redis-server cluster  -> RESPIRE_REAL_CLUSTER70[_PASSWORD]
#     (comma-separated addresses)
# then runs CMD and stops every server it started, also on failure or signal.
set -euo pipefail

here=$(cd "$(dirname "$0")/.." && pwd)
work=$(mktemp -d "${TMPDIR:-/tmp}/respire-servers.XXXXXX")
pids=()

cleanup() {
  local rc=$?
  for pid in "${pids[@]}"; do kill "$pid" 2>/dev/null || true; done
  for pid in "${pids[@]}"; do
    for _ in $(seq 50); do kill -0 "$pid" 2>/dev/null || break; sleep 0.1; done
    kill -9 "$pid" 2>/dev/null || true
  done
  rm -rf "$work"
  exit "$rc"
}
trap cleanup EXIT INT TERM

ensure_redis() {
  if command -v redis-server >/dev/null && command -v redis-cli >/dev/null; then return; fi
  echo "with-servers: installing Debian's redis-server" >&2
  export DEBIAN_FRONTEND=noninteractive
  apt-get update -qq >&2
  apt-get install -y -qq redis-server redis-tools >&2
  # The package may start a system service on 6379; we never use it.
}

password="respire-$(od -An -N8 -tx1 /dev/urandom | tr -d ' \n')"

# start_redis PORT DIR [extra args...]: start one private redis-server.
start_redis() {
  local port=$1 dir=$2; shift 2
  mkdir -p "$dir"
  redis-server --bind 127.0.0.1 --port "$port" --requirepass "$password" \
    --masterauth "$password" --save '' --appendonly no --dir "$dir" \
    --daemonize no --logfile "$dir/redis.log" "$@" &
  pids+=($!)
}

wait_ready() {
  local port=$1
  for _ in $(seq 100); do
    if redis-cli -p "$port" -a "$password" --no-auth-warning ping 2>/dev/null | grep -q PONG; then return 0; fi
    sleep 0.1
  done
  echo "with-servers: redis on port $port did not start" >&2
  cat "$work"/*/redis.log >&2 || true
  return 1
}

ensure_redis
mapfile -t ports < <(cd "$here" && go run ./internal/tools/freeport -n 4)

start_redis "${ports[0]}" "$work/standalone"
for i in 1 2 3; do
  start_redis "${ports[$i]}" "$work/cluster$i" --cluster-enabled yes \
    --cluster-config-file "$work/cluster$i/nodes.conf" --cluster-node-timeout 5000
done
for p in "${ports[@]}"; do wait_ready "$p"; done

redis-cli -a "$password" --no-auth-warning --cluster create \
  "127.0.0.1:${ports[1]}" "127.0.0.1:${ports[2]}" "127.0.0.1:${ports[3]}" \
  --cluster-yes >"$work/cluster-create.log" 2>&1 || { cat "$work/cluster-create.log" >&2; exit 1; }
for _ in $(seq 100); do
  if redis-cli -p "${ports[1]}" -a "$password" --no-auth-warning cluster info | grep -q 'cluster_state:ok'; then break; fi
  sleep 0.1
done

export RESPIRE_REAL_REDIS70="127.0.0.1:${ports[0]}"
export RESPIRE_REAL_REDIS70_PASSWORD="$password"
export RESPIRE_REAL_CLUSTER70="127.0.0.1:${ports[1]},127.0.0.1:${ports[2]},127.0.0.1:${ports[3]}"
export RESPIRE_REAL_CLUSTER70_PASSWORD="$password"
echo "with-servers: redis 7.0 at $RESPIRE_REAL_REDIS70, cluster at $RESPIRE_REAL_CLUSTER70" >&2

"$@"
