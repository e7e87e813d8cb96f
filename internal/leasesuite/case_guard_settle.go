package leasesuite

import (
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/respire-go/respire/conn"
	"github.com/respire-go/respire/internal/faultproxy"
	"github.com/respire-go/respire/internal/realserver"
	"github.com/respire-go/respire/lease"
)

// TestGuardedWriteSettlesAnUnknownOutcome_TheWriteIDRecordTellsRanFromNotRun:
// a guarded write whose reply is lost (the command timeout ends the wait)
// is settled: its connection is fenced, then the write-id record is read.
// When the server ran the script (its reply held by the proxy), Guard
// reports success and the writes ran once; when the script never reached
// the server (the proxy held it), Guard reports ErrNotWritten — not
// ErrOutcomeUnknown — and the write never runs, also once the proxy lets
// the bytes go.
func caseGuardedWriteSettlesAnUnknownOutcome_TheWriteIDRecordTellsRanFromNotRun(t *testing.T, tr Transport) {
	forEachFaultyServer(t, tr, func(t *testing.T, f *faulty) {
		loadScripts(f.target)
		locks := f.locks(t, lease.WithCommandTimeout(500*time.Millisecond), lease.WithoutPush())
		ctx := ctxT(t)
		lock, err := locks.Acquire(ctx, "{s}:lock", time.Minute)
		if err != nil {
			t.Fatal(err)
		}
		if err := lock.Guard(ctx, lease.Command("SET", "{s}:warm", "1")); err != nil { // the script is cached
			t.Fatal(err)
		}
		f.sessionConn(t, lock).Stall(faultproxy.ToClient) // the server runs it; its reply is held
		if err := lock.Guard(ctx, lease.Command("INCRBY", "{s}:ran", "1")); err != nil {
			t.Fatalf("a write that ran, its reply lost: Guard = %v; want nil once settled", err)
		}
		if got := bare(f.srv.Exec("GET", "{s}:ran")); got != "1" {
			t.Fatalf("{s}:ran = %q; want 1 (ran once)", got)
		}
		if lock.State() != lease.StateHeld {
			t.Fatalf("state %s after settling; want Held", lock.State())
		}
		if err := lock.Guard(ctx, lease.Command("SET", "{s}:warm", "2")); err != nil { // on the fresh session
			t.Fatal(err)
		}
		f.sessionConn(t, lock).Stall(faultproxy.ToServer) // the script never reaches the server
		err = lock.Guard(ctx, lease.Command("INCRBY", "{s}:lost", "1"))
		var nw *lease.NotWrittenError
		if !errors.Is(err, lease.ErrNotWritten) || errors.Is(err, lease.ErrOutcomeUnknown) || !errors.As(err, &nw) ||
			!errors.Is(nw.Cause, lease.ErrOutcomeUnknown) {
			t.Fatalf("a write that never reached the server: Guard = %v; want ErrNotWritten, not unknown", err)
		}
		f.proxy.UnstallAll(faultproxy.Both)
		if err := lock.Guard(ctx, lease.Command("SET", "{s}:after", "1")); err != nil {
			t.Fatalf("the next guarded write: %v", err)
		}
		if got := bare(f.srv.Exec("GET", "{s}:lost")); got != "" {
			t.Fatalf("{s}:lost = %q after the proxy let go; want never written", got)
		}
	})
}

