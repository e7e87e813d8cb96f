//go:build !goredisadapter

package goredis

import (
	"slices"

	"github.com/respire-go/respire/lease"
)

// suiteQueued is leasesuite.Transport.Queued on go-redis: the commands
// waiting in the queues of the Locks' sessions for their drainer (behind
// the batch in flight), not yet taken and not given up by their callers,
// each as its arguments.
func suiteQueued(locks *lease.Locks) [][]string {
	t, ok := locks.Driver().Transport().(*Transport)
	if !ok {
		return nil
	}
	t.mu.Lock()
	sessions := make([]*session, 0, len(t.open))
	for s := range t.open {
		sessions = append(sessions, s)
	}
	t.mu.Unlock()
	var queued [][]string
	for _, s := range sessions {
		s.mu.Lock()
		for _, r := range s.queue {
			if r.state.Load() == stateQueued {
				for _, wc := range r.wires {
					queued = append(queued, slices.Clone(wc.want))
				}
			}
		}
		s.mu.Unlock()
	}
	return queued
}
