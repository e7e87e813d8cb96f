package actor

import (
	"context"
	"slices"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/respire-go/respire/sim"
	sm "github.com/respire-go/respire/statemachine"
)

// TestPushWakesOneWaiterPerRelease_NoWaiterIsStrandedWhenTheWokenOneLeaves:
// the waiter a change woke leaves with the baton, and the other waiter of
// the key is never left parked on an untracked or free key: when the woken
// one gave up (its ctx ended, or its try failed) on a free key, the key is
// read again and the other is woken; when it left with the key after a
// change during its try (its own SET NX), the other is not woken while the
// key is held, but is by the next change, which the read tracked. The
// hub's pieces are driven directly, in the order the races take.
func TestPushWakesOneWaiterPerRelease_NoWaiterIsStrandedWhenTheWokenOneLeaves(t *testing.T) {
	srv, d := testDriver(t, sim.Valkey90)
	h := d.push
	woken := func(w *pushWaiter) bool {
		select {
		case <-w.wake:
			return true
		case <-time.After(5 * time.Second): // bounds a failure only
			return false
		}
	}
	for _, acquired := range []bool{false, true} {
		key := "push:stranded:" + map[bool]string{false: "gaveup", true: "acquired"}[acquired]
		w1, w2 := &pushWaiter{wake: make(chan struct{}, 1)}, &pushWaiter{wake: make(chan struct{}, 1)}
		h.mu.Lock()
		e := h.entry(key)
		e.waiters = append(e.waiters, w1, w2)
		h.passBatonLocked(e) // a change: w1 tries
		if acquired {
			srv.Exec("SET", key, "w1", "PX", "60000")
			e.missed = true // and its SET NX's own change came back while it tried
		}
		h.mu.Unlock()
		<-w1.wake
		h.leave(key, w1, acquired)
		if !acquired {
			if !woken(w2) {
				t.Fatal("w1 gave up on a free key; w2 was not woken")
			}
			h.leave(key, w2, false)
			continue
		}
		for deadline := time.Now().Add(5 * time.Second); ; time.Sleep(time.Millisecond) { // the read again for w2 tracks the key
			h.mu.Lock()
			armed, arming := e.armed, e.arming
			h.mu.Unlock()
			if armed || !arming {
				break
			}
			if time.Now().After(deadline) {
				t.Fatal("the key was not read again for w2")
			}
		}
		select {
		case <-w2.wake:
			t.Fatal("w2 was woken while w1 holds the key")
		default:
		}
		srv.Exec("DEL", key) // w1's lease ends (as seen from the server)
		if !woken(w2) {
			t.Fatal("the key changed after w1 left with it; w2 was not woken")
		}
		h.leave(key, w2, false)
	}
}

// TestFairGrantsInTicketOrder_ALocalReleaseWakesTheLocalHeadAtOnce: the
// release of a fair holder, which grants the lock to the queue's head in
// its script, wakes the head waiting in the same Locks from the release's
// reply (not when the key's invalidation comes); the waiters behind it stay
// parked. The hub is driven directly, as the release's reply drives it.
func TestFairGrantsInTicketOrder_ALocalReleaseWakesTheLocalHeadAtOnce(t *testing.T) {
	_, d := testDriver(t, sim.Valkey90)
	h := d.push
	const key = "fair:local"
	head := &fairWaiter{wake: make(chan struct{}, 1), pos: 1}
	second := &fairWaiter{wake: make(chan struct{}, 1), pos: 2}
	h.mu.Lock()
	e := h.entry(key)
	e.fair = append(e.fair, second, head)
	h.mu.Unlock()
	holder := &Lock{wireKey: key}
	holder.setKind(KindMutex | kindFair)
	h.released(holder)
	select {
	case <-head.wake:
	default:
		t.Fatal("the local head was not woken by the fair holder's release")
	}
	select {
	case <-second.wake:
		t.Fatal("the waiter behind the head was woken")
	default:
	}
}

