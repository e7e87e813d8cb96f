package actor

import (
	"context"
	"sync"
	"sync/atomic"
	"time"

	"go.opentelemetry.io/otel/trace"

	sm "github.com/respire-go/respire/statemachine"
)

// Lock is the driver's record of one lock handle: its statemachine.Handle
// and what the driver needs to carry out its effects. Package lease's Lock
// is this record (embedded) with the API users call. Every input is
// stepped under mu, one at a time, in the order the inputs took mu; a step
// and its effects never block. A Lock is made by the driver (Acquire) and
// must not be copied.
type Lock struct {
	d       *Driver
	wireKey string // the key with the view's prefix (Key is the rest)
	token   string // the owner token's wire bytes

	// leaseDeadline is the handle's LeaseDeadline while it holds the lease,
	// 0 otherwise, published after every step so estimates are read
	// without mu.
	leaseDeadline atomic.Int64

	mu sync.Mutex // guards everything below; held only for a Step and its non-blocking effects
	h  sm.Handle
	// cmds are the commands in flight and the callers waiting for their
	// answers; nil when there are none and the lock keeps alive
	// (commands.go).
	cmds   *lockCmds
	timers lockTimers                // its renewal and deadline timers on the driver's timer heap (timers.go)
	watch  atomic.Pointer[lockWatch] // its Context's Done channel and end (context.go); nil until first needed
	side   *lockSide                 // rarely used state (guard.go); nil until first needed
	// heldSince is the Observer's word for the lock (package lease: when
	// the hold-duration metric saw it held); guarded by mu.
	heldSince int64
	callers   sm.CallerID // last CallerID handed out
	timerPos  int32       // 1 + its index in the timer heap, 0 when not in it; guarded by the heap's mutex
	keyStart  uint16      // len of the view's prefix: Key is wireKey[keyStart:]
	// renewer names the renewer of its node's keep-alive batches (1 + its
	// index in the driver's renewerList, see renewerOf); 0: route by key.
	renewer uint16
	// flags are the lock's yes-or-no facts and how the keep-alive an
	// acquisition started ended (ownedEnd); written under mu.
	flags lockFlags
	// end says why the lease ended, 0 while it lasts (setEnding).
	end uint8
	// kind is what the lock holds (kind.go): set before the Lock is shared
	// and never changed, so it is read without mu (its own byte: a byte
	// written under mu next to it would race with such reads).
	kind Kind
	// A Lock is 208 bytes (a size class): every byte is paid by each held
	// lock (lease.TestLockStaysSmall, rule HeldLockIsSmall); rarely used
	// state belongs in side structs, per-Locks settings in the Driver, and
	// small fields in this tail, which has 1 byte to spare.
}

// lockFlags are a Lock's yes-or-no facts, as bits, and in the bits above
// them the cause of the end of the keep-alive an acquisition started (one
// byte).
type lockFlags uint8

const (
	flagClientClosed   lockFlags = 1 << iota // the keep-alive ended because the client was closed
	flagPushed                               // registered with the push hub as a holder (push_hold.go)
	flagWatched                              // its Context was asked for: the lease's end is watched (context.go)
	flagOwnedKeepAlive                       // the keep-alive its acquisition started runs (ownedKeepAlive)
	// ownedEndShift is where the owned keep-alive's end cause starts.
	ownedEndShift = iota
)

// ownedEnd is how the keep-alive an acquisition started ended (what its
// cause would be, see ownedKeepAlive); CauseNone while it runs or if there
// was none. l.mu is held.
func (l *Lock) ownedEnd() sm.Cause { return sm.Cause(l.flags >> ownedEndShift) }

// setOwnedEnd records that end; l.mu is held.
func (l *Lock) setOwnedEnd(c sm.Cause) {
	l.flags = l.flags&(1<<ownedEndShift-1) | lockFlags(c)<<ownedEndShift
}

func (f lockFlags) has(bit lockFlags) bool { return f&bit != 0 }

func (f *lockFlags) set(bit lockFlags, on bool) {
	if on {
		*f |= bit
	} else {
		*f &^= bit
	}
}

// waitList holds a lock's waiting callers while there are any (in its
// lockCmds). Lists are reused through freeWaitLists: a held lock that no
// caller waits on does not carry one.
type waitList struct {
	list []waiter
	one  [1]waiter // backing store for the usual single waiter
}

// freeWaitLists keeps waitLists for reuse. It is a channel rather than a
// sync.Pool so that reuse is certain (the race detector makes a Pool drop
// a quarter of what is put back at random, which the allocation tests
// would see as noise).
var freeWaitLists = make(chan *waitList, 1024)

func getWaitList() *waitList {
	select {
	case w := <-freeWaitLists:
		return w
	default:
		return new(waitList)
	}
}

func putWaitList(w *waitList) {
	select {
	case freeWaitLists <- w:
	default: // enough are kept
	}
}

// waiter is a caller waiting for its EffectResolve.
type waiter struct {
	id     sm.CallerID
	ctx    context.Context // governs the command started for this caller
	ready  chan struct{}   // closed once result is set, for a caller parked on it; nil until it parks
	result sm.Result
	done   bool // resolved
	gone   bool // the caller stopped waiting; its answer is dropped
}

// Driver returns the driver the lock belongs to.
func (l *Lock) Driver() *Driver { return l.d }

// Key returns the lock's key without its view's prefix. It does not block.
func (l *Lock) Key() string { return l.wireKey[l.keyStart:] }

// WireKey returns the key as sent, prefix included. It does not block.
func (l *Lock) WireKey() string { return l.wireKey }

