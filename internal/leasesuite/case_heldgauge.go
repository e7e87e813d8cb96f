package leasesuite

import (
	"testing"
	"time"

	"github.com/respire-go/respire/internal/faultproxy"
	"github.com/respire-go/respire/internal/leaseinternal"
	"github.com/respire-go/respire/lease"
)

// TestHeldGauge_ASetConfirmedBySettlingCountsOnce: a waiter's SET NX runs
// on the server, its reply is dropped and the connection reset; the wait
// settles it (fence, read) and holds the lock (EventAcquireConfirmed).
// respire.lock.held must read 1 while that lock is held and 0 after its
// release: never 0 while held, never -1 after (a sim node on real time and
// the real server, each behind a fault proxy).
func caseHeldGauge_ASetConfirmedBySettlingCountsOnce(t *testing.T, tr Transport) {
	forRedis84AndRealFaulty(t, tr, true, func(t *testing.T, f *faulty) {
		tel := newTelemetry(t)
		locks := f.locks(t, tel.options()...)
		ctx := ctxT(t)
		if n := tel.sum(t, "respire.lock.held"); n != 0 {
			t.Fatalf("respire.lock.held = %d before the acquisition; want 0", n)
		}
		session := f.connOf(t, leaseinternal.Driver(locks).StandaloneSession())
		session.BlackHole(faultproxy.ToClient) // the server runs the SET; its reply vanishes
		result := acquireAsync(ctx, locks, "k", time.Minute, lease.WithWait(5*time.Second))
		waitEntry(t, f.srv, isCommand("SET", "k"))
		session.Reset()
		got := <-result
		if got.err != nil {
			t.Fatalf("Acquire after a lost SET reply = %v; want the wait to settle it and acquire", got.err)
		}
		if n := tel.sum(t, "respire.lock.held"); n != 1 {
			t.Errorf("respire.lock.held = %d while the settled lock is held; want 1", n)
		}
		if out, err := got.lock.Release(ctx); out != lease.Released || err != nil {
			t.Fatalf("Release = %v, %v; want Released", out, err)
		}
		if n := tel.sum(t, "respire.lock.held"); n != 0 {
			t.Errorf("respire.lock.held = %d after the release; want 0", n)
		}
	})
}

func init() {
	register(Case{"HeldGauge_ASetConfirmedBySettlingCountsOnce", caseHeldGauge_ASetConfirmedBySettlingCountsOnce})
}
