package leasesuite

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/respire-go/respire/actor"
	"github.com/respire-go/respire/conn"
	"github.com/respire-go/respire/internal/simtest"
	"github.com/respire-go/respire/lease"
	"github.com/respire-go/respire/sim"
)

// Guarded writes (lease.Lock.Guard) on every transport, every sim profile
// and the real redis-server 7.0. Each case is named after its rule in
// docs/rules.md.

// guardScripts counts the guarded-write scripts (EVALSHA or EVAL of
// GuardWritesScript or of a user's guard script) in log.
func guardScripts(log []sim.Entry) int {
	n := 0
	for _, e := range log {
		name := strings.ToUpper(e.Args[0])
		if (name == "EVALSHA" || name == "EVAL") && len(e.Args) > 3 &&
			(e.Args[1] == conn.GuardWritesScriptSHA || e.Args[1] == conn.GuardWritesScript ||
				strings.HasPrefix(e.Args[1], "if redis.call('get', KEYS[1]) ~= ARGV[1]")) {
			n++
		}
	}
	return n
}

// reply renders an admin reply as bare text ("" for nil).
func bare(r string) string {
	r = strings.TrimSuffix(r, "\r\n")
	if i := strings.Index(r, "\r\n"); i >= 0 && strings.HasPrefix(r, "$") {
		return r[i+2:]
	}
	if r == "$-1" || r == "_" {
		return ""
	}
	return strings.TrimPrefix(strings.TrimPrefix(r, ":"), "+")
}

// TestGuardedWriteNeedsTheLease_TheOwnersWritesRunAStaleHoldersAreRefused:
// the holder's guarded writes run, and its write id is recorded with a TTL;
// once its lease expired on the server and another owner took the key —
// while the holder's own estimate still says Held, as after a pause its
// clock did not see — its guarded write is refused: nothing written,
// ErrOwnershipLost with LossGuardRefused, and the handle is Lost at once,
// its Context ended with that cause. Later calls send nothing.
func caseGuardedWriteNeedsTheLease_TheOwnersWritesRunAStaleHoldersAreRefused(t *testing.T, tr Transport) {
	forEachServer(t, tr, func(t *testing.T, tg *target) {
		locks := tg.locks(t, lease.WithoutPush())
		useClock(locks, &actor.ManualClock{}) // the holder's estimate never runs out
		ctx := ctxT(t)
		const key, data = "{g}:lock", "{g}:data"
		lock, err := locks.Acquire(ctx, key, 10*time.Second)
		if err != nil {
			t.Fatal(err)
		}
		err = lock.Guard(ctx, lease.Command("HSET", data, "f", "1"), lease.Command("INCRBY", "{g}:n", "2"))
		if err != nil {
			t.Fatalf("the holder's Guard = %v", err)
		}
		if got, n := bare(tg.srv.Exec("HGET", data, "f")), bare(tg.srv.Exec("GET", "{g}:n")); got != "1" || n != "2" {
			t.Fatalf("after the holder's writes: f=%q n=%q; want 1, 2", got, n)
		}
		if id := bare(tg.srv.Exec("GET", conn.GuardRecordKey(key))); len(id) != 32 || bare(tg.srv.Exec("PTTL", conn.GuardRecordKey(key))) == "-1" {
			t.Fatalf("write-id record %q (PTTL %s); want an id with a TTL", id, tg.srv.Exec("PTTL", conn.GuardRecordKey(key)))
		}
		takeOverAfterExpiry(t, tg, key, 10*time.Second)
		if lock.State() != lease.StateHeld {
			t.Fatalf("state %s before the stale write; want Held (its estimate did not run out)", lock.State())
		}
		err = lock.Guard(ctx, lease.Command("HSET", data, "f", "stale"))
		if !errors.Is(err, lease.ErrOwnershipLost) || lossOf(t, err).Reason != lease.LossGuardRefused {
			t.Fatalf("the stale holder's Guard = %v; want ErrOwnershipLost, LossGuardRefused", err)
		}
		if got := bare(tg.srv.Exec("HGET", data, "f")); got != "1" {
			t.Fatalf("f = %q after the refused write; want 1 (nothing written)", got)
		}
		if lock.State() != lease.StateLost || lossOf(t, causeOf(t, lock.Context())).Reason != lease.LossGuardRefused {
			t.Fatalf("state %s, cause %v; want Lost with LossGuardRefused at once", lock.State(), context.Cause(lock.Context()))
		}
		before := guardScripts(tg.srv.Log())
		if err := lock.Guard(ctx, lease.Command("HSET", data, "f", "x")); !errors.Is(err, lease.ErrNotHeld) ||
			!errors.Is(err, lease.ErrOwnershipLost) {
			t.Fatalf("Guard on the lost lock = %v; want ErrNotHeld wrapping the loss", err)
		}
		if after := guardScripts(tg.srv.Log()); after != before {
			t.Fatalf("Guard on a lost lock sent %d script(s)", after-before)
		}
	})
}

