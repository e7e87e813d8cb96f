// Package simtest starts sim servers for the tests of conn/, lease/ and
// coordination/, and checks on every one of them the rule that discovery
// never uses INFO or COMMAND.
package simtest

import (
	"context"
	"strings"
	"testing"

	"github.com/respire-go/respire/sim"
)

// Start starts a simulated node with cfg; when the test ends it checks that
// no INFO or COMMAND was sent to the node, then closes it.
func Start(t testing.TB, cfg sim.Config) *sim.Server {
	t.Helper()
	srv, err := sim.Start(context.Background(), cfg)
	if err != nil {
		t.Fatalf("sim.Start(%s): %v", cfg.Profile, err)
	}
	t.Cleanup(func() {
		AssertNoDiscoveryCommands(t, srv.Log())
		srv.Close()
	})
	return srv
}

// StartCluster starts a simulated cluster with cfg; when the test ends it
// checks every node as Start does, then closes the cluster.
func StartCluster(t testing.TB, cfg sim.ClusterConfig) *sim.Cluster {
	t.Helper()
	c, err := sim.StartCluster(context.Background(), cfg)
	if err != nil {
		t.Fatalf("sim.StartCluster(%v): %v", cfg.Profiles, err)
	}
	t.Cleanup(func() {
		for i := range cfg.Profiles {
			AssertNoDiscoveryCommands(t, c.Node(i).Log())
		}
		c.Close()
	})
	return c
}

// AssertNoDiscoveryCommands fails t for every INFO or COMMAND in log:
// capabilities are discovered by trying the native command, never by asking.
func AssertNoDiscoveryCommands(t testing.TB, log []sim.Entry) {
	t.Helper()
	for _, e := range log {
		if name := strings.ToUpper(e.Args[0]); name == "INFO" || name == "COMMAND" {
			t.Errorf("discovery command sent: %q", e.Args)
		}
	}
}
