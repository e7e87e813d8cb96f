#!/usr/bin/env bash
# goredis-minor.sh VERSION [go test args...]: run the goredis module's tests
# with github.com/redis/go-redis/v9 at VERSION instead of the version its
# go.mod requires, without touching go.mod or go.sum: a copy of both in a
# temporary directory is edited and passed with -modfile. make test runs it
# once per version of GOREDIS_MINORS (the Makefile): the oldest and the newest
# go-redis minor the transport supports.
#
#   bash scripts/with-servers.sh bash scripts/goredis-minor.sh v9.19.0 -race -count=1 ./...
set -euo pipefail

version=${1:?usage: goredis-minor.sh VERSION [go test args...]}
shift
here=$(cd "$(dirname "$0")/.." && pwd)
tmp=$(mktemp -d "${TMPDIR:-/tmp}/goredis-minor.XXXXXX")
trap 'rm -rf "$tmp"' EXIT

cp "$here/goredis/go.mod" "$tmp/go.mod"
cp "$here/goredis/go.sum" "$tmp/go.sum"
# -modfile keeps replace directives relative to the main go.mod's directory
# (the module root), so ../ still names the main module.
cd "$here/goredis"
go mod edit -modfile="$tmp/go.mod" -require="github.com/redis/go-redis/v9@$version"
echo "goredis-minor: go-redis $version" >&2
GOFLAGS=-mod=mod go test -modfile="$tmp/go.mod" "$@"
