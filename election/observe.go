package election

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/respire-go/respire/actor"
	"github.com/respire-go/respire/conn"
	"github.com/respire-go/respire/internal/leaseinternal"
	"github.com/respire-go/respire/lease"
)

// observeSafetyNet is how long Observe waits for a change it is told of
// before it reads the key anyway (a lost push), and observePoll how often
// it reads the key when it cannot be told (push off or refused, a read
// that failed).
const (
	observeSafetyNet = time.Second
	observePoll      = 100 * time.Millisecond
)

// Observation is one state of the election, as Observe tells it: who
// leads, or that nobody does.
type Observation struct {
	// HasLeader reports whether a candidate leads. False is "no leader":
	// the leader resigned or its lease ended (it died, was paused or cut
	// off), and nobody has taken over yet.
	HasLeader bool
	// Label is the leader's label, as its Campaign gave it; "" for a leader
	// that gave none, and with no leader.
	Label string
}

// String reads "leader <label>" (the label quoted) or "no leader".
func (o Observation) String() string {
	if !o.HasLeader {
		return "no leader"
	}
	return fmt.Sprintf("leader %q", o.Label)
}

// Observe returns a channel that tells each state of the election in turn,
// the current one first: each new leader (a new holder of the key, even
// with the label of the one before) and each time there is no leader (the
// leader resigned, or its lease ended and nobody took over yet). It is
// push-driven where the server allows it: the key is tracked on its node's
// watcher connection, and read again as soon as it changes (and at least
// every second); otherwise it is read every 100 ms. States shorter than
// that, or than a slow receiver, may be missed (a resignation the next
// leader follows at once is often told as that leader alone): the channel
// tells the states it saw, in order, never a stale one after a newer, and
// never the same one twice in a row. It is closed when ctx ends or the
// Locks is closed; until then a goroutine runs, blocked while the receiver
// does not read, so receive until it is closed or end ctx. It never holds
// a token.
func (e *Election) Observe(ctx context.Context) <-chan Observation {
	out := make(chan Observation)
	go e.observe(ctx, out)
	return out
}

// observe is Observe's goroutine.
func (e *Election) observe(ctx context.Context, out chan<- Observation) {
	defer close(out)
	wireKey := e.locks.KeyPrefix() + e.key
	watch, push := leaseinternal.Driver(e.locks).WatchKey(wireKey)
	if push {
		defer watch.Stop()
	}
	var last struct { // the last state told; the leader's whole value stays in this goroutine
		told, found bool
		token       lease.Token
	}
	for ctx.Err() == nil {
		token, found, err := e.read(ctx, watch, push)
		switch {
		case errors.Is(err, lease.ErrClosed) || errors.Is(err, lease.ErrClientClosed):
			return
		case push && errors.Is(err, conn.ErrTrackingRefused):
			push = false // the node refused tracking: poll from now on
		case err == nil && (!last.told || found != last.found || found && token != last.token):
			last.told, last.found, last.token = true, found, token
			state := Observation{HasLeader: found}
			if found {
				state.Label, _ = token.OwnerLabel()
			}
			select {
			case out <- state:
			case <-ctx.Done():
				return
			} // a change while the receiver was slow is told on Changed: the read tracked the key
		}
		if !e.waitChange(ctx, watch, push && err == nil) {
			return
		}
	}
}

// read reads the key: on its watcher (which tracks it again) with push,
// with a plain GET otherwise.
func (e *Election) read(ctx context.Context, watch *actor.KeyWatch, push bool) (lease.Token, bool, error) {
	if push {
		value, found, err := watch.Read(ctx)
		return lease.TokenFromBytes([]byte(value)), found, err
	}
	return e.locks.OwnerToken(ctx, e.key)
}

// waitChange waits for the key's change (tracked: the change, or the
// safety net) or the polling interval (not tracked: push off or refused,
// or the last read failed), and reports false when ctx ended.
func (e *Election) waitChange(ctx context.Context, watch *actor.KeyWatch, tracked bool) bool {
	if !tracked {
		return sleep(ctx, observePoll)
	}
	t := time.NewTimer(observeSafetyNet)
	defer t.Stop()
	select {
	case <-watch.Changed():
		return true
	case <-t.C:
		return true
	case <-ctx.Done():
		return false
	}
}

// sleep waits d or until ctx ends (false).
func sleep(ctx context.Context, d time.Duration) bool {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return true
	case <-ctx.Done():
		return false
	}
}