// TestGuardedWriteChecksTheFence_AStaleFencingTokenIsRefusedEvenWithTheLeaseKey:
// a fencing-token lock's guarded writes record its token in the fence
// record and may repeat (an equal token passes). A fence record above its
// token — what a later holder leaves after the counter went back (a
// failover to a lagging replica) — refuses its writes although its lease
// key still holds its owner token: nothing written, ErrOwnershipLost with
// LossFenceRefused, the lock Lost.
func caseGuardedWriteChecksTheFence_AStaleFencingTokenIsRefusedEvenWithTheLeaseKey(t *testing.T, tr Transport) {
	forEachCoordServer(t, tr, func(t *testing.T, s coordServer) {
		c := newCoordinator(t, tr, []string{s.addr}, s.password, s.prefix)
		ctx := ctxT(t)
		lock, err := c.Acquire(ctx, "{inv}:lease", "{inv}:fence", time.Minute)
		if err != nil {
			t.Fatal(err)
		}
		data := s.prefix + "{inv}:data"
		for _, v := range []string{"a", "b"} {
			if err := lock.Guard(ctx, lease.Command("HSET", data, "v", v)); err != nil {
				t.Fatalf("the holder's guarded write %s: %v", v, err)
			}
		}
		record := conn.GuardFenceKey(s.prefix + "{inv}:fence")
		if got := s.exec(t, "GET", record); got != "1" || lock.FencingToken() != 1 {
			t.Fatalf("fence record %q, token %d; want 1, 1", got, lock.FencingToken())
		}
		s.exec(t, "SET", record, "7") // a holder with token 7 wrote, on a history the counter lost
		err = lock.Guard(ctx, lease.Command("HSET", data, "v", "stale"))
		if !errors.Is(err, lease.ErrOwnershipLost) || lossOf(t, err).Reason != lease.LossFenceRefused ||
			!errors.Is(err, lease.ErrServerReply) || !strings.Contains(err.Error(), "STALEFENCE") {
			t.Fatalf("Guard with a stale token = %v; want ErrOwnershipLost, LossFenceRefused, the STALEFENCE reply", err)
		}
		if got := s.exec(t, "HGET", data, "v"); got != "b" {
			t.Fatalf("v = %q; want b (nothing written)", got)
		}
		if owner := s.exec(t, "GET", s.prefix+"{inv}:lease"); owner != string(lock.Token().Bytes()) {
			t.Fatalf("the lease key holds %q; want still the stale holder's token", owner)
		}
		if lock.State() != lease.StateLost || s.exec(t, "GET", record) != "7" {
			t.Fatalf("state %s, fence record %q; want Lost, 7", lock.State(), s.exec(t, "GET", record))
		}
		var asLease *lease.Lock = lock.Lock // the same handle through lease's API checks the fence too
		if err := asLease.Guard(ctx, lease.Command("HSET", data, "v", "x")); !errors.Is(err, lease.ErrNotHeld) {
			t.Fatalf("Guard through *lease.Lock after the loss = %v; want ErrNotHeld", err)
		}
	})
}

// TestGuardedWriteNeedsTheLease_AUserScriptGetsItsOwnKeysAndArgs: a
// GuardScript's body sees only the caller's keys and arguments, runs only
// for the holder, and survives a flushed script cache (EVALSHA, NOSCRIPT,
// EVAL, as every script of the library).
func caseGuardedWriteNeedsTheLease_AUserScriptGetsItsOwnKeysAndArgs(t *testing.T, tr Transport) {
	script := lease.NewGuardScript("redis.call('hset', KEYS[1], ARGV[1], ARGV[2])\n" +
		"redis.call('hset', KEYS[2], 'seen', #KEYS .. ' ' .. #ARGV)")
	forEachServer(t, tr, func(t *testing.T, tg *target) {
		locks := tg.locks(t)
		ctx := ctxT(t)
		lock, err := locks.Acquire(ctx, "{u}:lock", time.Minute)
		if err != nil {
			t.Fatal(err)
		}
		g := lease.Guarded{Script: script, Keys: []string{"{u}:h", "{u}:s"}, Args: []string{"f", "v"}}
		if err := lock.GuardWith(ctx, g); err != nil {
			t.Fatalf("the holder's script: %v", err)
		}
		tg.srv.Exec("SCRIPT", "FLUSH")
		tg.srv.ResetLog()
		g.Args = []string{"f2", "v2"}
		if err := lock.GuardWith(ctx, g); err != nil {
			t.Fatalf("after SCRIPT FLUSH: %v", err)
		}
		if got := lockCommands(tg.srv.Log()); strings.Join(got, " ") != "EVALSHA EVAL" {
			t.Fatalf("commands after SCRIPT FLUSH: %v; want EVALSHA then EVAL", got)
		}
		if a, b, seen := bare(tg.srv.Exec("HGET", "{u}:h", "f")), bare(tg.srv.Exec("HGET", "{u}:h", "f2")),
			bare(tg.srv.Exec("HGET", "{u}:s", "seen")); a != "v" || b != "v2" || seen != "2 2" {
			t.Fatalf("h.f=%q h.f2=%q, the script saw %q; want v, v2, 2 keys and 2 args", a, b, seen)
		}
		tg.srv.Exec("SET", "{u}:lock", "thief")
		g.Args = []string{"f", "stolen"}
		if err := lock.GuardWith(ctx, g); !errors.Is(err, lease.ErrOwnershipLost) {
			t.Fatalf("after the key changed hands: %v; want ErrOwnershipLost", err)
		}
		if got := bare(tg.srv.Exec("HGET", "{u}:h", "f")); got != "v" {
			t.Fatalf("h.f = %q; want v (nothing written)", got)
		}
	})
}

