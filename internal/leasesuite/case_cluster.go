package leasesuite

import (
	"context"
	"fmt"
	"github.com/respire-go/respire/lease"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/respire-go/respire/internal/simtest"

	"github.com/respire-go/respire/sim"
)

// The raw-token API on a mixed-version cluster: each node gets the commands
// its version supports, in the same run, and every key carries the prefix.
func caseRawAPIOnMixedVersionClusterPicksCommandsPerNode(t *testing.T, tr Transport) {
	profiles := []sim.Profile{sim.Redis70, sim.Redis84, sim.Valkey81, sim.Valkey90}
	c := simtest.StartCluster(t, sim.ClusterConfig{Profiles: profiles, Password: simPassword})
	locks := newLocks(t, tr, clientOf(c.Addrs(), "", simPassword, false)).WithKeyPrefix("app:")
	want := map[sim.Profile][]string{
		sim.Redis70:  {"SET", "SET", "EVALSHA", "EVAL", "EVALSHA", "GET", "DELEX", "DELIFEQ", "EVALSHA", "EVAL", "EVALSHA"},
		sim.Redis84:  {"SET", "SET", "SET", "GET", "DELEX", "DELEX"},
		sim.Valkey81: {"SET", "SET", "SET", "GET", "DELEX", "DELIFEQ", "EVALSHA", "EVAL", "EVALSHA"},
		sim.Valkey90: {"SET", "SET", "SET", "GET", "DELEX", "DELIFEQ", "DELIFEQ"},
	}
	ctx := ctxT(t)
	for i, profile := range profiles {
		key := keyForNode(t, c, "app:", i)
		c.Node(i).ResetLog()
		runRawLifecycle(t, ctx, locks, key)
		log := c.Node(i).Log()
		if got := lockCommands(log); !slices.Equal(got, want[profile]) {
			t.Errorf("node %d (%s) saw %v; want %v", i, profile, got, want[profile])
		}
		for _, args := range lockArgs(log) {
			if k := keyOf(args); k != "app:"+key {
				t.Errorf("node %d: %s sent key %q; want app:%s", i, args[0], k, key)
			}
		}
	}
}

// keyForNode returns a key whose prefixed form hashes to node i.
func keyForNode(t *testing.T, c *sim.Cluster, prefix string, i int) string {
	t.Helper()
	for n := range 10000 {
		if key := fmt.Sprintf("report-%d", n); c.NodeFor(prefix+key) == i {
			return key
		}
	}
	t.Fatalf("no key for node %d", i)
	return ""
}

// runRawLifecycle takes, extends twice, reads and releases twice.
func runRawLifecycle(t *testing.T, ctx context.Context, locks *lease.Locks, key string) {
	t.Helper()
	me := tok("me-" + strings.ToUpper(key))
	steps := []struct {
		name string
		want bool
		run  func() (bool, error)
	}{
		{"TryTake", true, func() (bool, error) { return locks.TryTake(ctx, key, me, time.Minute) }},
		{"ResetExpiry", true, func() (bool, error) { return locks.ResetExpiry(ctx, key, me, time.Minute) }},
		{"ResetExpiry again", true, func() (bool, error) { return locks.ResetExpiry(ctx, key, me, time.Minute) }},
		{"OwnerToken", true, func() (bool, error) {
			owner, found, err := locks.OwnerToken(ctx, key)
			return found && owner == me, err
		}},
		{"Release", true, func() (bool, error) { return locks.Release(ctx, key, me) }},
		{"Release again", false, func() (bool, error) { return locks.Release(ctx, key, me) }},
	}
	for _, step := range steps {
		if got, err := step.run(); got != step.want || err != nil {
			t.Fatalf("%s(%s) = %v, %v; want %v, nil", step.name, key, got, err, step.want)
		}
	}
}

func init() {
	register(
		Case{"RawAPIOnMixedVersionClusterPicksCommandsPerNode", caseRawAPIOnMixedVersionClusterPicksCommandsPerNode},
	)
}
