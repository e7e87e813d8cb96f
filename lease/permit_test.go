package lease

import (
	"context"
	"errors"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/respire-go/respire/actor"
	"github.com/respire-go/respire/conn"
	"github.com/respire-go/respire/internal/faultproxy"
	"github.com/respire-go/respire/sim"
)

// isScript matches EVALSHA sha / EVAL script (of sha) whose first key is key
// and, when token is not empty, whose first argument is token.
func isScript(sha, script, key, token string) func(sim.Entry) bool {
	return func(e sim.Entry) bool {
		if len(e.Args) < 4 || e.Args[3] != key {
			return false
		}
		n := len(e.Args)
		hasToken := token == "" || slices.Contains(e.Args[4:n], token)
		return hasToken && (strings.EqualFold(e.Args[0], "EVALSHA") && e.Args[1] == sha ||
			strings.EqualFold(e.Args[0], "EVAL") && e.Args[1] == script)
	}
}

// loadPrimitiveScripts loads the semaphore and read/write-lock scripts, so
// that each EVALSHA finds its script (one log entry per call, and a reply
// held back is the reply of the script that ran, not a NOSCRIPT).
func loadPrimitiveScripts(tg *target) {
	for _, s := range []string{conn.SemaphoreAcquireScript, conn.HolderRenewScript, conn.HolderReleaseScript,
		conn.HolderLeaseScript, conn.HolderCountScript, conn.ReadAcquireScript, conn.WriteAcquireScript} {
		tg.srv.Exec("SCRIPT", "LOAD", s)
	}
	loadScripts(tg)
}

// Goal: a permit's and a reader's keep-alive renewals are sent with a
// mutex's, on the node's one session (its batches), each renewing its own
// lease; the holders stay held.
func TestPermitIsALeaseLock_KeepAliveRenewsWithTheMutexesOnOneSession(t *testing.T) {
	srv, locks := managedSim(t, sim.Redis84)
	clock := &actor.ManualClock{}
	useClock(locks, clock)
	ctx := ctxT(t)
	sem := locks.Semaphore("ka", 3)
	permit, err := sem.Acquire(ctx, 10*time.Second, WithKeepAlive())
	if err != nil {
		t.Fatal(err)
	}
	defer permit.Close()
	reader, err := locks.RWLock("ka").RLock(ctx, 10*time.Second, WithKeepAlive())
	if err != nil {
		t.Fatal(err)
	}
	defer reader.Close()
	mutex, err := locks.Acquire(ctx, "ka-mutex", 10*time.Second, WithKeepAlive())
	if err != nil {
		t.Fatal(err)
	}
	defer mutex.Close()
	srv.ResetLog()
	clock.Advance(estimateOf(10*time.Second) - 5*time.Second)
	renewals := []func(sim.Entry) bool{
		isScript(conn.HolderRenewScriptSHA, conn.HolderRenewScript, "{ka}:sem", permit.Token().wire()),
		isScript(conn.HolderRenewScriptSHA, conn.HolderRenewScript, "{ka}:r", reader.Token().wire()),
		isRenewal("ka-mutex"),
	}
	var clients []int64
	for _, match := range renewals {
		clients = append(clients, waitLog(t, srv, match).ClientID)
	}
	if clients[0] != clients[1] || clients[1] != clients[2] {
		t.Fatalf("renewals on clients %v; want the node's one session", clients)
	}
	for _, l := range []*Lock{permit, reader, mutex} {
		eventually(t, "renewal confirmed", func() bool { return renewedFresh(l) })
		if l.State() != StateHeld {
			t.Fatalf("%s: %v after its renewal; want held", l.Key(), l.State())
		}
	}
	if n, err := sem.Holders(ctx); err != nil || n != 1 {
		t.Fatalf("Holders = %d, %v; want 1", n, err)
	}
}

