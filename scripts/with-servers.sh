#!/usr/bin/env bash
# with-servers.sh CMD...: run CMD with private Redis servers started for it.
#
# Installs Debian's redis-server, redis-tools and redis-sentinel when
# missing, starts (on free loopback ports, with a password, never a fixed
# shared port):
#   - one standalone redis-server 7.0    -> RESPIRE_REAL_REDIS70[_PASSWORD]
#   - a cluster of 3 primaries, each with one replica
#                                         -> RESPIRE_REAL_CLUSTER70[_PASSWORD]
#     (comma-separated addresses of all six nodes; RESPIRE_REAL_CLUSTER70_DIR
#     holds, per node, nodeN/start (restarts it), nodeN/redis.pid and
#     nodeN/port, for tests that kill and restart nodes)
#   - a primary, a replica and three redis-sentinels (master "respire")
#                                         -> RESPIRE_REAL_SENTINEL70 (sentinel
#     addresses), RESPIRE_REAL_SENTINEL70_MASTER, _PASSWORD (data nodes and
#     sentinels), _DIR (as for the cluster: primary/, replica/, sentinelN/)
# then runs CMD and stops every server it started (by pid file, so nodes a
# test restarted are stopped too), also on failure or signal.
set -euo pipefail

here=$(cd "$(dirname "$0")/.." && pwd)
work=$(mktemp -d "${TMPDIR:-/tmp}/respire-servers.XXXXXX")

# alive PID: the process runs and is not a zombie (daemonized servers a test
# killed are reparented to an init that may not reap them).
alive() {
  kill -0 "$1" 2>/dev/null || return 1
  [ "$(awk '{print $3}' "/proc/$1/stat" 2>/dev/null)" != Z ]
}

# stop_servers stops every server started so far (by pid file) and empties $work.
stop_servers() {
  local pids=()
  for f in "$work"/*/redis.pid; do
    [ -f "$f" ] && pids+=("$(cat "$f")")
  done
  for pid in "${pids[@]}"; do kill "$pid" 2>/dev/null || true; done
  for pid in "${pids[@]}"; do
    for _ in $(seq 50); do alive "$pid" || break; sleep 0.1; done
    kill -9 "$pid" 2>/dev/null || true
  done
  rm -rf "${work:?}"/*
}

cleanup() {
  local rc=$?
  stop_servers
  rm -rf "$work"
  exit "$rc"
}
trap cleanup EXIT INT TERM

ensure_redis() {
  if command -v redis-server >/dev/null && command -v redis-cli >/dev/null &&
     command -v redis-sentinel >/dev/null; then return; fi
  echo "with-servers: installing Debian's redis-server, redis-tools, redis-sentinel" >&2
  export DEBIAN_FRONTEND=noninteractive
  apt-get update -qq >&2
  apt-get install -y -qq redis-server redis-tools redis-sentinel >&2
  # The packages may start system services on 6379/26379; we never use them.
}

password="respire-$(od -An -N8 -tx1 /dev/urandom | tr -d ' \n')"

# start_node NAME PORT [extra args...]: write $work/NAME/start (which
# (re)starts the node in the background, pid in $work/NAME/redis.pid) and run it.
start_node() {
  local name=$1 port=$2; shift 2
  local dir="$work/$name"
  mkdir -p "$dir"
  echo "$port" >"$dir/port"
  {
    echo '#!/usr/bin/env bash'
    printf 'cd %q\n' "$dir"
    printf 'redis-server --bind 127.0.0.1 --port %q --requirepass %q --masterauth %q' "$port" "$password" "$password"
    printf ' --save "" --appendonly no --dir %q --daemonize yes --pidfile %q --logfile %q' \
      "$dir" "$dir/redis.pid" "$dir/redis.log"
    [ $# -gt 0 ] && printf ' %q' "$@"
    echo
  } >"$dir/start"
  chmod +x "$dir/start"
  "$dir/start"
}

# start_sentinel NAME PORT PRIMARY_PORT: a redis-sentinel watching "respire".
start_sentinel() {
  local name=$1 port=$2 primary=$3
  local dir="$work/$name"
  mkdir -p "$dir"
  echo "$port" >"$dir/port"
  cat >"$dir/sentinel.conf" <<EOF
port $port
bind 127.0.0.1
dir $dir
daemonize yes
pidfile $dir/redis.pid
logfile $dir/redis.log
requirepass $password
sentinel monitor respire 127.0.0.1 $primary 2
sentinel auth-pass respire $password
sentinel down-after-milliseconds respire 1000
sentinel failover-timeout respire 3000
sentinel parallel-syncs respire 1
sentinel sentinel-pass $password
EOF
  printf '#!/usr/bin/env bash\nredis-sentinel %q\n' "$dir/sentinel.conf" >"$dir/start"
  chmod +x "$dir/start"
  "$dir/start"
}

cli() { redis-cli -a "$password" --no-auth-warning "$@"; }

wait_ready() {
  local port=$1
  for _ in $(seq 100); do
    if cli -p "$port" ping 2>/dev/null | grep -q PONG; then return 0; fi
    sleep 0.1
  done
  echo "with-servers: redis on port $port did not start" >&2
  cat "$work"/*/redis.log >&2 || true
  return 1
}

