package main

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"

	"github.com/respire-go/respire/lease"
	"github.com/respire-go/respire/sim"
)

// fenced: worker-a's release is sent but its reply does not come back before
// worker-a stops waiting, so whether the delete ran is unknown. The lock is
// no longer held at once; Release returns once the fence answered (rule
// FenceBeforeReturn), not before. The connection that carried the delete is killed
// (CLIENT KILL ID … ADDR …, sent on another connection), so nothing still
// queued on it can run later, and a later Release answers NotOwned only once
// that kill has answered. The server holds the reply (a scripted fault).
func (s *stage) fenced(ctx context.Context) error {
	lock, err := s.a.locks.Acquire(ctx, lockKey, longLease)
	if err != nil {
		return fmt.Errorf("acquire: %w", err)
	}
	defer lock.Close()
	gate, fenceGate := make(chan struct{}), make(chan struct{})
	defer close(gate) // runs before lock.Close: the held reply is let go
	s.srv.Inject(sim.Fault{Kind: sim.DelayReply, Gate: gate, Match: isRelease})
	// The kill's answer is held too, to show that Release waits for it.
	s.srv.Inject(sim.Fault{Kind: sim.DelayReply, Gate: fenceGate, Match: isFence})
	letFenceGo := sync.OnceFunc(func() { close(fenceGate) })
	defer letFenceGo()
	mark := s.mark()
	releaseCtx, cancel := context.WithCancel(ctx)
	defer cancel()
	released := make(chan error, 1)
	go func() { _, err := lock.Release(releaseCtx); released <- err }()
	if err := s.waitFor(ctx, mark, "the release", isRelease); err != nil {
		return err
	}
	cancel() // the caller stops waiting once the delete has reached the server
	if err := s.waitFor(ctx, mark, "the fence", isFence); err != nil {
		return err
	}
	s.say("fenced", "worker-a Acquire(%v); the server holds the reply to its Release (a scripted fault)", longLease)
	s.say("", "worker-a stops waiting → Release waits for the fence: the delete may run until the kill answers,")
	s.say("", "state %v: the lock is no longer held; its session is being fenced", lock.State())
	letFenceGo()
	err = <-released
	if !errors.Is(err, lease.ErrOutcomeUnknown) || errors.Is(err, lease.ErrFencePending) {
		return fmt.Errorf("release: want an unknown outcome, fenced, got %v", err)
	}
	s.say("", "the kill answers → Release returns: the error matches lease.ErrOutcomeUnknown, state %v", lock.State())
	letFenceGo()
	mark = s.mark()
	outcome, err := lock.Release(ctx)
	if err != nil {
		return fmt.Errorf("release: %w", err)
	}
	fence := "before the fence answered (wrong)"
	if s.fencedSince(0) {
		fence = "once the session that carried the delete was killed with CLIENT KILL"
	}
	s.say("", "worker-a Release again → %v (no delete sent), answered %s", outcome, deletes(s.since(mark)))
	s.say("", "  %s", fence)
	return nil
}

// isFence reports whether args is a fence (CLIENT KILL ID … ADDR …, not the
// permission probe with SKIPME).
func isFence(args []string) bool {
	return len(args) >= 6 && strings.EqualFold(args[0], "CLIENT") && strings.EqualFold(args[1], "KILL") &&
		!slices.ContainsFunc(args, func(a string) bool { return strings.EqualFold(a, "SKIPME") })
}

// deletes describes how many release commands entries hold.
func deletes(entries []sim.Entry) string {
	n := 0
	for _, e := range entries {
		if isRelease(e.Args) {
			n++
		}
	}
	if n == 0 {
		return "after waiting for the fence"
	}
	return fmt.Sprintf("after %d delete(s) (wrong)", n)
}

// isRelease reports whether args is a release command (DELEX, DELIFEQ or
// the release script).
func isRelease(args []string) bool {
	name, ext := stepName(args)
	return name != "" && !ext
}

// fencedSince reports whether a fence (CLIENT KILL ID … ADDR …) was logged
// after mark.
func (s *stage) fencedSince(mark int64) bool {
	for _, e := range s.since(mark) {
		if len(e.Args) > 2 && strings.EqualFold(e.Args[0], "CLIENT") && strings.EqualFold(e.Args[1], "KILL") &&
			slices.ContainsFunc(e.Args, func(a string) bool { return strings.EqualFold(a, "ADDR") }) {
			return true
		}
	}
	return false
}
