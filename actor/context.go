package actor

import (
	"context"
	"fmt"
	"io"
	"slices"
	"strings"
	"time"

	sm "github.com/respire-go/respire/statemachine"
)

// leaseCancel is a context made by context.WithCancelCause and its cancel:
// the cancellation of a keep-alive's Context (within a leaseWatch).
type leaseCancel struct {
	ctx    context.Context
	cancel context.CancelCauseFunc
}

// lockContext is a Lock seen as its Context: handing the Lock itself out
// costs nothing, and neither does the context until something waits on
// it. Its Err and Value check the lease's end first (see Lock.Context);
// its Done channel and the functions registered by AfterFunc (a child
// context's cancellation, ContextFrom's watch) live in the lock's
// lockWatch, made when first needed.
type lockContext Lock

// lockWatch is what a lock's context needs beyond the Lock: the channel
// Done returns and, once the lease ended, a context cancelled with its
// cause. It is made by the first Done or AfterFunc, or at the lease's
// end; it is replaced (same channel, now closed) by one with ended set
// when the lease ends, so a reader of Lock.watch without l.mu sees either
// a lease that lasts or an ended one with its cause.
type lockWatch struct {
	done chan struct{}
	// ended is nil while the lease lasts, then a context cancelled with
	// the lease's cause: Value answers from it, which is how
	// context.Cause finds the cause (through its *cancelCtx).
	ended context.Context
	// afters are the functions AfterFunc registered, nil while none;
	// guarded by the lock's mu. Each is started on its own once the lease
	// ends.
	afters *[]*afterFunc
}

// afterFunc is one registration of lockContext.AfterFunc.
type afterFunc struct{ f func() }

// closedDone is the Done of a lock whose lease ended before anyone waited.
var closedDone = func() chan struct{} {
	c := make(chan struct{})
	close(c)
	return c
}()

// Context returns the context that is cancelled when the lease ends, with
// the reason as its cause (see lease.Lock.Context for the causes): the
// lock as a *lockContext, whose Err and Value compare the driver's clock
// with the lease's end when called (exact after a pause), and whose Done
// is closed by the deadline timer. The first call starts watching the
// lease's end (InputWatch) and allocates nothing; Done's channel is made
// when first asked for. The same context is returned afterwards. It does
// not block.
func (l *Lock) Context() context.Context {
	l.mu.Lock()
	defer l.mu.Unlock()
	if !l.flags.has(flagWatched) {
		l.flags.set(flagWatched, true)
		if l.ended() {
			l.endWatch(l.endingLocked())
		} else {
			l.step(sm.Input{Kind: sm.InputWatch, Now: l.d.clock.Now()}, 0)
			l.observeLocked()
		}
	}
	return (*lockContext)(l)
}

// watchLocked returns the lock's lockWatch, made now if there is none;
// l.mu is held.
func (l *Lock) watchLocked() *lockWatch {
	w := l.watch.Load()
	if w == nil {
		w = &lockWatch{done: make(chan struct{})}
		l.watch.Store(w)
	}
	return w
}

// endWatch ends the lock's context with why's cause: a lockWatch with
// ended set replaces the current one, then Done's channel is closed and
// every function AfterFunc registered is started; l.mu is held.
func (l *Lock) endWatch(why sm.Ending) {
	old := l.watch.Load()
	if old != nil && old.ended != nil {
		return
	}
	ended, cancel := context.WithCancelCause(context.Background())
	cancel(l.endingCause(why))
	w := &lockWatch{done: closedDone, ended: ended}
	if old != nil {
		w.done = old.done // the channel Done handed out: closed below
	}
	l.watch.Store(w) // before the close: whoever it wakes sees the end (Err, Value)
	if old == nil {
		return
	}
	close(old.done)
	if old.afters != nil {
		for _, a := range *old.afters {
			l.d.spawn.Go(a.f)
		}
	}
}

// Deadline implements context.Context: the lock's context has none.
func (c *lockContext) Deadline() (time.Time, bool) { return time.Time{}, false }

