package lease

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/respire-go/respire/sim"
)

// primName returns a semaphore or lock name unique to the test (a real
// server is shared by the tests that run on it).
func primName(t *testing.T, what string) string {
	return strings.NewReplacer("/", "-", "{", "(", "}", ")").Replace(t.Name()) + "-" + what
}

// Goal: a semaphore hands out at most its limit of permits, each a held
// *Lock: a full semaphore is a refusal (not an error; Acquire's
// ErrNotAcquired), Holders counts the live permits, a released permit goes
// to the next caller, and Close gives a permit back.
func TestSemaphoreNeverOverLimit_PermitsAreHeldLocks(t *testing.T) {
	forEachServer(t, func(t *testing.T, tg *target) {
		locks := tg.locks(t)
		ctx := ctxT(t)
		sem := locks.Semaphore(primName(t, "pool"), 2)
		a, err := sem.Acquire(ctx, 10*time.Second)
		if err != nil {
			t.Fatal(err)
		}
		b, err := sem.Acquire(ctx, 10*time.Second, WithKeepAlive())
		if err != nil {
			t.Fatal(err)
		}
		if a.State() != StateHeld || b.State() != StateHeld || a.Token() == b.Token() {
			t.Fatalf("permits %v %v (same token: %v); want two held locks", a.State(), b.State(), a.Token() == b.Token())
		}
		if got := a.Key(); got != "{"+sem.Name()+"}:sem" {
			t.Fatalf("a permit's Key = %q; want the holders key {name}:sem", got)
		}
		if att, err := sem.TryAcquire(ctx, 10*time.Second); err != nil || att.Acquired() {
			t.Fatalf("TryAcquire of a full semaphore = %v, %v; want not acquired, no error", att.Acquired(), err)
		}
		if _, err := sem.Acquire(ctx, 10*time.Second); !errors.Is(err, ErrNotAcquired) {
			t.Fatalf("Acquire of a full semaphore = %v; want ErrNotAcquired", err)
		}
		if n, err := sem.Holders(ctx); err != nil || n != 2 {
			t.Fatalf("Holders = %d, %v; want 2", n, err)
		}
		if held, err := a.VerifyStillHeld(ctx); err != nil || !held {
			t.Fatalf("VerifyStillHeld = %v, %v; want true", held, err)
		}
		if out, err := a.Release(ctx); err != nil || out != Released {
			t.Fatalf("Release = %v, %v; want Released", out, err)
		}
		if held, err := a.VerifyStillHeld(ctx); err != nil || held {
			t.Fatalf("VerifyStillHeld after the release = %v, %v; want false", held, err)
		}
		c, err := sem.Acquire(ctx, 10*time.Second)
		if err != nil {
			t.Fatalf("Acquire after a release: %v", err)
		}
		for _, l := range []*Lock{b, c} {
			if err := l.Close(); err != nil {
				t.Fatal(err)
			}
		}
		if n, err := sem.Holders(ctx); err != nil || n != 0 {
			t.Fatalf("Holders after Close = %d, %v; want 0", n, err)
		}
	})
}

