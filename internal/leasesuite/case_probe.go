package leasesuite

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/respire-go/respire/internal/faultproxy"
	"github.com/respire-go/respire/internal/realserver"
	"github.com/respire-go/respire/lease"
)

// probedOp is a call that probes its session's fencing permission (CLIENT
// KILL ID <own id> SKIPME yes) before it sends its command: on a session
// that never probed, the probe is the first thing it writes.
type probedOp struct {
	name string
	// keepAlive: the lock is taken for this op with a keep-alive (the
	// acquisition probes; nothing probes again on that session).
	keepAlive bool
	// call makes the call on lock (nil for an acquisition, which takes key
	// itself) and returns its error; it fails t on an answer that is not
	// "not sent" (an outcome, a true, a lock).
	call func(t *testing.T, ctx context.Context, locks *lease.Locks, lock *lease.Lock, key string) error
	// ran reports whether the op's command reached the server.
	ran func(f *faulty, lock *lease.Lock, key string) bool
	// retry makes the call again, and fails t unless it succeeds now.
	retry func(t *testing.T, ctx context.Context, locks *lease.Locks, lock *lease.Lock, key string)
}

// probedOps are the calls that probe: Release, ResetExpiry, KeepAlive and an
// acquisition with a keep-alive.
var probedOps = []probedOp{
	{
		name: "Release",
		call: func(t *testing.T, ctx context.Context, _ *lease.Locks, lock *lease.Lock, _ string) error {
			out, err := lock.Release(ctx)
			if out != 0 {
				t.Errorf("Release = %v, %v; want no outcome (the delete was not sent)", out, err)
			}
			return err
		},
		ran: func(f *faulty, lock *lease.Lock, _ string) bool { return deletesOf(f.target, wireOf(lock.Token())) > 0 },
		retry: func(t *testing.T, ctx context.Context, _ *lease.Locks, lock *lease.Lock, _ string) {
			if out, err := lock.Release(ctx); out != lease.Released || err != nil {
				t.Fatalf("Release again = %v, %v; want Released", out, err)
			}
		},
	},
	{
		name: "ResetExpiry",
		call: func(t *testing.T, ctx context.Context, _ *lease.Locks, lock *lease.Lock, _ string) error {
			ok, err := lock.ResetExpiry(ctx, 2*time.Minute)
			if ok {
				t.Errorf("ResetExpiry = true, %v; want false (the renewal was not sent)", err)
			}
			return err
		},
		ran: func(f *faulty, _ *lease.Lock, key string) bool {
			return pttlOf(f.target, key) > time.Minute.Milliseconds()
		},
		retry: func(t *testing.T, ctx context.Context, _ *lease.Locks, lock *lease.Lock, key string) {
			if ok, err := lock.ResetExpiry(ctx, 2*time.Minute); !ok || err != nil {
				t.Fatalf("ResetExpiry again = %v, %v; want true", ok, err)
			}
		},
	},
	{
		name: "KeepAlive",
		call: func(t *testing.T, ctx context.Context, _ *lease.Locks, lock *lease.Lock, _ string) error {
			k, err := lock.KeepAlive(ctx)
			if k != nil {
				t.Errorf("KeepAlive = a keep-alive, %v; want none (its permission check failed)", err)
				k.Stop()
			}
			return err
		},
		ran: func(*faulty, *lease.Lock, string) bool { return false },
		retry: func(t *testing.T, ctx context.Context, _ *lease.Locks, lock *lease.Lock, _ string) {
			k, err := lock.KeepAlive(ctx)
			if err != nil {
				t.Fatalf("KeepAlive again = %v; want it started", err)
			}
			k.Stop()
		},
	},
	{
		name:      "AcquireWithKeepAlive",
		keepAlive: true,
		call: func(t *testing.T, ctx context.Context, locks *lease.Locks, _ *lease.Lock, key string) error {
			lock, err := locks.Acquire(ctx, key, time.Minute, lease.WithKeepAlive())
			if lock != nil {
				t.Errorf("Acquire = a lock, %v; want none (its permission check failed before the SET)", err)
				_ = lock.Close()
			}
			return err
		},
		ran: func(f *faulty, _ *lease.Lock, key string) bool {
			return countArgs(f.srv.Log(), "SET", key, "NX") > 0
		},
		retry: func(t *testing.T, ctx context.Context, locks *lease.Locks, _ *lease.Lock, key string) {
			lock, err := locks.Acquire(ctx, key, time.Minute, lease.WithKeepAlive())
			if err != nil {
				t.Fatalf("Acquire again = %v; want the lock", err)
			}
			_ = lock.Close()
		},
	},
}

