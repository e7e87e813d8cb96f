package actor

import (
	"context"
	"errors"
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
	waiting   bool // a writer's try: not acquired, its marker is set; a fair try: queued
	position  int  // a fair try that queued: its position (1: the head)
	uncertain bool // the try's outcome was unknown (settled or abandoned since)
	// unconfirmed, when not nil: a Sentinel primary took it but the
	// replicas did not confirm it (conn.Result.Unconfirmed, the why), or
	// an unknown outcome was settled as ours by a read, which confirms
	// nothing either: the try's lock is ended, never handed out (rule
	// SentinelAcquisitionsNeedReplicaAcks).
	unconfirmed error
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

// token returns the owner token of the next try: a fresh one (with the
// spec's owner suffix), except for a writer whose marker is on the server
// (the same token refreshes it) and a fair waiter (the same token keeps its
// place in the queue).
func (t *tries) token() string {
	if t.marker != "" {
		return t.marker
	}
	if t.fairToken != "" {
		return t.fairToken
	}
	if t.spec.OwnerSuffix != "" {
		return t.d.newToken() + t.spec.OwnerSuffix
	}
	return t.d.newToken()
}

// afterWrite records what a writer's try with token left on the server,
// from its answer res: acquired, its marker is gone (replaced by the
// hold); a definite "waiting", its marker is set, and the next try reuses
// token to refresh it; a definite refusal (another writer), no marker of
// it can be there; a try that did not run (not sent, or refused by the
// server before running) changed nothing; an unknown outcome settled not
// ours (fenced, then read back) may have left the marker of token, which
// the next try refreshes with the same token. Anything else — an unknown
// outcome abandoned, a reply that came too late — may have left the hold
// or the marker of token, which the handle's clean-up deletes, so the next
// try takes a fresh token: a try with the same token could run before that
// clean-up and have its lock deleted under it.
func (t *tries) afterWrite(token string, res sm.Result, refused bool) {
	definite := !t.answer.uncertain
	switch {
	case res.OK:
		t.marker = ""
	case definite && t.answer.waiting:
		t.marker = token
	case definite && refused:
		t.marker = ""
	case definite && ranNothing(res.Err):
	case refused:
		// Settled not ours, after its fence: nothing of the try is in
		// flight, and no clean-up of the handle's runs; the marker it may
		// have left stays, and the next try, with the same token,
		// refreshes it (or takes the lock in its place), so that readers
		// are refused all along.
		t.marker = token
	default:
		t.marker = ""
	}
}

// ranNothing reports whether a try's error proves its command did not run:
// not sent, or refused by the server (a definite error reply), not a
// reply that came after the lease could have expired.
func ranNothing(err error) bool {
	if err == nil || errors.Is(err, sm.ErrAcquiredTooLate) {
		return false
	}
	class := conn.ClassOf(err)
	return class == conn.NotSubmitted || class == conn.Definite
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