// Goal: a permit's Context ends exactly when its lease estimate runs out
// (Err is set on the first look after the time passed, no timer needed);
// a permit whose member another client removed is lost at its next renewal
// with the cause LossRefused (without push) or at once, by push, with
// LossReadRefused.
func TestPermitIsALeaseLock_ContextEndsWithTheCause(t *testing.T) {
	t.Run("estimate", func(t *testing.T) {
		_, locks := managedSim(t, sim.Redis70, WithoutPush())
		clock := &frozenClock{now: time.Hour}
		useClock(locks, clock)
		permit, err := locks.Semaphore("ctx", 2).Acquire(ctxT(t), 2*time.Second)
		if err != nil {
			t.Fatal(err)
		}
		work := permit.Context()
		clock.set(time.Hour + 2*time.Second)
		if err := work.Err(); !errors.Is(err, context.Canceled) {
			t.Fatalf("Context().Err() past the permit's lease = %v; want Canceled at once", err)
		}
		if permit.State() == StateHeld {
			t.Fatal("a permit past its lease estimate is still held")
		}
	})
	t.Run("renewal-refused", func(t *testing.T) {
		srv, locks := managedSim(t, sim.Valkey90, WithoutPush())
		clock := &actor.ManualClock{}
		useClock(locks, clock)
		permit, err := locks.Semaphore("ctx", 2).Acquire(ctxT(t), 10*time.Second, WithKeepAlive())
		if err != nil {
			t.Fatal(err)
		}
		srv.Exec("ZREM", "{ctx}:sem", permit.Token().wire())
		clock.Advance(estimateOf(10*time.Second) - 5*time.Second)
		waitDone(t, permit.Context())
		var loss *LossError
		if cause := context.Cause(permit.Context()); !errors.As(cause, &loss) || loss.Reason != LossRefused {
			t.Fatalf("cause = %v; want a LossError with LossRefused", cause)
		}
	})
	t.Run("push", func(t *testing.T) {
		forEachServer(t, func(t *testing.T, tg *target) {
			locks := tg.locks(t)
			name := primName(t, "push")
			permit, err := locks.Semaphore(name, 2).Acquire(ctxT(t), 30*time.Second, WithKeepAlive())
			if err != nil {
				t.Fatal(err)
			}
			defer permit.Close()
			other, err := locks.Semaphore(name, 2).Acquire(ctxT(t), 30*time.Second, WithKeepAlive())
			if err != nil {
				t.Fatal(err)
			}
			defer other.Close()
			key := "{" + name + "}:sem"
			eventually(t, "the holders' key tracked", func() bool { return holderArmed(locks, key) })
			tg.srv.Exec("ZREM", key, permit.Token().wire())
			waitDone(t, permit.Context())
			var loss *LossError
			if cause := context.Cause(permit.Context()); !errors.As(cause, &loss) || loss.Reason != LossReadRefused {
				t.Fatalf("cause = %v; want a LossError with LossReadRefused", cause)
			}
			if other.State() != StateHeld || other.Context().Err() != nil {
				t.Fatalf("the other permit of the set: %v; want still held (its member is there)", other.State())
			}
		})
	})
}

// Goal: a waiter for a full semaphore, its retry interval a minute, takes
// the permit a release frees, woken by the holders' change; a reader
// waiting on a writer is woken by the writer's release.
func TestPushWakesWaiters_PermitAndReader(t *testing.T) {
	forEachServer(t, func(t *testing.T, tg *target) {
		ctx := ctxT(t)
		holderLocks, waiterLocks := tg.locks(t), tg.locks(t)
		name := primName(t, "wake")
		holder, err := holderLocks.Semaphore(name, 1).Acquire(ctx, 30*time.Second)
		if err != nil {
			t.Fatal(err)
		}
		got := make(chan acquired, 1)
		go func() {
			lock, err := waiterLocks.Semaphore(name, 1).Acquire(ctx, 30*time.Second, WithWaitUntilDone(), WithRetryEvery(time.Minute))
			got <- acquired{lock, err, time.Now()}
		}()
		eventually(t, "the permit's waiter parked", func() bool { return parkedWaiters(waiterLocks, "{"+name+"}:sem") == 1 })
		if _, err := holder.Release(ctx); err != nil {
			t.Fatal(err)
		}
		r := <-got
		if r.err != nil {
			t.Fatalf("the permit's waiter: %v", r.err)
		}
		_ = r.lock.Close()

		writer, err := holderLocks.RWLock(name).Lock(ctx, 30*time.Second)
		if err != nil {
			t.Fatal(err)
		}
		go func() {
			lock, err := waiterLocks.RWLock(name).RLock(ctx, 30*time.Second, WithWaitUntilDone(), WithRetryEvery(time.Minute))
			got <- acquired{lock, err, time.Now()}
		}()
		eventually(t, "the reader parked on the writer key", func() bool { return parkedWaiters(waiterLocks, "{"+name+"}:w") == 1 })
		if _, err := writer.Release(ctx); err != nil {
			t.Fatal(err)
		}
		if r := <-got; r.err != nil {
			t.Fatalf("the reader: %v", r.err)
		} else {
			_ = r.lock.Close()
		}
	})
}

