package leasetest_test

import (
	"os/exec"
	"strings"
	"testing"
)

// TestKitLocksOnEveryClient_NoRedisClientLinked: package leasetest, and so
// Server.Locks, links no Redis client (rueidis, go-redis, valkey-go): a
// test kit for a service on any client, whose users download none they do
// not use. Their own client reaches the server with Addr and Password (the
// adapters' Examples: goredis.ExampleNew_leasetest).
func TestKitLocksOnEveryClient_NoRedisClientLinked(t *testing.T) {
	out, err := exec.Command("go", "list", "-deps", "github.com/respire-go/respire/leasetest").CombinedOutput()
	if err != nil {
		t.Fatalf("go list -deps: %v\n%s", err, out)
	}
	for _, pkg := range strings.Fields(string(out)) {
		for _, client := range []string{"github.com/redis/rueidis", "github.com/redis/go-redis", "github.com/valkey-io/valkey-go"} {
			if pkg == client || strings.HasPrefix(pkg, client+"/") {
				t.Errorf("leasetest links %s", pkg)
			}
		}
	}
}
