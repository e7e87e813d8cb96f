package main

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/respire-go/respire/lease"
)

// TestLockctlGuard_OneGuardedWriteAndItsStatuses: lockctl guard takes the
// key, makes its write through a guarded write, releases and prints
// "written" (exit 0); a key held by another owner is contention (75,
// nothing written); a write off the allowlist is a usage error (64) before
// anything is sent.
func TestLockctlGuard_OneGuardedWriteAndItsStatuses(t *testing.T) {
	t.Parallel()
	each(t, func(t *testing.T, tg *target) {
		key := "{" + uniqueKey(t, "guard") + "}:lock"
		state := strings.TrimSuffix(key, ":lock") + ":state"
		args := append(tg.conn(), "guard", "--key", key, "--", "HSET", state, "status", "done")
		if code, stdout, stderr := runCLI(t, tg.env(), args...); code != 0 || stdout != "written\n" {
			t.Fatalf("guard: exit %d, stdout %q, stderr %q; want 0, written", code, stdout, stderr)
		}
		got, err := tg.client.Do(context.Background(), tg.client.B().Hget().Key(state).Field("status").Build()).ToString()
		if err != nil || got != "done" {
			t.Fatalf("HGET status = %q, %v; want done", got, err)
		}
		if _, held := tg.get(t, key); held {
			t.Fatal("guard left the key held")
		}
		tg.do(t, tg.client.B().Set().Key(key).Value(lease.NewToken().String()).Px(time.Minute).Build())
		args = append(tg.conn(), "guard", "--key", key, "--", "HSET", state, "status", "again")
		if code, stdout, _ := runCLI(t, tg.env(), args...); code != exitNotAcquired || stdout != "" {
			t.Fatalf("guard of a held key: exit %d, stdout %q; want 75", code, stdout)
		}
		if got, _ := tg.client.Do(context.Background(), tg.client.B().Hget().Key(state).Field("status").Build()).ToString(); got != "done" {
			t.Fatalf("status = %q after the refused guard; want done", got)
		}
	})
}
