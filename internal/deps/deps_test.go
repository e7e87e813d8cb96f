// Package deps checks, with `go list -deps`, what each shipped package
// links: the packages a user imports from the root module link no Redis
// client, each client adapter links its own client and no other, and the
// deterministic simulator links the wire engine that ships.
package deps

import (
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// clients are the Redis clients' module paths, by adapter directory.
var clients = map[string]string{
	"rueidislease": "github.com/redis/rueidis",
	"goredis":      "github.com/redis/go-redis/",
	"valkeygo":     "github.com/valkey-io/valkey-go",
}

// goListDeps returns every package pkg links (go list -deps, tests not
// included), run in dir (relative to the root module).
func goListDeps(t *testing.T, dir, pkg string) []string {
	t.Helper()
	cmd := exec.Command("go", "list", "-deps", "-f", "{{.ImportPath}}", pkg)
	cmd.Dir = filepath.Join("..", "..", dir)
	out, err := cmd.Output()
	if err != nil {
		msg := ""
		if ee, ok := err.(*exec.ExitError); ok {
			msg = string(ee.Stderr)
		}
		t.Fatalf("go list -deps %s in %s: %v\n%s", pkg, cmd.Dir, err, msg)
	}
	return strings.Fields(string(out))
}

// linked returns the client module paths among deps.
func linked(deps []string) []string {
	var out []string
	for _, dir := range []string{"rueidislease", "goredis", "valkeygo"} {
		if slices.ContainsFunc(deps, func(p string) bool { return strings.HasPrefix(p, clients[dir]) }) {
			out = append(out, clients[dir])
		}
	}
	return out
}

// TestCoreLinksNoClient_GoListDeps: lease, election, coordination,
// leasetest and the wire engine (conn) link no Redis client.
func TestCoreLinksNoClient_GoListDeps(t *testing.T) {
	for _, pkg := range []string{"./lease", "./election", "./coordination", "./leasetest", "./conn"} {
		if got := linked(goListDeps(t, ".", pkg)); len(got) != 0 {
			t.Errorf("go list -deps %s links %v; want no Redis client", pkg, got)
		}
	}
}

// TestAdapterLinksItsClientOnly_GoListDeps: each client adapter module's
// package links its own client and no other.
func TestAdapterLinksItsClientOnly_GoListDeps(t *testing.T) {
	for _, dir := range []string{"rueidislease", "goredis", "valkeygo"} {
		got := linked(goListDeps(t, dir, "."))
		if !slices.Equal(got, []string{clients[dir]}) {
			t.Errorf("go list -deps of the %s module's package links %v; want %s alone", dir, got, clients[dir])
		}
	}
}

// TestSimulatorRunsTheShippedEngine_GoListDeps: the deterministic simulator
// links the wire engine (conn) and the driver (actor), and no Redis client.
func TestSimulatorRunsTheShippedEngine_GoListDeps(t *testing.T) {
	deps := goListDeps(t, ".", "./sim/dst")
	for _, want := range []string{"github.com/respire-go/respire/conn", "github.com/respire-go/respire/actor"} {
		if !slices.Contains(deps, want) {
			t.Errorf("go list -deps ./sim/dst does not name %s", want)
		}
	}
	if got := linked(deps); len(got) != 0 {
		t.Errorf("go list -deps ./sim/dst links %v; want no Redis client", got)
	}
}
