package actor

import (
	"context"

	"github.com/respire-go/respire/conn"
)

// This file is one batch of the holders' reads (push_hold.go): the keys
// read with GET (a mutex's, a writer's) and the sorted-set members read
// with ZSCORE (permits, read holds), and how each read's answers judge its
// holders.

// checkBatch is one worker's batch of holders' reads, sent in one
// WatchReadMany (a round trip per node), and its buffers, reused from one
// round to the next.
type checkBatch struct {
	reads   []holderRead
	keys    []string // the reads' keys, as WatchReadMany takes them
	judged  []*Lock  // the holders each read judges (holderRead.from, to)
	results []conn.WatchReadResult
	// The member reads of sorted-set keys (a semaphore's holders, a lock's
	// readers): one per judged holder (ZSCORE key token), in judged's
	// order from the read's from on, or one of no member when none is.
	members  []conn.MemberRead
	mresults []conn.WatchReadResult
	// fairJudged are the fair waiters whose reservations the member reads
	// from holderRead.fairResult on look for (push_fair.go).
	fairJudged []*fairWaiter
}

// holderRead is one owner-compared read of a key for its holders.
type holderRead struct {
	key      string
	e        *pushKey // the key's entry, kept while the read is in flight
	gen      uint64   // e.gen when the read was sent: a later one spans an invalidation
	from, to int      // checkBatch.judged[from:to]: the holders registered when it was sent
	result   int      // its result: in results (a GET), or, for a sorted set, the first of its member reads
	member   bool     // a sorted set: read member by member
	// A sorted set's reservation reads for its fair waiters:
	// checkBatch.fairJudged[fairFrom:fairTo], their results in mresults
	// from fairResult on.
	fairFrom, fairTo, fairResult int
}

// addRead adds r's commands to the batch: a GET of its key, or, for a
// sorted set (its holders are permits or read holds, or its waiters wait
// for a permit), a ZSCORE per judged holder.
func (b *checkBatch) addRead(r *holderRead) {
	r.member = r.e.member
	if r.from < r.to {
		r.member = b.judged[r.from].Kind().member()
	}
	if !r.member {
		r.result = len(b.keys)
		b.keys = append(b.keys, r.key)
		return
	}
	r.result = len(b.members)
	for _, l := range b.judged[r.from:r.to] {
		b.members = append(b.members, conn.MemberRead{Key: r.key, Member: l.token})
	}
	r.fairResult = len(b.members)
	b.fairMemberReads(r)
	if r.from == r.to && r.fairFrom == r.fairTo {
		b.members = append(b.members, conn.MemberRead{Key: r.key}) // tracks the key for its waiters
	}
}

// send sends the batch's reads: one WatchReadMany for the keys, one
// WatchScoreMany for the members, each a round trip per node.
func (b *checkBatch) send(ctx context.Context, t conn.Transport) {
	if len(b.keys) > 0 {
		b.results = t.WatchReadMany(ctx, b.keys, b.results)
	}
	if len(b.members) > 0 {
		b.mresults = t.WatchScoreMany(ctx, b.members, b.mresults)
	}
}

// judgeLocked appends to refuted the holders read r proves lost, and
// returns what the read found for the key's waiters: found (a GET found
// the key; a sorted set always counts as free, as no read of ours can tell
// whether a permit is) or the read's error; h.mu is held.
func (h *pushHub) judgeLocked(refuted []*Lock, b *checkBatch, r holderRead) ([]*Lock, bool, error) {
	if !r.member {
		res := &b.results[r.result]
		if res.Err == nil {
			refuted = h.refutedLocked(refuted, r.key, b.judged[r.from:r.to], res.Token, res.Found)
		}
		return refuted, res.Found, res.Err
	}
	var err error
	for i, l := range b.judged[r.from:r.to] {
		res := &b.mresults[r.result+i]
		switch {
		case res.Err != nil:
			err = res.Err
		case !res.Found && h.holdsLocked(r.key, l):
			refuted = append(refuted, l)
		}
	}
	if r.from == r.to {
		err = b.mresults[r.result].Err
	}
	return refuted, false, err
}
