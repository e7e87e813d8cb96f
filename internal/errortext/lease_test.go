package errortext

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/respire-go/respire/lease"
	"github.com/respire-go/respire/leasetest"
)

// errOf returns the error of a call that also returns a value.
func errOf[T any](_ T, err error) error { return err }

// ended waits, at most 10 s, for ctx to end and returns its cause.
func ended(t *testing.T, ctx context.Context) error {
	t.Helper()
	select {
	case <-ctx.Done():
		return context.Cause(ctx)
	case <-time.After(10 * time.Second):
		t.Fatal("the context did not end within 10 s")
		return nil
	}
}

// held acquires key on locks for a minute, closed at the end of the test.
func held(t *testing.T, locks *lease.Locks, key string, opts ...lease.AcquireOption) *lease.Lock {
	t.Helper()
	lock, err := locks.Acquire(t.Context(), key, time.Minute, opts...)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = lock.Close() })
	return lock
}

// leaseMessages: bad input, contention and a handle's state, from real
// calls.
func leaseMessages(t *testing.T) []message {
	srv := leasetest.Start(t)
	locks := srv.Locks()
	ctx := t.Context()
	taken := held(t, locks, "taken", lease.WithKeepAlive())
	released := held(t, locks, "released")
	if _, err := released.Release(ctx); err != nil {
		t.Fatal(err)
	}
	waitCtx, cancel := context.WithTimeout(ctx, 20*time.Millisecond)
	defer cancel()
	sem := locks.Semaphore("workers", 2)
	permit, err := sem.Acquire(ctx, time.Minute)
	if err != nil {
		t.Fatal(err)
	}
	defer permit.Close()
	noWork := (func(context.Context) error)(nil)
	return []message{
		{name: "lease.New(nil)", err: errOf(lease.New(nil)), is: []error{lease.ErrNilClient}},
		{name: `Acquire("", 1m)`, err: errOf(locks.Acquire(ctx, "", time.Minute)), is: []error{lease.ErrEmptyKey}},
		{name: `Acquire("k", 0)`, err: errOf(locks.Acquire(ctx, "k", 0)), is: []error{lease.ErrInvalidTTL}},
		{name: `Acquire("k", 1ms, WithKeepAlive())`, err: errOf(locks.Acquire(ctx, "k", time.Millisecond, lease.WithKeepAlive())),
			is: []error{lease.ErrInvalidTTL}},
		{name: `Acquire("k", 1m, WithWait(-1s))`, err: errOf(locks.Acquire(ctx, "k", time.Minute, lease.WithWait(-time.Second))),
			is: []error{lease.ErrInvalidOption}},
		{name: `Acquire("k", 1m, WithOwner("a\nb"))`, err: errOf(locks.Acquire(ctx, "k", time.Minute, lease.WithOwner("a\nb"))),
			is: []error{lease.ErrInvalidOption}},
		{name: `Do("k", 1m, nil)`, err: locks.Do(ctx, "k", time.Minute, noWork), is: []error{lease.ErrInvalidOption}},
		{name: `TokenFromString("\xff")`, err: errOf(lease.TokenFromString("\xff")), is: []error{lease.ErrInvalidToken}},
		{name: `Semaphore("workers", 0).Acquire`, err: errOf(locks.Semaphore("workers", 0).Acquire(ctx, time.Minute)),
			is: []error{lease.ErrInvalidLimit}},
		{name: `Semaphore("}x", 2).Acquire`, err: errOf(locks.Semaphore("}x", 2).Acquire(ctx, time.Minute)),
			is: []error{lease.ErrInvalidName}},
		{name: `Acquire of a held key`, err: errOf(locks.Acquire(ctx, "taken", time.Minute)), is: []error{lease.ErrNotAcquired}},
		{name: `Acquire of a held key, WithWait(10ms)`, err: errOf(locks.Acquire(ctx, "taken", time.Minute, lease.WithWait(10*time.Millisecond))),
			is: []error{lease.ErrNotAcquired}},
		{name: `Acquire of a held key, WithWaitUntilDone, ctx deadline`,
			err: errOf(locks.Acquire(waitCtx, "taken", time.Minute, lease.WithWaitUntilDone())), is: []error{context.DeadlineExceeded}},
		{name: `Semaphore("workers", 3).Acquire while 2 hold it`, err: errOf(locks.Semaphore("workers", 3).Acquire(ctx, time.Minute)),
			is: []error{lease.ErrLimitMismatch}, as: []any{new(*lease.LimitMismatchError)}},
		{name: `Lock.KeepAlive, a second one`, err: errOf(taken.KeepAlive(ctx)), is: []error{lease.ErrKeepAliveActive}},
		{name: `Lock.KeepAlive of a released lock`, err: errOf(released.KeepAlive(ctx)), is: []error{lease.ErrNotHeld}},
		{name: `Lock.ResetExpiry(0)`, err: errOf(taken.ResetExpiry(ctx, 0)), is: []error{lease.ErrInvalidTTL}},
		{name: `Locks.Release("k", empty token)`, err: errOf(locks.Release(ctx, "k", lease.Token{})), is: []error{lease.ErrEmptyToken}},
		closedMessage(t, srv),
	}
}