// TestPushWakesOneWaiterPerRelease_APushBeforeTheLocalReleasesReplyIsTriedWithoutARead:
// the invalidation of a key that a lock of the same Locks is releasing
// often comes before the release's reply (two sockets, two readers). The
// waiter it wakes sends SET NX at once — no tracked read first, as for a
// change nobody here explains (rule PushIgnoresOthersRenewals), and, for a
// keep-alive holder, no holders' read either — so the hand-off waits for
// neither that read nor the reply. The sim holds the release's reply until
// the waiter's try is handed to the session (it is sent behind that reply),
// so the push comes first every time; the commands between the release
// and the waiter's SET NX are counted on the server's log: none.
func TestPushWakesOneWaiterPerRelease_APushBeforeTheLocalReleasesReplyIsTriedWithoutARead(t *testing.T) {
	tries := &acquireSteps{sent: make(chan struct{}, 1)}
	srv, d := testDriver(t, sim.Valkey90, func(c *Config) { c.Observer = tries })
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second) // bounds a failure only
	defer cancel()
	// A first release learns which delete the server has (one command from then on).
	warmRelease(ctx, t, d, AcquireSpec{WireKey: "push:warm", TTL: time.Minute})
	for _, keepAlive := range []bool{false, true} {
		key := "push:first:" + map[bool]string{false: "plain", true: "kept"}[keepAlive]
		between := pushBeforeReply(ctx, t, srv, d, tries, key, keepAlive)
		if len(between) != 0 {
			t.Errorf("keep-alive %v: commands between the release and the waiter's SET NX: %q, want none", keepAlive, between)
		}
	}
}

// pushBeforeReply releases key, held by a lock of d, with a waiter of d
// parked on it, holding the release's reply until the waiter's try is
// handed to the session, and returns the commands the server received
// between the release and that try.
func pushBeforeReply(ctx context.Context, t *testing.T, srv *sim.Server, d *Driver, tries *acquireSteps, key string,
	keepAlive bool) (between []string) {
	t.Helper()
	holder, err := d.Acquire(ctx, AcquireSpec{WireKey: key, TTL: time.Minute, KeepAlive: keepAlive})
	if err != nil || holder == nil {
		t.Fatalf("holder: %v, %v", holder, err)
	}
	got := make(chan *Lock, 1)
	go func() {
		l, err := d.Acquire(ctx, AcquireSpec{WireKey: key, TTL: time.Minute, UntilDone: true, RetryEvery: time.Minute,
			RetryEverySet: true})
		if err != nil {
			t.Error(err)
		}
		got <- l
	}()
	for parked := false; !parked; time.Sleep(time.Millisecond) { // the waiter's tracked read answered
		d.push.mu.Lock()
		e := d.push.keys[key]
		parked = e != nil && e.armed && len(e.waiters) == 1
		d.push.mu.Unlock()
	}
	srv.ResetLog()
	gate := make(chan struct{})
	srv.Inject(sim.Fault{Kind: sim.DelayReply, Gate: gate, Times: 1,
		Match: func(args []string) bool { return slices.Contains(args, holder.Token()) }})
	tries.armed.Store(true) // the waiter's next try is the one the release's push wakes
	released := make(chan error, 1)
	go func() {
		_, err := holder.Request(ctx, sm.Input{Kind: sm.InputRelease})
		released <- err
	}()
	select {
	case <-tries.sent:
	case <-ctx.Done():
		t.Fatal("the waiter did not try while the release's reply was held")
	}
	tries.armed.Store(false)
	close(gate)
	if err := <-released; err != nil {
		t.Fatal(err)
	}
	waiter := <-got
	if waiter == nil {
		t.Fatal("the waiter did not acquire")
	}
	seen := false
	for _, e := range srv.Log() {
		switch {
		case slices.Contains(e.Args, holder.Token()):
			seen = true
		case seen && slices.Contains(e.Args, waiter.Token()):
			seen = false
		case seen:
			between = append(between, strings.Join(e.Args, " "))
		}
	}
	return between
}

// warmRelease acquires and releases a lock of spec, so that the commands
// a release sends are known to the server (a fallback, a script load) before
// a test counts them.
func warmRelease(ctx context.Context, t *testing.T, d *Driver, spec AcquireSpec) {
	t.Helper()
	warm, err := d.Acquire(ctx, spec)
	if err != nil || warm == nil {
		t.Fatalf("warm-up: %v, %v", warm, err)
	}
	if _, err := warm.Request(ctx, sm.Input{Kind: sm.InputRelease}); err != nil {
		t.Fatal(err)
	}
}

// acquireSteps is an Observer that tells, once armed, of the next step
// that sends an acquisition (also, when set, runs first, under the lock's
// mutex).
type acquireSteps struct {
	armed atomic.Bool
	sent  chan struct{}
	also  func()
}

