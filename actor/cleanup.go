package actor

import (
	"context"
	"errors"
	"time"

	"github.com/respire-go/respire/conn"
)

// cleanupTimeout bounds the background compare-and-delete that removes the
// lock of an acquisition whose caller gave up after the SET was sent. It
// never delays the caller; only Shutdown waits for it.
const cleanupTimeout = 5 * time.Second

// cleanupRetry is the pause between clean-up deletes that could not be sent.
const cleanupRetry = 50 * time.Millisecond

// cleanupDelete deletes lease if the server still holds it, once the
// acquisition an abandoned try sent on setOn can no longer run after the
// delete: on setOn itself while it lives (the delete queues behind the
// acquisition on the same socket); otherwise — setOn retired, or that
// delete's outcome unknown — it fences the socket (nothing it carried can
// run after the kill's reply), reads the lease on a fresh session, and
// deletes it only if it is still there: a delete that ran, or an
// acquisition that never did, left it gone, so a delete sent then is the
// first to run. It goes on until the lease is settled or ctx ends. Without
// an identity setOn cannot be fenced and the delete is best effort (the
// lease then lives at most until its expiry). The read and the delete are
// the lease kind's (GET and the compare-and-delete of a key; the lease
// read and release scripts of a permit or a read hold). A fair lease is
// not read: the try may have left the token's place in the queue, a grant
// or a writer's waiting marker, none of which the lease's read shows, and
// its queue's release (owner-compared, harmless when nothing is left)
// removes them all and hands the lock on. setOn nil: nothing of the lease
// is in flight.
func (d *Driver) cleanupDelete(ctx context.Context, setOn conn.Session, lease leaseRef) error {
	release := lease.release()
	if setOn != nil && !setOn.Retired() {
		if _, err := setOn.Do(ctx, release, nil); settled(err) {
			return err
		}
	}
	unsettled := setOn
	for {
		if unsettled != nil {
			if err := d.transport.Fence(ctx, unsettled); err != nil && !errors.Is(err, conn.ErrNoIdentity) {
				return err // the SET or a delete may still run: nothing more can be proved
			}
			unsettled = nil
		}
		var err error
		if !lease.fair() { // a fair try's place in its queue, or its grant, does not show in the key
			var res conn.Result
			if res, err = d.transport.Do(ctx, lease.read(), nil); err == nil && !lease.held(res) {
				return nil // gone, or another owner's
			}
		}
		if err == nil {
			route := &conn.Route{}
			if _, err = d.transport.Do(ctx, release, route); settled(err) {
				return err
			}
			unsettled = route.Session() // unknown: fence it and look again
		}
		if errors.Is(err, conn.ErrPoolClosed) || Sleep(ctx, d.spawn, d.clock, cleanupRetry) != nil {
			return err
		}
	}
}

// settled reports whether a delete's outcome is known for good: an answer,
// or a server error reply that a later attempt would get too (not a
// redirect, CLUSTERDOWN, LOADING…: those did not run and are tried again).
func settled(err error) bool {
	return err == nil || (conn.ClassOf(err) == conn.Definite && !errors.Is(err, conn.ErrDidNotRun))
}