// TestGuardedWriteWaitsForReplicas_ACountBelowTheAskIsReported: with
// Replicas, the writes run and WAIT then counts the replicas that have
// them; a standalone server has none, so GuardWith reports a
// *WriteNotReplicatedError (0 of 1) while the writes stay.
func caseGuardedWriteWaitsForReplicas_ACountBelowTheAskIsReported(t *testing.T, tr Transport) {
	forEachServer(t, tr, func(t *testing.T, tg *target) {
		locks := tg.locks(t)
		ctx := ctxT(t)
		lock, err := locks.Acquire(ctx, "{r}:lock", time.Minute)
		if err != nil {
			t.Fatal(err)
		}
		err = lock.GuardWith(ctx, lease.Guarded{Writes: []lease.Write{lease.Command("SET", "{r}:v", "1")},
			Replicas: 1, ReplicaTimeout: 20 * time.Millisecond})
		var nr *lease.WriteNotReplicatedError
		if !errors.Is(err, lease.ErrWriteNotReplicated) || !errors.As(err, &nr) || nr.Acknowledged != 0 || nr.Required != 1 {
			t.Fatalf("GuardWith(Replicas 1) on a server without replicas = %v; want 0 of 1 acknowledged", err)
		}
		if got := bare(tg.srv.Exec("GET", "{r}:v")); got != "1" || lock.State() != lease.StateHeld {
			t.Fatalf("v = %q, state %s; want the write kept and the lock held", got, lock.State())
		}
	})
}

func init() {
	register(
		Case{"GuardedWriteSettlesAnUnknownOutcome_TheWriteIDRecordTellsRanFromNotRun", caseGuardedWriteSettlesAnUnknownOutcome_TheWriteIDRecordTellsRanFromNotRun},
		Case{"GuardedWriteChecksTheFence_AStaleFencingTokenIsRefusedEvenWithTheLeaseKey", caseGuardedWriteChecksTheFence_AStaleFencingTokenIsRefusedEvenWithTheLeaseKey},
		Case{"GuardedWriteNeedsTheLease_AUserScriptGetsItsOwnKeysAndArgs", caseGuardedWriteNeedsTheLease_AUserScriptGetsItsOwnKeysAndArgs},
		Case{"GuardedWriteWaitsForReplicas_ACountBelowTheAskIsReported", caseGuardedWriteWaitsForReplicas_ACountBelowTheAskIsReported},
		Case{"GuardedWriteWaitsForReplicas_AReplicaAcknowledgesOnARealCluster", caseGuardedWriteWaitsForReplicas_AReplicaAcknowledgesOnARealCluster},
	)
}

// TestGuardedWriteWaitsForReplicas_AReplicaAcknowledgesOnARealCluster: on
// the real 3+3 cluster, guarded writes to keys on every primary, each with
// Replicas 1, are acknowledged by the primary's replica (WAIT after the
// record's re-write on a dedicated connection to the key's primary), and
// another client reads the writes from the cluster.
func caseGuardedWriteWaitsForReplicas_AReplicaAcknowledgesOnARealCluster(t *testing.T, tr Transport) {
	addrs, password := realCluster70(t)
	realserver.Lock(t, strings.Join(addrs, ","))
	prefix := fmt.Sprintf("guardrepl:%d:", time.Now().UnixNano())
	locks := newLocks(t, tr, clientOf(addrs, "", password, true)).WithKeyPrefix(prefix)
	observer := newClient(t, addrs, "", password)
	ctx := ctxT(t)
	for i := range 9 { // nine hash tags land on every primary of three with overwhelming likelihood
		tag := fmt.Sprintf("{job-%d}", i)
		lock, err := locks.Acquire(ctx, tag+":lock", 30*time.Second)
		if err != nil {
			t.Fatal(err)
		}
		data := prefix + tag + ":state"
		err = lock.GuardWith(ctx, lease.Guarded{Writes: []lease.Write{lease.Command("HSET", data, "step", "1")},
			Replicas: 1, ReplicaTimeout: 2 * time.Second})
		if err != nil {
			t.Fatalf("GuardWith(Replicas 1) on %s = %v; want the replica's acknowledgement", tag, err)
		}
		if got, err := observer.Do(ctx, observer.B().Hget().Key(data).Field("step").Build()).ToString(); err != nil || got != "1" {
			t.Fatalf("HGET %s step = %q, %v; want 1", data, got, err)
		}
		if _, err := lock.Release(ctx); err != nil {
			t.Fatal(err)
		}
		observer.Do(ctx, observer.B().Del().Key(data).Build())
	}
}
