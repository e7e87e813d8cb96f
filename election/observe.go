package election

import (
	"context"
	"errors"
	"time"

	"github.com/respire-go/respire/actor"
	"github.com/respire-go/respire/conn"
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

// Observe returns a channel that receives the label of each new leader of
// the election, the current one first (a leader that gave no label as
// ""); a new leader is a new holder of the key, even with the label of the
// one before. It is push-driven where the server allows it: the key is
// tracked on its node's watcher connection, and read again as soon as it
// changes (and at least every second); otherwise it is read every 100 ms.
// Leaders shorter than that, or than a slow receiver, may be missed: the
// channel tells the leaders it saw, in order, never a stale one after a
// newer. It is closed when ctx ends or the Locks is closed; until then a
// goroutine runs, blocked while the receiver does not read, so receive
// until it is closed or end ctx. It never holds a token.
func (e *Election) Observe(ctx context.Context) <-chan string {
	out := make(chan string)
	go e.observe(ctx, out)
	return out
}

// observe is Observe's goroutine.
func (e *Election) observe(ctx context.Context, out chan<- string) {
	defer close(out)
	wireKey := e.locks.KeyPrefix() + e.key
	watch, push := e.locks.Driver().WatchKey(wireKey)
	if push {
		defer watch.Stop()
	}
	var last lease.Token // the last leader's whole value: it stays in this goroutine
	for ctx.Err() == nil {
		token, found, err := e.read(ctx, watch, push)
		switch {
		case errors.Is(err, lease.ErrClosed) || errors.Is(err, lease.ErrClientClosed):
			return
		case push && errors.Is(err, conn.ErrTrackingRefused):
			push = false // the node refused tracking: poll from now on
		case err == nil && found && token != last:
			last = token
			label, _ := token.OwnerLabel()
			select {
			case out <- label:
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