// probeFault is how a probe fails: its socket reset, closed by the peer, or
// the caller's ctx ending while the probe waits.
type probeFault struct {
	name   string
	inject func(c *faultproxy.Conn) // nil: the caller's ctx ends
}

var probeFaults = []probeFault{
	{"connection-reset", (*faultproxy.Conn).Reset},
	{"eof", (*faultproxy.Conn).Close},
	{"caller-ctx-ends", nil},
}

// pttlOf is the key's PTTL in ms on the server (-2: no key).
func pttlOf(tg *target, key string) int64 {
	var ms int64
	if _, err := fmtSscanInt(tg.srv.Exec("PTTL", key), &ms); err != nil {
		return -3
	}
	return ms
}

// TestFailedProbeIsNotSent_TheLockStaysHeldAndARetrySucceeds: the first
// command of a session is its permission probe; each call that probes
// (Release, ResetExpiry, KeepAlive, an acquisition with a keep-alive) has
// its probe held in a fault proxy, then the probe fails: its connection
// reset, closed (EOF), or the caller's ctx ends. The call's command was
// never sent, and the call must say so: no outcome, no true, no lock, an
// error that matches ErrNotSubmitted (and the caller's ctx's cause as is,
// DeadlineExceeded, when it ended) and never ErrOutcomeUnknown; the lock
// is still held, its context live, and the same call made again succeeds
// (a sim node on real time and the real server).
func caseFailedProbeIsNotSent_TheLockStaysHeldAndARetrySucceeds(t *testing.T, tr Transport) {
	forRedis84AndRealFaulty(t, tr, true, func(t *testing.T, f *faulty) {
		for _, op := range probedOps {
			for _, fault := range probeFaults {
				t.Run(op.name+"/"+fault.name, func(t *testing.T) {
					failedProbe(t, f, op, fault)
				})
			}
		}
	})
}

// failedProbe runs one op whose probe fails by fault (see
// caseFailedProbeIsNotSent_TheLockStaysHeldAndARetrySucceeds).
func failedProbe(t *testing.T, f *faulty, op probedOp, fault probeFault) {
	ctx := ctxT(t)
	key := "probe:" + op.name + ":" + fault.name
	locks := newLocks(t, f.tr, clientOf([]string{f.proxy.Addr()}, "", f.password, false),
		lease.WithIdleCheck(time.Hour)) // no liveness PING ahead of the probe
	held := key
	if op.keepAlive {
		held = "probe:session" // the op takes key itself
	}
	lock, err := locks.Acquire(ctx, held, time.Minute) // no keep-alive: the session has not probed
	if err != nil {
		t.Fatal(err)
	}
	if op.keepAlive {
		defer lock.Close()
	}
	f.srv.ResetLog()
	session := f.sessionConn(t, lock)
	session.Stall(faultproxy.ToServer)
	defer session.Unstall(faultproxy.ToServer)
	callCtx, cancel := ctx, context.CancelFunc(func() {})
	if fault.inject == nil {
		callCtx, cancel = context.WithTimeout(ctx, 300*time.Millisecond)
	}
	defer cancel()
	done := make(chan error, 1)
	go func() { done <- op.call(t, callCtx, locks, lock, key) }()
	if err := session.WaitBuffered(ctx, faultproxy.ToServer, 1); err != nil {
		t.Fatal(err) // the probe, held in the proxy
	}
	if fault.inject != nil {
		fault.inject(session)
	}
	err = <-done
	session.Unstall(faultproxy.ToServer)
	checkNotSent(t, op.name, fault.inject == nil, err)
	if op.ran(f, lock, key) {
		t.Fatalf("%s's command reached the server after its probe failed", op.name)
	}
	if !op.keepAlive {
		if st := lock.State(); st != lease.StateHeld {
			t.Fatalf("state %v after %s; want Held (nothing was sent)", st, op.name)
		}
		if err := lock.Context().Err(); err != nil {
			t.Fatalf("the lock's context ended: %v; want it live", context.Cause(lock.Context()))
		}
	}
	op.retry(t, ctx, locks, lock, key)
}