// Goal: an acquisition with another limit than the live permits' is
// refused at once (no wait), typed (ErrLimitMismatch, *LimitMismatchError
// with both limits), and changes nothing; once the permits are gone the new
// limit applies.
func TestSemaphoreLimitIsStored_MismatchIsTypedAndChangesNothing(t *testing.T) {
	forEachServer(t, func(t *testing.T, tg *target) {
		locks := tg.locks(t)
		ctx := ctxT(t)
		name := primName(t, "limit")
		held, err := locks.Semaphore(name, 2).Acquire(ctx, 10*time.Second)
		if err != nil {
			t.Fatal(err)
		}
		other := locks.Semaphore(name, 3)
		start := time.Now()
		_, err = other.Acquire(ctx, 10*time.Second, WithWait(5*time.Second))
		var mismatch *LimitMismatchError
		if !errors.Is(err, ErrLimitMismatch) || !errors.As(err, &mismatch) || mismatch.Stored != "2" || mismatch.Requested != 3 {
			t.Fatalf("Acquire with limit 3 over a limit-2 permit = %v; want ErrLimitMismatch (stored 2, requested 3)", err)
		}
		if waited := time.Since(start); waited > 2*time.Second {
			t.Fatalf("the mismatch was returned after %v; want at once, not after the wait", waited)
		}
		if n, err := other.Holders(ctx); err != nil || n != 1 {
			t.Fatalf("Holders after the refusal = %d, %v; want 1 (nothing changed)", n, err)
		}
		if _, err := held.Release(ctx); err != nil {
			t.Fatal(err)
		}
		p, err := other.Acquire(ctx, 10*time.Second)
		if err != nil {
			t.Fatalf("limit 3 once the limit-2 permits are gone: %v", err)
		}
		_ = p.Close()
	})
}

// tooBigLimit is one more than the largest semaphore limit (a variable: a
// constant would not compile where int has 32 bits).
var tooBigLimit int64 = 1 << 31

// Goal: a bad name, limit, duration or option of a semaphore or a
// read/write lock is refused with its typed error before anything is sent.
func TestValidationBeforeSending_SemaphoreAndRWLock(t *testing.T) {
	srv, locks := managedSim(t, sim.Redis70)
	ctx := ctxT(t)
	srv.ResetLog()
	cases := []struct {
		name string
		call func() error
		want error
	}{
		{"empty semaphore name", func() error { _, err := locks.Semaphore("", 2).Acquire(ctx, time.Second); return err }, ErrEmptyKey},
		{"empty hash tag", func() error { _, err := locks.Semaphore("}x", 2).Acquire(ctx, time.Second); return err }, ErrInvalidName},
		{"limit 0", func() error { _, err := locks.Semaphore("s", 0).TryAcquire(ctx, time.Second); return err }, ErrInvalidLimit},
		{"limit 0 holders", func() error { _, err := locks.Semaphore("s", 0).Holders(ctx); return err }, ErrInvalidLimit},
		{"limit above 2147483647", func() error {
			_, err := locks.Semaphore("s", int(tooBigLimit)).TryAcquire(ctx, time.Second)
			return err
		}, ErrInvalidLimit},
		{"zero ttl", func() error { _, err := locks.Semaphore("s", 2).Acquire(ctx, 0); return err }, ErrInvalidTTL},
		{"replicas", func() error {
			_, err := locks.Semaphore("s", 2).Acquire(ctx, time.Second, WithReplicas(1, time.Second))
			return err
		}, ErrInvalidOption},
		{"negative wait", func() error { _, err := locks.RWLock("l").RLock(ctx, time.Second, WithWait(-1)); return err }, ErrInvalidOption},
		{"empty lock name", func() error { _, err := locks.RWLock("").Lock(ctx, time.Second); return err }, ErrEmptyKey},
		{"prefix with empty tag", func() error {
			_, err := locks.WithKeyPrefix("a{}").RWLock("l").TryLock(ctx, time.Second)
			return err
		}, ErrInvalidName},
		{"readers of an empty name", func() error { _, err := locks.RWLock("").Readers(ctx); return err }, ErrEmptyKey},
	}
	for _, c := range cases {
		var opErr *OpError
		if err := c.call(); !errors.Is(err, c.want) || !errors.As(err, &opErr) {
			t.Errorf("%s: %v; want an *OpError matching %v", c.name, err, c.want)
		}
	}
	if log := srv.Log(); len(log) != 0 {
		t.Fatalf("sent %q; want nothing", log[0].Args)
	}
}

// sleepCtx sleeps d or until ctx ends.
func sleepCtx(ctx context.Context, d time.Duration) {
	select {
	case <-time.After(d):
	case <-ctx.Done():
	}
}