// Goal: a waiting acquisition of a permit whose script ran but whose reply
// was lost is settled: the socket fenced, the permit read back (the lease
// read script) and held with that try's token; the script is never sent
// again for it.
func TestWaitRidesOutTransportErrors_APermitWhoseReplyWasLostIsSettled(t *testing.T) {
	forEachFaultyServer(t, func(t *testing.T, f *faulty) {
		loadPrimitiveScripts(f.target)
		locks := f.locks(t)
		ctx := ctxT(t)
		name := primName(t, "settle")
		key := "{" + name + "}:sem"
		session := f.connOf(t, locks.driver().StandaloneSession())
		before := kills(f.target)
		f.srv.ResetLog()
		session.BlackHole(faultproxy.ToClient)
		result := make(chan acquired, 1)
		go func() {
			lock, err := locks.Semaphore(name, 2).Acquire(ctx, time.Minute, WithWait(5*time.Second))
			result <- acquired{lock: lock, err: err}
		}()
		sent := waitEntry(t, f.srv, isScript(conn.SemaphoreAcquireScriptSHA, conn.SemaphoreAcquireScript, key, ""))
		session.Reset()
		got := <-result
		if got.err != nil {
			t.Fatalf("Acquire after a lost reply = %v; want it settled and held", got.err)
		}
		if token := got.lock.Token().wire(); token != sent.Args[4] {
			t.Fatal("the permit's token is not the one of the script that ran")
		}
		acquisitions := 0
		for _, e := range f.srv.Log() {
			if isScript(conn.SemaphoreAcquireScriptSHA, conn.SemaphoreAcquireScript, key, "")(e) {
				acquisitions++
			}
		}
		if acquisitions != 1 {
			t.Fatalf("%d acquisition scripts sent; want 1 (the uncertain one, settled)", acquisitions)
		}
		if kills(f.target) <= before {
			t.Fatal("the socket was not fenced before the permit was read back")
		}
		if out, err := got.lock.Release(ctx); out != Released || err != nil {
			t.Fatalf("Release = %v, %v", out, err)
		}
	})
}

// Goal: an acquisition given up after its script was sent (its ctx ended,
// no reply) returns no permit, and the permit the script took is deleted
// in the background; so is a writer's waiting marker, and a writer's hold.
func TestAbandonedAcquisitionIsCleanedUp_PermitAndWriter(t *testing.T) {
	forEachFaultyServer(t, func(t *testing.T, f *faulty) {
		loadPrimitiveScripts(f.target)
		locks := f.locks(t)
		name := primName(t, "abandon")
		session := f.connOf(t, locks.driver().StandaloneSession())
		reader, err := locks.RWLock(name).RLock(ctxT(t), time.Minute)
		if err != nil {
			t.Fatal(err)
		}
		for _, try := range []struct {
			what, key string
			acquire   func(ctx context.Context) error
		}{
			{"permit", "{" + name + "}:sem", func(ctx context.Context) error {
				_, err := locks.Semaphore(name, 2).TryAcquire(ctx, time.Minute)
				return err
			}},
			{"waiting writer", "{" + name + "}:w", func(ctx context.Context) error {
				_, err := locks.RWLock(name).TryLock(ctx, time.Minute)
				return err
			}},
		} {
			session.Stall(faultproxy.ToClient) // the server runs the script; its reply is held
			ctx, cancel := context.WithTimeout(context.Background(), 300*time.Millisecond)
			err := try.acquire(ctx)
			cancel()
			if err == nil {
				t.Fatalf("%s: an acquisition whose reply never came returned no error", try.what)
			}
			session.Unstall(faultproxy.ToClient)
			eventually(t, try.what+" cleaned up", func() bool {
				return f.srv.Exec("EXISTS", try.key) == ":0\r\n"
			})
		}
		if n, err := locks.RWLock(name).Readers(ctxT(t)); err != nil || n != 1 {
			t.Fatalf("Readers = %d, %v; want the reader still in", n, err)
		}
		_ = reader.Close()
	})
}