// TestGuardedWriteValidatesBeforeSending_NothingIsSentForBadInput: a
// command off the allowlist, arguments of the wrong shape, a write naming
// the lock's own keys, no write at all, commands and a script together, a
// semaphore permit, a released lock and a bad replica count are all
// refused with their typed error, and the server receives no script.
func caseGuardedWriteValidatesBeforeSending_NothingIsSentForBadInput(t *testing.T, tr Transport) {
	srv := startSim(t, sim.Config{Profile: sim.Redis70})
	locks := newLocks(t, tr, clientOf([]string{srv.Addr()}, "", simPassword, false))
	ctx := ctxT(t)
	lock, err := locks.Acquire(ctx, "{v}:lock", time.Minute)
	if err != nil {
		t.Fatal(err)
	}
	srv.ResetLog()
	cases := []struct {
		name  string
		g     lease.Guarded
		want  error
		index int
	}{
		{"off the allowlist", lease.Guarded{Writes: []lease.Write{lease.Command("SET", "{v}:a", "1"), lease.Command("FLUSHALL")}}, lease.ErrWriteNotAllowed, 1},
		{"odd HSET", lease.Guarded{Writes: []lease.Write{lease.Command("HSET", "{v}:h", "f")}}, lease.ErrWriteArgs, 0},
		{"INCRBY not an integer", lease.Guarded{Writes: []lease.Write{lease.Command("incrby", "{v}:n", "1.5")}}, lease.ErrWriteArgs, 0},
		{"SET bad option", lease.Guarded{Writes: []lease.Write{lease.Command("SET", "{v}:a", "1", "PX", "0")}}, lease.ErrWriteArgs, 0},
		{"the lock's key", lease.Guarded{Writes: []lease.Write{lease.Command("DEL", "{v}:lock")}}, lease.ErrReservedKey, 0},
		{"the write-id record", lease.Guarded{Writes: []lease.Write{lease.Command("SET", conn.GuardRecordKey("{v}:lock"), "x")}}, lease.ErrReservedKey, 0},
		{"a script's key", lease.Guarded{Script: lease.NewGuardScript("return 1"), Keys: []string{"{v}:lock"}}, lease.ErrReservedKey, -1},
		{"nothing", lease.Guarded{}, lease.ErrNoWrites, -1},
		{"the zero Write", lease.Guarded{Writes: []lease.Write{{}}}, lease.ErrWriteNotAllowed, 0},
		{"both", lease.Guarded{Writes: []lease.Write{lease.Command("DEL", "{v}:a")}, Script: lease.NewGuardScript("return 1")}, lease.ErrWriteArgs, -1},
	}
	for _, c := range cases {
		err := lock.GuardWith(ctx, c.g)
		var we *lease.WriteError
		if !errors.Is(err, c.want) || !errors.As(err, &we) || we.Index != c.index {
			t.Errorf("%s: %v; want %v at write %d", c.name, err, c.want, c.index)
		}
	}
	if err := lock.GuardWith(ctx, lease.Guarded{Writes: []lease.Write{lease.Command("DEL", "{v}:a")}, Replicas: 1}); !errors.Is(err, conn.ErrInvalidWait) {
		t.Errorf("Replicas without a timeout: %v; want ErrInvalidWait", err)
	}
	permit, err := locks.Semaphore("s", 2).Acquire(ctx, time.Minute)
	if err != nil {
		t.Fatal(err)
	}
	if err := permit.Guard(ctx, lease.Command("DEL", "{s}:x")); !errors.Is(err, lease.ErrGuardKind) {
		t.Errorf("a permit's Guard = %v; want ErrGuardKind", err)
	}
	if _, err := lock.Release(ctx); err != nil {
		t.Fatal(err)
	}
	if err := lock.Guard(ctx, lease.Command("DEL", "{v}:a")); !errors.Is(err, lease.ErrNotHeld) || !errors.Is(err, lease.ErrReleased) {
		t.Errorf("Guard after Release = %v; want ErrNotHeld, ErrReleased", err)
	}
	if n := guardScripts(srv.Log()); n != 0 {
		t.Fatalf("%d guarded-write script(s) reached the server; want none", n)
	}
}

