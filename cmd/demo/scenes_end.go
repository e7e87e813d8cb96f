package main

import (
	"context"
	"fmt"
	"time"

	"github.com/respire-go/respire/lease"
)

// lost: the server's clock passes worker-b's lease, so the key expires on
// the server; worker-b's renewal is refused. Then worker-a holds a short
// lease with a keep-alive, the server clock passes it too, and the
// keep-alive context is cancelled with its cause: at once, since the
// expiry's invalidation push makes the holder read its key (read-refused).
func (s *stage) lost(ctx context.Context, lock *lease.Lock) error {
	s.clock.Advance(longLease + time.Second)
	s.say("lost", "server clock +%v: worker-b's lease expired on the server (PTTL: %s)", longLease+time.Second, s.pttl())
	mark := s.mark()
	ok, err := lock.ResetExpiry(ctx, longLease)
	if err != nil {
		return fmt.Errorf("reset expiry: %w", err)
	}
	s.note(mark, true)
	s.say("", "worker-b ResetExpiry(%v) → %v, state %v", longLease, ok, lock.State())
	mark = s.mark()
	outcome, err := lock.Release(ctx)
	if err != nil {
		return fmt.Errorf("release: %w", err)
	}
	s.say("", "worker-b Release → %v (%d commands sent)", outcome, len(s.since(mark)))
	return s.lostWithKeepAlive(ctx)
}

// lostWithKeepAlive: a keep-alive holder learns that its lease is gone
// from the expiry's invalidation push and the read that follows, without
// waiting for its next renewal.
func (s *stage) lostWithKeepAlive(ctx context.Context) error {
	lock, err := s.a.locks.Acquire(ctx, lockKey, shortLease, lease.WithKeepAlive())
	if err != nil {
		return fmt.Errorf("acquire: %w", err)
	}
	defer lock.Close()
	s.clock.Advance(shortLease + time.Millisecond)
	s.say("", "worker-a Acquire(%v, WithKeepAlive()); server clock +%v: expired on the server", shortLease, shortLease+time.Millisecond)
	kctx := lock.Context()
	select {
	case <-kctx.Done():
	case <-ctx.Done():
		return fmt.Errorf("waiting for the keep-alive to notice: %w", context.Cause(ctx))
	}
	s.say("", "worker-a lock.Context() cancelled, context.Cause = %s", causeText(kctx))
	outcome, err := lock.Release(ctx)
	if err != nil {
		return fmt.Errorf("release: %w", err)
	}
	s.say("", "worker-a state %v, Release → %v", lock.State(), outcome)
	return nil
}

// released: worker-a takes the lock with a keep-alive and releases it twice.
func (s *stage) released(ctx context.Context) error {
	lock, err := s.a.locks.Acquire(ctx, lockKey, longLease, lease.WithKeepAlive())
	if err != nil {
		return fmt.Errorf("acquire: %w", err)
	}
	mark := s.mark()
	first, err := lock.Release(ctx)
	if err != nil {
		lock.Close()
		return fmt.Errorf("release: %w", err)
	}
	s.note(mark, false)
	s.say("released", "worker-a Acquire(%v, WithKeepAlive()) then Release → %v, server PTTL %s", longLease, first, s.pttl())
	s.say("", "worker-a lock.Context() cancelled, context.Cause = %s", causeText(lock.Context()))
	mark = s.mark()
	again, err := lock.Release(ctx)
	if err != nil {
		return fmt.Errorf("release: %w", err)
	}
	s.say("", "worker-a Release again → %v (%d commands sent); Close → %v", again, s.sessionCommands(mark), lock.Close())
	return nil
}