// Goal: a permit's release whose reply never comes (its ctx ends after the
// script was sent) ends the permit at once: its keep-alive is cancelled,
// the socket that carried the release is fenced after it, the caller hears
// the outcome is unknown with the fence pending, and a later Release says
// NotOwned.
func TestPermitIsALeaseLock_AnUncertainReleaseIsFenced(t *testing.T) {
	srv, locks := managedSim(t, sim.Valkey81)
	srv.Exec("SCRIPT", "LOAD", conn.HolderReleaseScript)
	ctx := ctxT(t)
	permit, err := locks.Semaphore("fence", 2).Acquire(ctx, time.Minute, WithKeepAlive())
	if err != nil {
		t.Fatal(err)
	}
	isRelease := func(args []string) bool {
		return len(args) > 1 && strings.EqualFold(args[0], "EVALSHA") && args[1] == conn.HolderReleaseScriptSHA
	}
	gate, fenceGate := make(chan struct{}), make(chan struct{})
	defer close(gate)
	srv.Inject(sim.Fault{Kind: sim.DelayReply, Gate: gate, Match: isRelease})
	srv.Inject(sim.Fault{Kind: sim.DelayReply, Gate: fenceGate, Match: func(args []string) bool { return isKill(sim.Entry{Args: args}) }})
	releaseCtx, cancel := context.WithCancel(ctx)
	released := make(chan error, 1)
	go func() { _, err := permit.Release(releaseCtx); released <- err }()
	del := waitLog(t, srv, func(e sim.Entry) bool { return isRelease(e.Args) })
	cancel()
	err = <-released
	close(fenceGate)
	if !errors.Is(err, conn.ErrOutcomeUnknown) || !errors.Is(err, ErrFencePending) {
		t.Fatalf("Release = %v; want outcome unknown, fence pending", err)
	}
	if cause := context.Cause(permit.Context()); !errors.Is(cause, ErrOwnershipLost) {
		t.Fatalf("Context's cause = %v; want ErrOwnershipLost", cause)
	}
	if kill := waitLog(t, srv, isKill); kill.Seq < del.Seq {
		t.Fatalf("the fence (seq %d) came before the release it fences (seq %d)", kill.Seq, del.Seq)
	}
	eventually(t, "lost once the fence answered", func() bool { return permit.State() == StateLost })
	if out, err := permit.Release(ctx); out != NotOwned || err != nil {
		t.Fatalf("a later Release = %v, %v; want NotOwned", out, err)
	}
}

// Goal: permits and holds count in the lock metrics as any lock: an
// acquisition, a contention, the held gauge, a release.
func TestAcquisitionMetrics_PermitsAndHoldsCountAsLocks(t *testing.T) {
	srv := startSim(t, sim.Config{Profile: sim.Redis84})
	tel := newTelemetry(t)
	locks := newLocks(t, newClient(t, []string{srv.Addr()}, "", simPassword, false), tel.options()...)
	ctx := ctxT(t)
	sem := locks.Semaphore("metrics", 1)
	permit, err := sem.Acquire(ctx, time.Minute)
	if err != nil {
		t.Fatal(err)
	}
	if att, err := sem.TryAcquire(ctx, time.Minute); err != nil || att.Acquired() {
		t.Fatalf("TryAcquire of a full semaphore = %v, %v", att.Acquired(), err)
	}
	reader, err := locks.RWLock("metrics").RLock(ctx, time.Minute)
	if err != nil {
		t.Fatal(err)
	}
	if n := tel.sum(t, "respire.lock.held"); n != 2 {
		t.Fatalf("respire.lock.held = %d; want 2 (a permit and a read hold)", n)
	}
	for _, l := range []*Lock{permit, reader} {
		if _, err := l.Release(ctx); err != nil {
			t.Fatal(err)
		}
	}
	if n := tel.sum(t, "respire.lock.acquisitions", str(attrResult, "acquired")); n != 2 {
		t.Fatalf("acquisitions acquired = %d; want 2", n)
	}
	if n := tel.sum(t, "respire.lock.acquisitions", str(attrResult, "contended")); n != 1 {
		t.Fatalf("acquisitions contended = %d; want 1", n)
	}
	if n := tel.sum(t, "respire.lock.releases", str(attrResult, "released")); n != 2 {
		t.Fatalf("releases released = %d; want 2", n)
	}
	if n := tel.sum(t, "respire.lock.held"); n != 0 {
		t.Fatalf("respire.lock.held after the releases = %d; want 0", n)
	}
}

// Goal: readers share: when the writer they wait on leaves, every waiting
// reader is woken and gets in (not one per change of the writer key, as
// waiters for a mutex are), their retry interval being a minute.
func TestPushWakesWaiters_AWritersReleaseWakesEveryReader(t *testing.T) {
	forEachServer(t, func(t *testing.T, tg *target) {
		ctx := ctxT(t)
		writerLocks, readerLocks := tg.locks(t), tg.locks(t)
		name := primName(t, "readers")
		writer, err := writerLocks.RWLock(name).Lock(ctx, 30*time.Second)
		if err != nil {
			t.Fatal(err)
		}
		const readers = 5
		got := make(chan acquired, readers)
		for range readers {
			go func() {
				lock, err := readerLocks.RWLock(name).RLock(ctx, 30*time.Second, WithWaitUntilDone(), WithRetryEvery(time.Minute))
				got <- acquired{lock, err, time.Now()}
			}()
		}
		eventually(t, "every reader parked on the writer key", func() bool {
			return parkedWaiters(readerLocks, "{"+name+"}:w") == readers
		})
		if _, err := writer.Release(ctx); err != nil {
			t.Fatal(err)
		}
		for range readers {
			r := <-got
			if r.err != nil {
				t.Fatalf("a waiting reader after the writer left: %v", r.err)
			}
			defer r.lock.Close()
		}
	})
}
