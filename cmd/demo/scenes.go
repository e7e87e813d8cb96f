package main

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/respire-go/respire/lease"
)

// The leases the scenes use. Short ones are for the keep-alive scenes: a
// keep-alive renews at about half the lease, in real time.
const (
	longLease  = 30 * time.Second
	shortLease = 3 * time.Second
)

// acquired: worker-a takes the lock.
func (s *stage) acquired(ctx context.Context) (*lease.Lock, error) {
	lock, err := s.a.locks.Acquire(ctx, lockKey, longLease)
	if err != nil {
		return nil, fmt.Errorf("acquire: %w", err)
	}
	s.say("acquired", "worker-a Acquire(%q, %v) → state %v, server PTTL %s", lockKey, longLease, lock.State(), s.pttl())
	return lock, nil
}

// renewed: worker-a resets the expiry by hand, then lets a keep-alive renew
// a short lease in the background until one renewal has gone through.
func (s *stage) renewed(ctx context.Context, lock *lease.Lock) error {
	mark := s.mark()
	ok, err := lock.ResetExpiry(ctx, time.Minute)
	if err != nil {
		return fmt.Errorf("reset expiry: %w", err)
	}
	s.note(mark, true)
	s.say("renewed", "worker-a ResetExpiry(1m) → %v, server PTTL %s", ok, s.pttl())
	if _, err = lock.ResetExpiry(ctx, shortLease); err != nil {
		return fmt.Errorf("reset expiry: %w", err)
	}
	mark = s.mark()
	ka, err := lock.KeepAlive(ctx)
	if err != nil {
		return fmt.Errorf("keep-alive: %w", err)
	}
	if err := s.waitFor(ctx, mark, "a keep-alive renewal", isExtension); err != nil {
		ka.Stop()
		return err
	}
	ka.Stop() // waits for the renewal in flight; the lock stays held
	s.note(mark, true)
	s.say("", "worker-a ResetExpiry(%v) + KeepAlive: renewed in the background, server PTTL %s", shortLease, s.pttl())
	s.say("", "worker-a KeepAlive.Stop → cause %s; lock still %v", causeText(ka.Context()), lock.State())
	if _, err = lock.ResetExpiry(ctx, longLease); err != nil {
		return fmt.Errorf("reset expiry: %w", err)
	}
	return nil
}

// contended: worker-b finds the lock taken, then waits for it while
// worker-a releases it. It returns worker-b's lock.
func (s *stage) contended(ctx context.Context, held *lease.Lock) (*lease.Lock, error) {
	attempt, err := s.b.locks.TryAcquire(ctx, lockKey, longLease)
	if err != nil {
		return nil, fmt.Errorf("try acquire: %w", err)
	}
	s.say("contended", "worker-b TryAcquire → Acquired() = %v (worker-a holds it)", attempt.Acquired())
	type result struct {
		lock *lease.Lock
		err  error
	}
	done := make(chan result, 1)
	mark := s.mark()
	go func() {
		lock, err := s.b.locks.Acquire(ctx, lockKey, longLease,
			lease.WithWait(5*time.Second), lease.WithRetryEvery(100*time.Millisecond))
		done <- result{lock, err}
	}()
	if err := s.waitFor(ctx, mark, "worker-b's first poll", isAcquire); err != nil {
		return nil, errors.Join(err, (<-done).err)
	}
	s.say("", "worker-b Acquire(WithWait(5s), WithRetryEvery(100ms)) is polling …")
	mark = s.mark()
	outcome, err := held.Release(ctx)
	s.note(mark, false)
	got := <-done
	if err != nil || got.err != nil {
		if got.lock != nil {
			got.lock.Close()
		}
		return nil, errors.Join(err, got.err)
	}
	s.say("", "worker-a Release → %v", outcome)
	s.say("", "worker-b Acquire returned after the release → state %v", got.lock.State())
	return got.lock, nil
}