func (o *acquireSteps) Stepped(_ *Lock, in sm.Input, effects []sm.Effect) {
	if in.Kind != sm.InputAcquire || !o.armed.Load() {
		return
	}
	for _, e := range effects {
		if e.Kind == sm.EffectSendAcquire {
			if o.also != nil && o.armed.CompareAndSwap(true, false) {
				o.also()
			}
			select {
			case o.sent <- struct{}{}:
			default:
			}
		}
	}
}

func (o *acquireSteps) Fence(ctx context.Context, _ *Lock) (context.Context, func(error)) {
	return ctx, func(error) {}
}

func (o *acquireSteps) RenewalSent(*Lock, time.Duration, time.Duration) {}

// TestFairGrantsInTicketOrder_TheLocalHeadsClaimGoesOutBeforeTheKeysRead:
// a fair release grants the key to the queue's head; its invalidation wakes
// the local head, whose try claims the grant — the hand-off — and the read
// that tracks the key again for the others waits until that try ended
// instead of running beside it (a holders' read on the watcher per
// hand-off, which slowed the claim down). The sim holds the release's reply
// until the head's claim is handed to the session, so the push wakes the
// head; when the claim goes out, no read of the key is queued, in flight or
// done since the release; once the claim ended, the key is read again.
func TestFairGrantsInTicketOrder_TheLocalHeadsClaimGoesOutBeforeTheKeysRead(t *testing.T) {
	const key = "fair:claim"
	h, before := (*pushHub)(nil), 0
	readBeside := make(chan bool, 1)
	tries := &acquireSteps{sent: make(chan struct{}, 1), also: func() {
		h.mu.Lock()
		e := h.keys[key]
		readBeside <- e == nil || e.queued || e.check || h.stats.holderReads != before
		h.mu.Unlock()
	}}
	srv, d := testDriver(t, sim.Valkey90, func(c *Config) { c.Observer = tries })
	h = d.push
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second) // bounds a failure only
	defer cancel()
	fair := &FairSpec{WaiterLease: time.Minute}
	// A first release loads the release script (one EVALSHA from then on).
	warmRelease(ctx, t, d, AcquireSpec{WireKey: "fair:warm", TTL: time.Minute, Fair: fair})
	holder, err := d.Acquire(ctx, AcquireSpec{WireKey: key, TTL: time.Minute, Fair: fair})
	if err != nil || holder == nil {
		t.Fatalf("holder: %v, %v", holder, err)
	}
	got := make(chan *Lock, 1)
	go func() {
		l, err := d.Acquire(ctx, AcquireSpec{WireKey: key, TTL: time.Minute, UntilDone: true, RetryEvery: time.Minute,
			RetryEverySet: true, Fair: fair})
		if err != nil {
			t.Error(err)
		}
		got <- l
	}()
	for parked := false; !parked; time.Sleep(time.Millisecond) { // queued at the head, the key tracked
		h.mu.Lock()
		e := h.keys[key]
		parked = e != nil && e.armed && len(e.fair) == 1 && e.fair[0].position() == 1
		before = h.stats.holderReads
		h.mu.Unlock()
	}
	gate := make(chan struct{})
	srv.Inject(sim.Fault{Kind: sim.DelayReply, Gate: gate, Times: 1,
		Match: func(args []string) bool { return slices.Contains(args, holder.Token()) }})
	tries.armed.Store(true)
	released := make(chan error, 1)
	go func() {
		_, err := holder.Request(ctx, sm.Input{Kind: sm.InputRelease})
		released <- err
	}()
	select {
	case beside := <-readBeside:
		if beside {
			t.Error("a read of the key was due, in flight or done when the head's claim went out")
		}
	case <-ctx.Done():
		t.Fatal("the head did not claim while the release's reply was held")
	}
	tries.armed.Store(false)
	close(gate)
	if err := <-released; err != nil {
		t.Fatal(err)
	}
	if l := <-got; l == nil {
		t.Fatal("the head did not acquire")
	}
	for read := false; !read; time.Sleep(time.Millisecond) { // the deferred read, after the claim
		h.mu.Lock()
		read = h.stats.holderReads > before
		h.mu.Unlock()
		if ctx.Err() != nil {
			t.Fatal("the key was not read again after the head's claim")
		}
	}
}
