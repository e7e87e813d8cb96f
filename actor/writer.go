package actor

import (
	"context"
	"time"

	"github.com/respire-go/respire/conn"
	sm "github.com/respire-go/respire/statemachine"
)

// This file is what a writer's tries do beyond any acquisition's: a try
// that finds live readers leaves a waiting marker in the writer key
// ("waiting:" + the try's token, with a lease of its own), which refuses
// new readers (writer preference); the next try reuses that token, so
// that it refreshes the marker or, once the readers are gone, takes the
// lock in its place; a writer that gives up deletes its marker. From the
// handle's point of view a try that left a marker is a refusal
// (NotAcquired): the handle holds nothing, and the marker is not a lock.

// tryAnswer is what one try's command answered, beyond the handle's view.
type tryAnswer struct {
	waiting   bool // a writer's try: not acquired, its marker is set
	uncertain bool // the try's outcome was unknown (settled or abandoned since)
}

// markerMillis is the lease of a waiting writer's marker: longer than the
// longest sleep between two tries (3/2 of the mean interval, see
// statemachine.Poll) and a try's round trip, twice over, plus a second for
// a slow round trip: a writer that dies while waiting holds readers up for
// about that long.
func markerMillis(every time.Duration) int64 {
	if every <= 0 {
		every = sm.DefaultRetryEvery
	}
	return 3*ceilMillis(every) + 1000
}

// waitOn returns what a waiting acquisition is woken by (push): a permit
// by a change of the holders (a sorted set); a reader, refused because of
// a writer, by a change of the writer key, as every reader waiting there
// is (a writer gone lets them all in); a mutex by a change of its key.
func (t *tries) waitOn() waitOn {
	switch t.spec.Kind {
	case KindPermit:
		return waitOn{key: t.spec.WireKey, member: true}
	case KindRead:
		return waitOn{key: conn.RWLockOfKey(t.spec.WireKey).WriterKey, shared: true}
	}
	return waitOn{key: t.spec.WireKey}
}

// token returns the owner token of the next try: a fresh one, except for a
// writer whose marker is on the server (the same token refreshes it).
func (t *tries) token() string {
	if t.marker != "" {
		return t.marker
	}
	return t.d.newToken()
}

// afterWrite records what a writer's try with token left on the server:
// acquired, its marker is gone (replaced by the hold); waiting, its marker
// is set (the next try reuses token); refused by another writer, no marker
// of it can be there; an outcome that was unknown gets a fresh token next,
// and a marker it may have left is deleted (once settled not ours, here;
// abandoned, by the handle's clean-up). A try that did not run changes
// nothing.
func (t *tries) afterWrite(token string, acquired, refused bool) {
	switch {
	case acquired:
		t.marker = ""
	case t.answer.uncertain:
		if refused { // settled: the hold is not ours, the marker may be
			t.d.abandonMarker(t.spec.WireKey, token)
		}
		t.marker = ""
	case t.answer.waiting:
		t.marker = token
	case refused:
		t.marker = ""
	}
}

// abandonMarker deletes, in the background and bounded, the waiting
// marker a writer trying with token may have left in writerKey, if it is
// still there (nothing of that writer is in flight any more).
func (d *Driver) abandonMarker(writerKey, token string) {
	d.goBackground(func() {
		ctx, cancel := d.bound(context.Background(), cleanupTimeout)
		defer cancel()
		if err := d.cleanupDelete(ctx, nil, markerOf(writerKey, token)); err != nil {
			d.logger.Debug("lease: deleting a waiting writer's marker failed", d.KeyArgs(writerKey, "error", err)...)
		}
	})
}