// Done implements context.Context: closed by a timer once the lease ended.
func (c *lockContext) Done() <-chan struct{} {
	if w := c.watch.Load(); w != nil {
		return w.done
	}
	l := (*Lock)(c)
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.watchLocked().done
}

// Err implements context.Context exactly: a lease whose end has passed on
// the monotonic clock is ended now, synchronously, before Err answers.
func (c *lockContext) Err() error {
	(*Lock)(c).endIfDue()
	if w := c.watch.Load(); w != nil && w.ended != nil {
		return context.Canceled
	}
	return nil
}

// Value implements context.Context. It checks the lease's end first, so
// that context.Cause (which reads the cause through Value) is exact too;
// once the lease ended it answers from a context cancelled with the
// cause. The context carries no values.
func (c *lockContext) Value(key any) any {
	(*Lock)(c).endIfDue()
	if w := c.watch.Load(); w != nil && w.ended != nil {
		return w.ended.Value(key)
	}
	return nil
}

// AfterFunc arranges for f to run on its own once the lease ended (at
// once if it has), as context.AfterFunc does; stop undoes that and reports
// whether it did. The context package uses it for the children of the
// lock's context (context.WithCancel and the like) and context.AfterFunc,
// which would otherwise each need a goroutine to wait on Done.
func (c *lockContext) AfterFunc(f func()) (stop func() bool) {
	l := (*Lock)(c)
	l.mu.Lock()
	defer l.mu.Unlock()
	w := l.watchLocked()
	if w.ended != nil {
		l.d.spawn.Go(f)
		return func() bool { return false }
	}
	a := &afterFunc{f: f}
	if w.afters == nil {
		w.afters = new([]*afterFunc)
	}
	*w.afters = append(*w.afters, a)
	return func() bool {
		l.mu.Lock()
		defer l.mu.Unlock()
		w := l.watch.Load() // the ended one has none: a started one is not undone
		if w.afters == nil {
			return false
		}
		i := slices.Index(*w.afters, a)
		if i < 0 {
			return false
		}
		*w.afters = slices.Delete(*w.afters, i, i+1)
		return true
	}
}

// String names the context without revealing anything of the lock.
func (c *lockContext) String() string { return "lease.Lock.Context" }

// Format prints String for every verb: the context is the Lock, whose
// fields (its owner token among them) fmt would print otherwise.
func (c *lockContext) Format(f fmt.State, _ rune) { _, _ = io.WriteString(f, c.String()) }

// leaseWatch is a keep-alive's context and its cancel (KeepAlive.Context):
// its Err and Value check the lease's end first, as the lock's do.
type leaseWatch struct {
	leaseCancel
	lock *Lock // the lock whose lease's end Err and Value check first; nil: none (a keep-alive that never started)
}

// Deadline implements context.Context: a keep-alive's context has none.
func (w *leaseWatch) Deadline() (time.Time, bool) { return time.Time{}, false }

// Done implements context.Context: closed once the keep-alive ended.
func (w *leaseWatch) Done() <-chan struct{} { return w.ctx.Done() }

// Err implements context.Context exactly, as the lock's context does.
func (w *leaseWatch) Err() error {
	if w.lock != nil {
		w.lock.endIfDue()
	}
	return w.ctx.Err()
}

// Value implements context.Context, exact as Err is.
func (w *leaseWatch) Value(key any) any {
	if w.lock != nil {
		w.lock.endIfDue()
	}
	return w.ctx.Value(key)
}

// String names the context without revealing anything of the keep-alive.
func (w *leaseWatch) String() string { return "lease.KeepAlive.Context" }

