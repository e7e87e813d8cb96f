#!/usr/bin/env bash
# guardcost.sh [N [VARIANT...]]: the server's cost of each guardcost
# variant (or of those named), in instructions per write, counted by
# callgrind (valgrind) on a private redis-server started for the variant:
# exact, and blind to the host's other load (CPU time and wall time are
# not). The variant is sent N and then 2N times (default 2000), one write
# at a time on one connection; the difference of the two counts, over N,
# is the cost of one write (the connection and SCRIPT LOAD cancel out).
# Counts only the server's own instructions (not the kernel's reads and
# writes, one of each per write for every variant). Needs valgrind.
#
#	bash bench/guardcost.sh 2000
set -euo pipefail
n=${1:-2000}
shift || true
here=$(cd "$(dirname "$0")" && pwd)
work=$(mktemp -d "${TMPDIR:-/tmp}/guardcost.XXXXXX")
password="guardcost-$RANDOM$RANDOM"
stop() {
  if [ -f "$work/pid" ]; then
    kill "$(cat "$work/pid")" 2>/dev/null || true
    while kill -0 "$(cat "$work/pid")" 2>/dev/null; do sleep 0.2; done
    rm -f "$work/pid"
  fi
}
trap 'stop; rm -rf "$work"' EXIT INT TERM
(cd "$here" && go build -o "$work/guardcost" ./cmd/guardcost)

# start: a fresh redis-server under callgrind on a free port ($port, $pid).
start() {
  port=$((20000 + RANDOM % 10000))
  valgrind --tool=callgrind --callgrind-out-file="$work/cg.%p" \
    redis-server --bind 127.0.0.1 --port "$port" --requirepass "$password" --save '' --appendonly no \
    --dir "$work" >"$work/server.log" 2>&1 </dev/null &
  pid=$!
  echo "$pid" >"$work/pid"
  for _ in $(seq 600); do
    redis-cli -p "$port" -a "$password" --no-auth-warning ping 2>/dev/null | grep -q PONG && return 0
    kill -0 "$pid" 2>/dev/null || break
    sleep 0.1
  done
  echo "guardcost: the server did not start" >&2
  cat "$work/server.log" >&2
  exit 1
}

# count VARIANT K: the server's instructions while it answers K writes.
count() {
  callgrind_control -z "$pid" >/dev/null 2>&1 || { echo "guardcost: callgrind_control failed" >&2; exit 1; }
  "$work/guardcost" -addr "127.0.0.1:$port" -password "$password" -variant "$1" -n "$2"
  callgrind_control -d "$1-$2" "$pid" >/dev/null 2>&1 || { echo "guardcost: callgrind_control failed" >&2; exit 1; }
  awk '/^(summary|totals):/ {print $2; exit}' "$(ls -t "$work"/cg.*.* | head -1)"
}

printf '%-24s %12s\n' variant 'Ir/write'
for v in ${@:-$("$work/guardcost" -list | cut -f1)}; do
  start
  a=$(count "$v" "$n")
  b=$(count "$v" $((2 * n)))
  stop
  printf '%-24s %12d\n' "$v" $(((b - a) / n))
done
