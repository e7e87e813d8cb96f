package main

import (
	"bytes"
	"context"
	"strings"
	"testing"

	"github.com/respire-go/respire/internal/leakcheck"
)

func TestMain(m *testing.M) { leakcheck.VerifyTestMain(m) }

// TestRunStartsAndStopsOnContext: run prints the listening address and
// returns when its context ends.
func TestRunStartsAndStopsOnContext(t *testing.T) {
	for _, argv := range [][]string{
		{"--profile", "valkey-9.0", "--listen", "127.0.0.1:0", "--password", "pw"},
		{"--profile", "redis-7.0,redis-8.4,valkey-9.0", "--cluster", "3"},
	} {
		ctx, cancel := context.WithCancel(context.Background())
		cancel()
		var out bytes.Buffer
		if err := run(ctx, argv, &out); err != nil {
			t.Fatalf("run(%q) = %v", argv, err)
		}
		if !strings.Contains(out.String(), "127.0.0.1:") {
			t.Fatalf("run(%q) printed %q; want an address", argv, out.String())
		}
	}
}

// TestRunRejectsUnknownProfile.
func TestRunRejectsUnknownProfile(t *testing.T) {
	if err := run(context.Background(), []string{"--profile", "redis-6.2", "--listen", "127.0.0.1:0"}, &bytes.Buffer{}); err == nil {
		t.Fatal("run accepted an unknown profile")
	}
}
