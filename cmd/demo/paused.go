package main

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/respire-go/respire/coordination"
)

// The keys of the paused scene: a fencing-token lock's lease and its
// persistent counter, with one hash tag so that they share a cluster slot.
const (
	invoiceLease   = "{invoice:42}:lease"
	invoiceCounter = "{invoice:42}:fence"
)

// invoiceStore is the resource the paused scene protects, as
// docs/fencing.md asks of one: with every write it checks the writer's
// fencing token, accepts it when it is at least the largest it accepted
// (so one holder may write repeatedly) and remembers the largest; a
// smaller token is a holder that lost the lock, and its write is refused.
// One goroutine uses it; a real store checks and writes in one atomic step.
type invoiceStore struct {
	largest int64  // the largest fencing token accepted; 0 before any write
	total   string // the invoice's content, as the latest accepted write left it
}

// errStaleToken is the store's refusal of a token below the largest it
// accepted.
var errStaleToken = errors.New("stale fencing token")

// WriteIfNewer stores total if token is at least the largest accepted.
func (st *invoiceStore) WriteIfNewer(token int64, total string) error {
	if token < st.largest {
		return fmt.Errorf("%w: token %d < %d, the largest accepted", errStaleToken, token, st.largest)
	}
	st.largest, st.total = token, total
	return nil
}

// paused: worker-a takes a fencing-token lock, checks that it still holds
// it and, about to write, is paused (a GC, swap, SIGSTOP) past its lease.
// The demo stands for the pause by moving the server's clock instead of
// stopping worker-a, so the story is the same on every run: the lease
// expires on the server while worker-a, by its own clock, has not moved.
// worker-b takes the lock with the next token and writes; worker-a resumes
// and writes with its old token, which the store refuses.
func (s *stage) paused(ctx context.Context) error {
	coordA, errA := coordination.New(s.a.locks)
	coordB, errB := coordination.New(s.b.locks)
	if err := errors.Join(errA, errB); err != nil {
		return err
	}
	lockA, err := coordA.Acquire(ctx, invoiceLease, invoiceCounter, longLease)
	if err != nil {
		return fmt.Errorf("fenced acquire: %w", err)
	}
	defer lockA.Close()
	s.say("paused", "worker-a Acquire(%q, %q, %v) → fencing token %d", invoiceLease, invoiceCounter, longLease, lockA.FencingToken())
	s.say("", "worker-a lock.Context().Err() = %v: it holds the lock and is about to write … when it is paused", lockA.Context().Err())
	s.clock.Advance(longLease + time.Second)
	s.say("", "server clock +%v while worker-a is paused (GC, swap, SIGSTOP): its lease expired (PTTL: %s)",
		longLease+time.Second, s.pttlOf(invoiceLease))
	lockB, err := coordB.Acquire(ctx, invoiceLease, invoiceCounter, longLease)
	if err != nil {
		return fmt.Errorf("fenced acquire: %w", err)
	}
	defer lockB.Close()
	store := &invoiceStore{}
	s.say("", "worker-b Acquire(the same keys) → fencing token %d; store.WriteIfNewer(%d, %q) → %s",
		lockB.FencingToken(), lockB.FencingToken(), "total=120", writeResult(store.WriteIfNewer(lockB.FencingToken(), "total=120")))
	s.say("", "worker-a resumes: store.WriteIfNewer(%d, %q) → %s",
		lockA.FencingToken(), "total=100", writeResult(store.WriteIfNewer(lockA.FencingToken(), "total=100")))
	outA, errA := lockA.Release(ctx)
	outB, errB := lockB.Release(ctx)
	if err := errors.Join(errA, errB); err != nil {
		return fmt.Errorf("release: %w", err)
	}
	s.say("", "the store keeps %q (token %d); worker-a Release → %v, worker-b Release → %v", store.total, store.largest, outA, outB)
	return nil
}

// writeResult tells what the store answered a write.
func writeResult(err error) string {
	if err == nil {
		return "accepted"
	}
	return "refused: " + strings.TrimPrefix(err.Error(), errStaleToken.Error()+": ")
}