// endIfDue ends the lease now if its estimate ran out: the check of the
// lock's exact Err. It takes l.mu only when the end is due.
func (l *Lock) endIfDue() {
	deadline := time.Duration(l.leaseDeadline.Load())
	if deadline == 0 || l.d.clock.Now() < deadline {
		return
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	l.observeLocked()
}

// endLease records why the lease ended and ends the lock's context, if
// any; l.mu is held.
func (l *Lock) endLease(why sm.Ending) {
	l.setEnding(why)
	if l.flags.has(flagPushed) {
		l.d.push.unwatchHeld(l)
	}
	if l.flags.has(flagWatched) {
		l.endWatch(why)
	}
}

// The Lock's end byte says why its lease ended: 0 while the lease lasts;
// endInSide when the ending carries an error (kept in the lock's side);
// else 1 + cause<<3 | reason (a cause below 8). Recording the usual end of a lease
// (released, expired, refused) so allocates nothing, and a Lock keeps one
// byte for it, not a pointer.
const (
	endReasonBits = 3
	endInSide     = 0x80
)

// setEnding records why as the lease's ending; l.mu is held.
func (l *Lock) setEnding(why sm.Ending) {
	if why.Err == nil && why.Cause < 8 && why.Reason < 1<<endReasonBits {
		l.end = 1 + (uint8(why.Cause)<<endReasonBits | uint8(why.Reason))
		return
	}
	failure := why
	l.sideLocked().ending = &failure
	l.end = endInSide
}

// ended reports whether the lease ended (see endingLocked); l.mu is held.
func (l *Lock) ended() bool { return l.end != 0 }

// endingLocked returns why the lease ended, the zero Ending while it
// lasts; l.mu is held.
func (l *Lock) endingLocked() sm.Ending {
	switch l.end {
	case 0:
		return sm.Ending{}
	case endInSide:
		return *l.side.ending
	}
	code := l.end - 1
	return sm.Ending{Cause: sm.Cause(code >> endReasonBits), Reason: sm.Reason(code & (1<<endReasonBits - 1))}
}

// endingCause is the lock context's cause for why; l.mu is held. A lease
// that ran out after the user's client was closed says both (naming the
// client: the transport remembers the close).
func (l *Lock) endingCause(why sm.Ending) error {
	if why.Cause == sm.CauseExpired && l.flags.has(flagClientClosed) {
		return expiredError{clientClosedCause(l.d.transport.ClientAlive())}
	}
	return endingError(why)
}

// expiredError is ErrExpired with the reason no renewal came.
type expiredError struct{ why error }

func (e expiredError) Error() string {
	return sm.ErrExpired.Error() + ": " + strings.TrimPrefix(e.why.Error(), "lease: ")
}
func (e expiredError) Unwrap() error        { return e.why }
func (e expiredError) Is(target error) bool { return target == sm.ErrExpired }

// StopAndRelease stops the keep-alive, then releases the lock (InputClose), bounded
// by ctx: when ctx ends before the keep-alive was stopped, it is stopped at
// once, or it would renew the lease for ever instead of letting it end. It
// returns the core's answer and the request's error; package lease decides
// what to swallow.
func (l *Lock) StopAndRelease(ctx context.Context) (sm.Result, error) {
	res, err := l.Request(ctx, sm.Input{Kind: sm.InputClose})
	if err != nil && ctx.Err() != nil {
		l.stopKeepAliveNow()
	}
	return res, err
}

// StopKeepAlive stops the lock's keep-alive, whichever runs (its own or a
// KeepAlive), waiting for a renewal in flight (and a fence after an
// uncertain one), bounded by ctx: when ctx ends first it is stopped at once
// without waiting. It changes nothing else: a lock still held stays held
// until its release or its lease's end. It blocks as said.
func (l *Lock) StopKeepAlive(ctx context.Context) {
	if _, err := l.Request(ctx, sm.Input{Kind: sm.InputKeepAliveStop}); err != nil {
		l.stopKeepAliveNow()
	}
}

// stopKeepAliveNow stops the lock's keep-alive, if one is active, without
// waiting for a renewal in flight. It does not block.
func (l *Lock) stopKeepAliveNow() {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.h.KeepAliveActive() {
		l.step(sm.Input{Kind: sm.InputKeepAliveStop, Now: l.d.clock.Now()}, 0)
	}
}
