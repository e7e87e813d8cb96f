#!/usr/bin/env bash
# parallel.sh NAME=CMD...: run each CMD (a shell command line) at once, each
# with its output in a log of its own; when all ended, print each log under
# its NAME, in the order given, and exit 1 if any failed (listing which).
# The adapter suites spend most of their time waiting on servers and timers,
# so on a two-core machine they overlap well; each starts servers of its own
# (scripts/with-servers.sh), so no two share a server.
set -uo pipefail
dir=$(mktemp -d "${TMPDIR:-/tmp}/respire-parallel.XXXXXX")
pids=() names=()
cleanup() { for p in "${pids[@]}"; do kill -- "-$p" 2>/dev/null || kill "$p" 2>/dev/null || true; done; rm -rf "$dir"; }
trap cleanup EXIT INT TERM
i=0
for job in "$@"; do
  name=${job%%=*} cmd=${job#*=}
  names+=("$name")
  setsid bash -c "$cmd" >"$dir/$i.log" 2>&1 &
  pids+=($!)
  i=$((i+1))
done
failed=()
for i in "${!pids[@]}"; do
  if ! wait "${pids[$i]}"; then failed+=("${names[$i]}"); fi
done
for i in "${!names[@]}"; do
  echo "=== ${names[$i]}"
  cat "$dir/$i.log"
done
pids=()
if [ ${#failed[@]} -gt 0 ]; then
  echo "parallel: failed: ${failed[*]}" >&2
  exit 1
fi
