package main

import (
	"context"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/respire-go/respire/internal/realserver"
	"github.com/respire-go/respire/sim"
)

// TestClusterFlag: with --cluster, run (fenced, with a hash tag) and status
// follow the real Redis Cluster of scripts/with-servers.sh; --cluster on a
// standalone server is a usage error.
func TestClusterFlag(t *testing.T) {
	t.Parallel()
	srv, err := sim.Start(context.Background(), sim.Config{Profile: sim.Valkey90})
	if err != nil {
		t.Fatal(err)
	}
	defer srv.Close()
	if code, _, stderr := runCLI(t, nil, "--cluster", "--addr", srv.Addr(), "status", "k"); code != exitUsage ||
		!strings.Contains(stderr, "not a cluster") {
		t.Errorf("--cluster on a standalone server: exit %d, %q; want 64", code, stderr)
	}

	seeds := os.Getenv("RESPIRE_REAL_CLUSTER70")
	if seeds == "" {
		t.Skip("RESPIRE_REAL_CLUSTER70 not set (run under scripts/with-servers.sh)")
	}
	realserver.Lock(t, seeds)
	env := append(cleanEnv(), "REDIS_PASSWORD="+os.Getenv("RESPIRE_REAL_CLUSTER70_PASSWORD"))
	tag := "{" + uniqueKey(t, "cluster") + "}"
	conn := []string{"--cluster", "--addr", seeds}
	eventually(t, 15*time.Second, "the cluster to answer", func() bool {
		code, _, _ := runCLI(t, env, append(conn, "status", tag+":lock")...)
		return code == exitNotHeld // answered: the key is free
	})
	code, stdout, stderr := runCLI(t, env, append(conn, "run", "--key", tag+":lock", "--fenced", tag+":fence",
		"--", "sh", "-c", `echo "token $RESPIRE_FENCING_TOKEN"`)...)
	if code != 0 || stdout != "token 1\n" {
		t.Fatalf("run on the cluster: exit %d, stdout %q, stderr %q", code, stdout, stderr)
	}
	_, stdout, _ = runCLI(t, env, append(conn, "status", "--fenced", tag+":fence", tag+":lock")...)
	if want := tag + ":lock: no owner\n" + tag + ":fence: fencing counter 1\n"; stdout != want {
		t.Errorf("status on the cluster printed %q; want %q", stdout, want)
	}
}
