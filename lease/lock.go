package lease

import (
	"context"
	"errors"
	"time"

	"github.com/respire-go/respire/actor"
	sm "github.com/respire-go/respire/statemachine"
)

// Lock is a held lease with an owner token generated at acquisition. Its
// methods are safe for concurrent use: they are serialised one at a time
// through the handle's state machine (docs/states.md), so concurrent
// releases share one delete and resets apply in request order. A Lock is
// returned only when acquired; it is never the zero value and must not be
// copied. Release or Close it when done; until then a keep-alive, if any,
// keeps renewing it.
//
// A Lock is the driver's record of the handle (package actor, which runs
// it) with this package's API: a *Lock and its *actor.Lock are the same
// memory, so a held lock costs one allocation.
type Lock actor.Lock

// lockOf returns the lease API of the driver's lock a (nil stays nil).
func lockOf(a *actor.Lock) *Lock { return (*Lock)(a) }

// core returns the driver's record.
func (l *Lock) core() *actor.Lock { return (*actor.Lock)(l) }

// Key returns the lock's key without the Locks' key prefix. It does not block.
func (l *Lock) Key() string { return l.core().Key() }

// Token returns the owner token generated for this acquisition: the key's
// whole value, which is NewToken's form, or with WithOwner that followed by
// a NUL byte and the label (see Token.OwnerLabel); the raw-token API given
// it compares it whole, as the lock does. It is a secret: do not log it
// (slog redacts it). It does not block.
func (l *Lock) Token() Token { return Token{bytes: l.core().Token()} }

// Duration returns the lease duration: the acquired one (rounded up to whole
// milliseconds), or the one applied by the latest successful renewal. It
// does not block.
func (l *Lock) Duration() time.Duration { return l.core().Duration() }

// State returns the handle's current state. A lock whose RemainingEstimate
// reached 0 is not Held: State then reports it lost (or Uncertain while a
// command of it is still being fenced), with or without a keep-alive. It
// does not block.
func (l *Lock) State() State { return stateOf(l.core().State()) }

// RemainingEstimate is Duration minus the monotonic time elapsed since just
// before the acquisition or the last confirmed renewal was sent, clamped at
// 0, and 0 whenever the lock is not held. The server's lease can only
// outlive this estimate. It is an estimate, not an ownership check (see
// VerifyStillHeld). It does not block.
func (l *Lock) RemainingEstimate() time.Duration { return l.core().RemainingEstimate() }

// ExpiresAtEstimate is the wall-clock time now plus RemainingEstimate. It
// does not block.
func (l *Lock) ExpiresAtEstimate() time.Time {
	return time.Now().Add(l.RemainingEstimate())
}

// VerifyStillHeld asks the primary whether the key still holds this lock's
// token (GET, with the acquiring view's prefix). It changes no state, even
// when it returns false. It blocks for one round trip; ctx cancellation
// just ends the wait.
func (l *Lock) VerifyStillHeld(ctx context.Context) (bool, error) {
	held, err := l.core().Verify(ctx)
	return held, opError("VerifyStillHeld", l.Key(), err)
}

// Release deletes the lock if this handle still owns it and reports:
// Released (this call's delete removed it), AlreadyReleased (released
// before; nothing sent) or NotOwned (the delete found another owner or no
// key, or the handle had lost the lock; nothing sent then). It blocks for
// the delete's round trip and is safe for concurrent use: concurrent calls
// share one delete and all get its outcome.
//
// ctx governs the delete this call starts. If ctx ends before the delete is
// sent, the handle still owns the lock, Release returns ctx's cause (as is,
// in an error that also matches ErrNotSubmitted) and can be called again;
// so it does, with an error matching ErrNotSubmitted, when the delete was
// held back because its connection's one-time permission probe (CLIENT
// KILL ID <own id> SKIPME yes, which kills nothing) got no answer. If ctx
// ends after the delete may have reached the server,
// the handle counts the lock as lost: the keep-alive is cancelled, the
// connection that carried the delete is fenced with CLIENT KILL, and the
// error (matching ErrOutcomeUnknown) is returned with ReleaseUnknown (a
// later Release returns NotOwned); every other error comes with the zero
// outcome, NoOutcome. A caller that joined
// another caller's release stops waiting when its own ctx ends; the shared
// release goes on. A server error reply (for example NOPERM) is returned and
// leaves the lock held. Without CLIENT ID/KILL permission the delete is sent
// unfenced and one warning is logged per Locks.
func (l *Lock) Release(ctx context.Context) (ReleaseOutcome, error) {
	if o := l.obs(); o != nil && o.tracer != nil {
		return o.traceRelease(ctx, l)
	}
	return l.release(ctx)
}

// release is Release without its span.
func (l *Lock) release(ctx context.Context) (ReleaseOutcome, error) {
	res, err := l.core().Request(ctx, sm.Input{Kind: sm.InputRelease})
	if err == nil && res.Err != nil {
		err = callerError(ctx, res.Err)
	}
	if err != nil {
		if errors.Is(err, ErrOutcomeUnknown) {
			return ReleaseUnknown, opError("Release", l.Key(), err)
		}
		return 0, opError("Release", l.Key(), err)
	}
	return releaseOutcomeOf(res.Release), nil
}

// obs returns the telemetry of the lock's Locks, nil when off.
func (l *Lock) obs() *observer {
	if o, ok := l.core().Driver().Observer().(*observer); ok {
		return o
	}
	return nil
}