// TestGuardedWriteValidatesBeforeSending_CrossSlotKeysAreRefusedInACluster:
// in cluster mode a write whose key is in another slot than the lock key is
// refused (ErrCrossSlot, not submitted) before anything is sent; a key
// sharing the lock key's hash tag is written, and a lock key without a hash
// tag gets a write-id record in its own slot.
func caseGuardedWriteValidatesBeforeSending_CrossSlotKeysAreRefusedInACluster(t *testing.T, tr Transport) {
	c := simtest.StartCluster(t, sim.ClusterConfig{Profiles: []sim.Profile{sim.Redis70, sim.Valkey90, sim.Redis84}, Password: simPassword})
	locks := newLocks(t, tr, clientOf(c.Addrs(), "", simPassword, false))
	ctx := ctxT(t)
	lock, err := locks.Acquire(ctx, "{c}:lock", time.Minute)
	if err != nil {
		t.Fatal(err)
	}
	for i := range 3 {
		c.Node(i).ResetLog()
	}
	if err := lock.Guard(ctx, lease.Command("HSET", "c:data", "f", "v")); !errors.Is(err, lease.ErrCrossSlot) ||
		!errors.Is(err, lease.ErrNotSubmitted) {
		t.Fatalf("a write in another slot: %v; want ErrCrossSlot, not submitted", err)
	}
	for i := range 3 {
		if n := guardScripts(c.Node(i).Log()); n != 0 {
			t.Fatalf("node %d received %d script(s)", i, n)
		}
	}
	if err := lock.Guard(ctx, lease.Command("HSET", "{c}:data", "f", "v")); err != nil {
		t.Fatalf("a write in the lock key's slot: %v", err)
	}
	plain, err := locks.Acquire(ctx, "plainkey", time.Minute)
	if err != nil {
		t.Fatal(err)
	}
	if err := plain.Guard(ctx, lease.Command("SET", "{plainkey}:data", "v")); err != nil {
		t.Fatalf("a lock key without a hash tag, its data in the whole key's slot: %v", err)
	}
}

func init() {
	register(
		Case{"GuardedWriteNeedsTheLease_TheOwnersWritesRunAStaleHoldersAreRefused", caseGuardedWriteNeedsTheLease_TheOwnersWritesRunAStaleHoldersAreRefused},
		Case{"GuardedWriteValidatesBeforeSending_NothingIsSentForBadInput", caseGuardedWriteValidatesBeforeSending_NothingIsSentForBadInput},
		Case{"GuardedWriteValidatesBeforeSending_CrossSlotKeysAreRefusedInACluster", caseGuardedWriteValidatesBeforeSending_CrossSlotKeysAreRefusedInACluster},
	)
}
