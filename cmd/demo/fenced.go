package main

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"

	"github.com/respire-go/respire/conn"
	"github.com/respire-go/respire/sim"
)

// fenced: worker-a's release is sent but its reply does not come back before
// worker-a stops waiting, so whether the delete ran is unknown. The lock
// counts as lost and the connection that carried the delete is killed
// (CLIENT KILL ID … ADDR …, sent on another connection), so nothing still
// queued on it can run later. The server holds the reply (a scripted fault).
func (s *stage) fenced(ctx context.Context) error {
	lock, err := s.a.locks.Acquire(ctx, lockKey, longLease)
	if err != nil {
		return fmt.Errorf("acquire: %w", err)
	}
	defer lock.Close()
	gate := make(chan struct{})
	defer close(gate) // runs before lock.Close: the held reply is let go
	s.srv.Inject(sim.Fault{Kind: sim.DelayReply, Gate: gate, Match: isRelease})
	mark := s.mark()
	releaseCtx, cancel := context.WithCancel(ctx)
	defer cancel()
	watched := make(chan struct{})
	go func() { // the caller stops waiting once the delete has reached the server
		defer close(watched)
		_ = s.waitFor(releaseCtx, mark, "the release", isRelease)
		cancel()
	}()
	_, err = lock.Release(releaseCtx)
	cancel()
	<-watched
	if !errors.Is(err, conn.ErrOutcomeUnknown) {
		return fmt.Errorf("release: want an unknown outcome, got %v", err)
	}
	fence := "is being fenced"
	if s.fencedSince(mark) {
		fence = "was killed with CLIENT KILL before Release returned"
	}
	s.say("fenced", "worker-a Acquire(%v); the server holds the reply to its Release (a scripted fault)", longLease)
	s.say("", "worker-a stops waiting → the error matches conn.ErrOutcomeUnknown, state %v,", lock.State())
	s.say("", "and the session that carried the delete %s", fence)
	mark = s.mark()
	outcome, err := lock.Release(ctx)
	if err != nil {
		return fmt.Errorf("release: %w", err)
	}
	s.say("", "worker-a Release again → %v (%d commands sent)", outcome, len(s.since(mark)))
	return nil
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
