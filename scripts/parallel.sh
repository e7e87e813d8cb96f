#!/usr/bin/env bash
# parallel.sh NAME=CMD...: run each CMD (a shell command line) at once, each
# with its output in a log of its own; when all ended, print each log under
# its NAME and how long it took, in the order given, and exit 1 if any
# failed (listing which). The suites spend most of their time waiting on
# servers and timers (an adapter's suite: about 40 CPU-seconds in 240 s),
# so on a two-core machine they overlap well, and the simulator's CPU-bound
# schedules fill the cores they leave idle; each suite starts servers of its
# own (scripts/with-servers.sh), so no two share a server.
set -uo pipefail
dir=$(mktemp -d "${TMPDIR:-/tmp}/respire-parallel.XXXXXX")
pids=() names=()
cleanup() { for p in "${pids[@]}"; do kill -- "-$p" 2>/dev/null || kill "$p" 2>/dev/null || true; done; rm -rf "$dir"; }
trap cleanup EXIT INT TERM
start=$(date +%s)
i=0
for job in "$@"; do
  name=${job%%=*} cmd=${job#*=}
  names+=("$name")
  setsid bash -c 'eval "$1"; rc=$?; date +%s >"$2"; exit "$rc"' _ "$cmd" "$dir/$i.end" >"$dir/$i.log" 2>&1 &
  pids+=($!)
  i=$((i+1))
done
failed=()
for i in "${!pids[@]}"; do
  if ! wait "${pids[$i]}"; then failed+=("${names[$i]}"); fi
done
for i in "${!names[@]}"; do
  took="?"; [ -f "$dir/$i.end" ] && took=$(( $(cat "$dir/$i.end") - start ))
  echo "=== ${names[$i]} (${took} s)"
  cat "$dir/$i.log"
done
pids=()
if [ ${#failed[@]} -gt 0 ]; then
  echo "parallel: failed: ${failed[*]}" >&2
  exit 1
fi