# wait_for DESCRIPTION CMD...: retry CMD for up to 15 s.
wait_for() {
  local what=$1; shift
  for _ in $(seq 150); do
    if "$@" >/dev/null 2>&1; then return 0; fi
    sleep 0.1
  done
  echo "with-servers: $what did not happen" >&2
  cat "$work"/*/redis.log >&2 || true
  return 1
}

cluster_ok() { cli -p "$1" cluster info | grep -q 'cluster_state:ok'; }
replicas_linked() { [ "$(cli -p "$1" info replication | grep -c 'state=online')" -ge 1 ]; }
sentinels_know() {
  local n
  n=$(cli -p "$1" sentinel sentinels respire | grep -c '^name$' || true)
  [ "$n" -ge 2 ] && cli -p "$1" sentinel replicas respire | grep -q 'slave'
}

# start_servers starts every server on fresh ports; non-zero when one did
# not come up (a port taken between freeport's check and the bind: the
# caller starts over).
start_servers() {
  mapfile -t ports < <(cd "$here" && go run ./internal/tools/freeport -n 12)
  [ "${#ports[@]}" -eq 12 ] || return 1
  start_node standalone "${ports[0]}" || return 1
  for i in 1 2 3 4 5 6; do
    start_node "node$i" "${ports[$i]}" --cluster-enabled yes \
      --cluster-config-file "$work/node$i/nodes.conf" --cluster-node-timeout 1000 || return 1
  done
  start_node primary "${ports[7]}" || return 1
  start_node replica "${ports[8]}" --replicaof 127.0.0.1 "${ports[7]}" || return 1
  for p in "${ports[@]:0:9}"; do wait_ready "$p" || return 1; done

  cluster_addrs=()
  for i in 1 2 3 4 5 6; do cluster_addrs+=("127.0.0.1:${ports[$i]}"); done
  cli --cluster create "${cluster_addrs[@]}" --cluster-replicas 1 --cluster-yes \
    >"$work/cluster-create.log" 2>&1 || { cat "$work/cluster-create.log" >&2; return 1; }

  for i in 1 2 3; do start_sentinel "sentinel$i" "${ports[$((8 + i))]}" "${ports[7]}" || return 1; done

  for i in 1 2 3 4 5 6; do wait_for "cluster_state:ok on node$i" cluster_ok "${ports[$i]}" || return 1; done
  for i in 1 2 3 4 5 6; do
    if cli -p "${ports[$i]}" role | head -1 | grep -q master; then
      wait_for "a replica of node$i" replicas_linked "${ports[$i]}" || return 1
    fi
  done
  wait_for "the replica of the sentinel primary" replicas_linked "${ports[7]}" || return 1
  for i in 1 2 3; do wait_for "sentinel$i knowing the others" sentinels_know "${ports[$((8 + i))]}" || return 1; done
}

ensure_redis
for attempt in 1 2 3; do
  if start_servers; then break; fi
  if [ "$attempt" -eq 3 ]; then echo "with-servers: servers did not start in 3 attempts" >&2; exit 1; fi
  echo "with-servers: starting over on other ports (attempt $((attempt + 1)) of 3)" >&2
  stop_servers
done

export RESPIRE_REAL_REDIS70="127.0.0.1:${ports[0]}"
export RESPIRE_REAL_REDIS70_PASSWORD="$password"
RESPIRE_REAL_CLUSTER70=$(IFS=,; echo "${cluster_addrs[*]}")
export RESPIRE_REAL_CLUSTER70
export RESPIRE_REAL_CLUSTER70_PASSWORD="$password"
export RESPIRE_REAL_CLUSTER70_DIR="$work"
export RESPIRE_REAL_SENTINEL70="127.0.0.1:${ports[9]},127.0.0.1:${ports[10]},127.0.0.1:${ports[11]}"
export RESPIRE_REAL_SENTINEL70_MASTER=respire
export RESPIRE_REAL_SENTINEL70_PASSWORD="$password"
export RESPIRE_REAL_SENTINEL70_DIR="$work"
echo "with-servers: redis 7.0 at $RESPIRE_REAL_REDIS70, cluster at $RESPIRE_REAL_CLUSTER70," \
  "sentinels at $RESPIRE_REAL_SENTINEL70" >&2

"$@"