// checkNotSent fails t unless err says that the call's command was not
// sent: an error matching ErrNotSubmitted, and ctx's cause
// (DeadlineExceeded) as is when the caller's ctx ended; never
// ErrOutcomeUnknown.
func checkNotSent(t *testing.T, call string, ctxEnded bool, err error) {
	t.Helper()
	switch {
	case err == nil:
		t.Fatalf("%s after a failed probe = nil; want an error", call)
	case errors.Is(err, lease.ErrOutcomeUnknown):
		t.Fatalf("%s after a failed probe = %v; want not sent, never outcome unknown", call, err)
	case ctxEnded && (!errors.Is(err, context.DeadlineExceeded) || errors.Is(err, context.Canceled)):
		t.Fatalf("%s whose ctx's deadline passed = %v; want ctx's cause, DeadlineExceeded, as is", call, err)
	case !errors.Is(err, lease.ErrNotSubmitted):
		t.Fatalf("%s after a failed probe = %v; want an error matching ErrNotSubmitted", call, err)
	}
	assertOneLeasePrefix(t, call, err)
}

// TestFailedProbeIsNotSent_OnAPausedServer: a private redis-server is
// paused (CLIENT PAUSE 1000 ALL) when a lock's first Release or ResetExpiry
// on its session probes; the probe waits until the caller's 300 ms ctx
// ends, or until the Locks' 300 ms command timeout. The command was not
// sent: an error matching ErrNotSubmitted (and ctx's cause,
// DeadlineExceeded, when it ended), never ErrOutcomeUnknown; the key is as
// it was, the lock still held, and once the pause is over the same call
// succeeds.
func caseFailedProbeIsNotSent_OnAPausedServer(t *testing.T, tr Transport) {
	r := realserver.StartPrivate(t)
	for _, op := range probedOps[:2] { // Release, ResetExpiry
		for _, commandTimeout := range []bool{false, true} {
			name := op.name + "/caller-ctx-ends"
			opts := []lease.Option{lease.WithIdleCheck(time.Hour)}
			if commandTimeout {
				name = op.name + "/command-timeout"
				opts = append(opts, lease.WithCommandTimeout(300*time.Millisecond))
			}
			t.Run(name, func(t *testing.T) {
				ctx := ctxT(t)
				locks := newLocks(t, tr, clientOf([]string{r.Addr}, "", r.Password, false), opts...)
				key := "probe:paused:" + name
				lock, err := locks.Acquire(ctx, key, time.Minute) // no keep-alive: the session has not probed
				if err != nil {
					t.Fatal(err)
				}
				r.MustExec(t, "CLIENT", "PAUSE", "1000", "ALL")
				callCtx, cancel := ctx, context.CancelFunc(func() {})
				if !commandTimeout {
					callCtx, cancel = context.WithTimeout(ctx, 300*time.Millisecond)
				}
				defer cancel()
				err = op.call(t, callCtx, locks, lock, key)
				pttl := r.MustExec(t, "PTTL", key) // answered once the pause is over
				checkNotSent(t, op.name, !commandTimeout, err)
				var ms int64
				if _, err := fmtSscanInt(pttl, &ms); err != nil || ms <= 0 || ms > time.Minute.Milliseconds() {
					t.Fatalf("PTTL %q after %s; want the key as it was (its command never ran)", pttl, op.name)
				}
				if st := lock.State(); st != lease.StateHeld {
					t.Fatalf("state %v after %s; want Held (nothing was sent)", st, op.name)
				}
				op.retry(t, ctx, locks, lock, key)
			})
		}
	}
}

func init() {
	register(
		Case{"FailedProbeIsNotSent_TheLockStaysHeldAndARetrySucceeds", caseFailedProbeIsNotSent_TheLockStaysHeldAndARetrySucceeds},
		Case{"FailedProbeIsNotSent_OnAPausedServer", caseFailedProbeIsNotSent_OnAPausedServer},
	)
}