// closedMessage: a call on a closed Locks.
func closedMessage(t *testing.T, srv *leasetest.Server) message {
	locks := srv.Locks()
	locks.Close()
	return message{name: "Acquire on a closed Locks", err: errOf(locks.Acquire(t.Context(), "k", time.Minute)),
		is: []error{lease.ErrClosed, lease.ErrNotSubmitted}}
}

// endMessages: why a lock's context ended (context.Cause), from real
// locks.
func endMessages(t *testing.T) []message {
	srv := leasetest.Start(t)
	locks := srv.Locks()
	ctx := t.Context()
	released := held(t, locks, "end:released")
	if _, err := released.Release(ctx); err != nil {
		t.Fatal(err)
	}
	expiring, err := locks.Acquire(ctx, "end:expired", 50*time.Millisecond)
	if err != nil {
		t.Fatal(err)
	}
	stolen := held(t, locks, "end:stolen", lease.WithKeepAlive())
	srv.Steal("end:stolen")
	refused := held(t, srv.Locks(lease.WithoutPush()), "end:refused")
	srv.Steal("end:refused")
	if _, err := refused.ResetExpiry(ctx, time.Minute); err != nil {
		t.Fatal(err)
	}
	stopped := held(t, locks, "end:stopped")
	ka, err := stopped.KeepAlive(ctx)
	if err != nil {
		t.Fatal(err)
	}
	ka.Stop()
	return []message{
		{name: "Lock.Context() after Release", err: ended(t, released.Context()), is: []error{lease.ErrReleased}},
		{name: "Lock.Context(), the lease ran out (no keep-alive)", err: ended(t, expiring.Context()), is: []error{lease.ErrExpired}},
		{name: "Lock.Context(), another owner took the key (keep-alive, push)", err: ended(t, stolen.Context()),
			is: []error{lease.ErrOwnershipLost}, as: []any{new(*lease.LossError)}},
		{name: "Lock.Context(), another owner took the key (a refused renewal)", err: ended(t, refused.Context()),
			is: []error{lease.ErrOwnershipLost}, as: []any{new(*lease.LossError)}},
		{name: "KeepAlive.Context() after Stop", err: ended(t, ka.Context()), is: []error{lease.ErrKeepAliveStopped}},
		pausedMessage(t),
	}
}

// pausedMessage: a keep-alive holder whose renewal gets no answer before
// its lease ends (the server stalled) loses the lock at its deadline.
func pausedMessage(t *testing.T) message {
	srv := leasetest.Start(t)
	lock, err := srv.Locks().Acquire(t.Context(), "end:paused", 300*time.Millisecond, lease.WithKeepAlive())
	if err != nil {
		t.Fatal(err)
	}
	defer lock.Close()
	srv.Pause()
	cause := ended(t, lock.Context())
	srv.Resume()
	return message{name: "Lock.Context(), the server stalled past the lease (keep-alive)", err: cause,
		is: []error{lease.ErrOwnershipLost}, as: []any{new(*lease.LossError)}}
}

// doMessages: Do's outcomes when the lock was lost while the work ran.
func doMessages(t *testing.T) []message {
	srv := leasetest.Start(t)
	locks := srv.Locks()
	ctx := t.Context()
	lostWork := func(key string, returns func(ctx context.Context) error) error {
		return locks.Do(ctx, key, time.Minute, func(ctx context.Context) error {
			srv.Steal(key)
			<-ctx.Done()
			return returns(ctx)
		})
	}
	failed := errors.New("report: disk full")
	return []message{
		{name: "Do, the key taken while the work ran; the work returns context.Cause(ctx)",
			err: lostWork("do:1", func(ctx context.Context) error { return context.Cause(ctx) }),
			is:  []error{lease.ErrLostDuringWork, lease.ErrOwnershipLost}, as: []any{new(*lease.WorkError), new(*lease.LossError)}},
		{name: "Do, the key taken while the work ran; the work returns ctx.Err()",
			err: lostWork("do:2", func(ctx context.Context) error { return ctx.Err() }),
			is:  []error{lease.ErrLostDuringWork, lease.ErrOwnershipLost, context.Canceled}},
		{name: "Do, the key taken while the work ran; the work returns its own error",
			err: lostWork("do:3", func(context.Context) error { return failed }),
			is:  []error{lease.ErrLostDuringWork, lease.ErrOwnershipLost, failed}},
		{name: "Do, the key held by another owner", err: locks.Do(ctx, "do:1", time.Minute, func(context.Context) error { return nil }),
			is: []error{lease.ErrNotAcquired}},
	}
}