// Token returns the owner token's bytes: a secret. It does not block.
func (l *Lock) Token() string { return l.token }

// Duration returns the lease duration: the acquired one, or the one applied
// by the latest successful renewal. It does not block.
func (l *Lock) Duration() time.Duration {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.h.Duration()
}

// State returns the handle's state after applying the time: a lock whose
// estimate ran out is not Held. It does not block.
func (l *Lock) State() sm.State {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.observeLocked()
	return l.h.State()
}

// observeLocked steps the handle with the time when its lease estimate ran
// out, so that it no longer counts as held; l.mu is held.
func (l *Lock) observeLocked() {
	now := l.d.clock.Now()
	if deadline, holding := l.h.LeaseDeadline(); holding && deadline <= now {
		l.step(sm.Input{Kind: sm.InputObserve, Now: now}, 0)
	}
}

// RemainingEstimate is the time left until the lease deadline (see
// statemachine.Handle.LeaseDeadline), 0 whenever the lock is not held. It
// does not block.
func (l *Lock) RemainingEstimate() time.Duration {
	deadline := time.Duration(l.leaseDeadline.Load())
	if deadline == 0 {
		return 0
	}
	return max(0, deadline-l.d.clock.Now())
}

// LeaseDeadline returns the local monotonic time (on the driver's clock)
// at which the lease estimate runs out, and false when the lock does not
// hold the lease. It does not block.
func (l *Lock) LeaseDeadline() (time.Duration, bool) {
	deadline := time.Duration(l.leaseDeadline.Load())
	return deadline, deadline != 0
}

// HeldSince returns the Observer's word for the lock (see SetHeldSince);
// l.mu is held (Observer calls).
func (l *Lock) HeldSince() int64 { return l.heldSince }

// SetHeldSince sets the Observer's word for the lock, 0 at first: one
// field in the lock instead of a table of held locks (package lease keeps
// when it saw the lock held); l.mu is held (Observer calls).
func (l *Lock) SetHeldSince(v int64) { l.heldSince = v }

// KeepAliveRunning reports whether a keep-alive occupies the lock (running
// or stopping). It does not block.
func (l *Lock) KeepAliveRunning() bool {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.h.KeepAliveActive()
}

// SetAcquireSpan records the span a fence of this lock links to.
func (l *Lock) SetAcquireSpan(sc *trace.SpanContext) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.sideLocked().acquireSpan = sc
}

// Verify asks the primary whether this lock's lease is still there: the
// key holds its token (GET), or, for a permit or a read hold, its member
// is live by the server's clock (the lease read script). It changes no
// state. It blocks for one round trip.
func (l *Lock) Verify(ctx context.Context) (bool, error) {
	ctx, cancel := l.d.commandContext(ctx)
	defer cancel()
	ref := l.ref()
	res, err := l.d.transport.Do(ctx, ref.read(), nil)
	if err != nil {
		return false, err
	}
	return ref.held(res), nil
}

// newCaller registers a waiting caller; l.mu is held.
func (l *Lock) newCaller(ctx context.Context) sm.CallerID {
	l.callers++
	if l.callers == 0 { // wrapped after 2³² requests: 0 means "no caller" to the core
		l.callers = 1
	}
	if l.cmds == nil {
		l.cmds = getCmds()
	}
	if l.cmds.waiters == nil {
		w := getWaitList()
		w.list = w.one[:0]
		l.cmds.waiters = w
	}
	l.cmds.waiters.list = append(l.cmds.waiters.list, waiter{id: l.callers, ctx: ctx})
	return l.callers
}

// waiterIndex finds caller id; l.mu is held.
func (l *Lock) waiterIndex(id sm.CallerID) int {
	if l.waitersLocked() == nil {
		return -1
	}
	for i := range l.cmds.waiters.list {
		if l.cmds.waiters.list[i].id == id {
			return i
		}
	}
	return -1
}

// waitersLocked returns the lock's waiting callers, nil when none; l.mu
// is held.
func (l *Lock) waitersLocked() *waitList {
	if l.cmds == nil {
		return nil
	}
	return l.cmds.waiters
}

func (l *Lock) removeWaiter(i int) {
	w := l.cmds.waiters
	w.list = append(w.list[:i], w.list[i+1:]...)
	w.list[len(w.list) : len(w.list)+1][0] = waiter{} // drop the ctx and channel
	if len(w.list) == 0 {
		*w = waitList{} // drops what the first waiter left in one if the list grew
		l.cmds.waiters = nil
		putWaitList(w)
		l.dropIdleCmds()
	}
}

// resolve answers caller id; l.mu is held.
func (l *Lock) resolve(id sm.CallerID, r sm.Result) {
	i := l.waiterIndex(id)
	if i < 0 {
		return
	}
	w := &l.cmds.waiters.list[i]
	if w.gone {
		l.removeWaiter(i)
		return
	}
	w.result, w.done = r, true
	if w.ready != nil {
		close(w.ready)
	}
}

// collect takes caller id's answer if it has one; l.mu is held.
func (l *Lock) collect(id sm.CallerID) (sm.Result, bool) {
	i := l.waiterIndex(id)
	if i < 0 || !l.cmds.waiters.list[i].done {
		return sm.Result{}, false
	}
	r := l.cmds.waiters.list[i].result
	l.removeWaiter(i)
	return r, true
}

// Prefix returns the view's prefix of the lock's key. It does not block.
func (l *Lock) Prefix() string { return l.wireKey[:l.keyStart] }
