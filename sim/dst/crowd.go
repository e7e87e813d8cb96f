package dst

import (
	"context"
	"time"

	"github.com/respire-go/respire/actor"
)

// The crowd (Options.Crowd): beside the user's handle of a mutex key, a
// process runs up to Crowd more acquisitions of it at once, as a service's
// workers would. Each waits (a budget, or the liveness budget), holds the
// key for a while, and releases it; while one of the process's handles
// holds the key the others are parked on it, so its release hands the key
// over in the same command (rule PushHandsOverWithinOneLocks). Every
// invariant judges them as it judges the user's handles.

// crowdThink is the crowd's part of a user decision on the key of
// keyIndex (h: the user's handle of it): a held crowd handle is released,
// or, while h is live, one more joins. It reports whether it decided.
func (w *world) crowdThink(p *process, keyIndex int, h *handle) bool {
	if w.opt.Crowd == 0 {
		return false
	}
	for _, c := range p.crowd {
		if c.lock != nil && !w.hasCall(c) && !w.finished(c) && w.now-c.acquiredAt >= w.opt.LeaseMin/4 {
			w.close(c)
			return true
		}
	}
	p.crowd = w.unfinished(p.crowd)
	if h == nil || w.finished(h) || len(p.crowd) >= w.opt.Crowd || w.rng.IntN(2) == 0 {
		return false
	}
	w.crowdAcquire(p, keyIndex)
	return true
}

// crowdAcquire starts one crowd acquisition of the key of keyIndex: a
// plain waiting lease, with or without a keep-alive.
func (w *world) crowdAcquire(p *process, keyIndex int) {
	c := w.newHandle(p, keyIndex)
	p.crowd = append(p.crowd, c)
	c.spec = actor.AcquireSpec{WireKey: c.key, TTL: w.leaseTTL(), RetryEvery: 5 * time.Millisecond, RetryEverySet: true,
		Wait: w.between(50*time.Millisecond, 300*time.Millisecond)}
	if w.opt.Liveness {
		c.spec.Wait = w.livenessBudget()
	}
	c.spec.KeepAlive = !w.opt.Liveness && w.rng.IntN(3) == 0
	w.call(c, callAcquire, func(ctx context.Context) string {
		lock, err := p.driver.Acquire(ctx, c.spec)
		if lock != nil {
			w.stats.CrowdAcquired++
		}
		return w.acquired(c, lock, err, false)
	})
}

// crowdDrain releases what the crowd holds after the horizon, and reports
// whether any of it is busy.
func (w *world) crowdDrain(p *process) bool {
	busy := false
	for _, c := range p.crowd {
		if w.finished(c) {
			continue
		}
		busy = true
		if !w.hasCall(c) && c.lock != nil {
			w.close(c)
		}
	}
	return busy
}

// unfinished returns the handles of hs the user is not done with.
func (w *world) unfinished(hs []*handle) []*handle {
	out := hs[:0]
	for _, h := range hs {
		if !w.finished(h) {
			out = append(out, h)
		}
	}
	return out
}
