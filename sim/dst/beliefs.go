package dst

import (
	"context"
	"time"

	"github.com/respire-go/respire/actor"
)

// This file is the checker's half that reads the driver's beliefs after
// every step: invariants 1, 4, 8 and 9.

// afterStep checks the keys (invariant 8) and every handle that may still
// hold or keep alive a lease. A handle whose acquisition was answered and
// whose lock ended without a live keep-alive or context can never hold
// again and is no longer checked.
func (k *checker) afterStep(w *world) {
	owners := k.owners[:0]
	for _, key := range w.keys {
		owners = append(owners, w.keyState(key))
	}
	k.owners = owners
	for i, key := range w.keys {
		if o := owners[i]; o.found && k.cleaned[o.token] == key {
			k.fail(w, 8, "%s holds %s, whose ordered release (an abandoned acquisition's clean-up, or a release) answered",
				key, tokenName(o.token))
			return
		}
	}
	live := w.live[:0]
	for _, h := range w.live {
		if h.outcome != "" && w.over(h) {
			continue
		}
		live = append(live, h)
		if !w.done && h.lock != nil {
			k.checkHandle(w, h, k.ownerOf(w, h))
		}
	}
	clear(w.live[len(live):])
	w.live = live
	if !w.done && len(w.prims) > 0 {
		k.checkPrimitives(w)
	}
	if !w.done && len(k.fair.checkOrder) > 0 {
		k.checkFairWakeUps(w)
	}
}

// over reports whether h's lock can never hold or keep anything alive
// again: never acquired, or ended with nothing live. (State is read only
// once the lease is not held, so that reading it steps nothing.)
func (w *world) over(h *handle) bool {
	l := h.lock
	if l == nil {
		return true
	}
	if _, held := l.LeaseDeadline(); held || w.keepAliveLive(h) || contextLive(h.ctx) {
		return false
	}
	return l.State().Terminal()
}

// keepAliveLive reports whether a keep-alive of h runs: one the user
// started, or the one its acquisition started.
func (w *world) keepAliveLive(h *handle) bool {
	if h.kept != nil && h.kept.Err() == nil {
		return true
	}
	return h.spec.KeepAlive && h.lock.KeepAliveRunning() && h.lock.OwnedKeepAliveErr() == nil
}

// contextLive reports whether ctx exists and its Done is not closed (no
// side effect: Err of the lock's context would end a lease that ran out).
func contextLive(ctx context.Context) bool {
	if ctx == nil {
		return false
	}
	select {
	case <-ctx.Done():
		return false
	default:
		return true
	}
}

// driftMargin is how much later than the truth a lease estimate of p may
// end: a clock running slow by d ppm stretches a lease of at most LeaseMax
// by d ppm of it (a fast clock errs on the safe side). One millisecond more
// covers the servers' whole-millisecond TTLs.
func (w *world) driftMargin(p *process) time.Duration {
	return time.Duration(max(0, -p.driftPPM)*int64(w.opt.LeaseMax)/1_000_000) + time.Millisecond
}

// ownerOf is the server's owner of h's key this step: of a mutex key, or
// of a writer key (a permit's or read hold's is judged by its member).
func (k *checker) ownerOf(w *world, h *handle) keyState {
	if h.keyIndex >= 0 {
		return k.owners[h.keyIndex]
	}
	if h.spec.Kind == actor.KindWrite {
		return w.keyState(h.key)
	}
	return keyState{}
}

// checkHandle checks invariants 1, 4 and 9 for one acquired handle.
func (k *checker) checkHandle(w *world, h *handle, owner keyState) {
	p, l := h.proc, h.lock
	margin, local := w.driftMargin(p), p.local(w.now)
	deadline, held := l.LeaseDeadline()
	_, overwritten := k.outsiders[owner.token]
	owned := owner.found && owner.token == h.token
	if h.spec.Kind == actor.KindPermit || h.spec.Kind == actor.KindRead {
		owned, overwritten = k.members.live(w, h.token), false
		if !owned {
			owner = keyState{} // "none": no live member of its token
		}
	}
	if held && local < deadline-margin && !owned && !overwritten {
		k.fail(w, 1, "%s (%s) believes it holds %s for %s more, but the server's owner is %s",
			h.name, l.State(), h.key, deadline-local, w.ownerName(owner))
		return
	}
	end, known := k.expiry[h.token]
	if known && w.now > end+margin && !p.paused && !w.overdue(p) {
		switch {
		case h.kept != nil && h.kept.Err() == nil:
			k.fail(w, 4, "%s's keep-alive is live %s after its server-side lease ended (%s)", h.name, w.now-end, l.State())
			return
		case contextLive(h.ctx):
			k.fail(w, 4, "%s's context is live %s after its server-side lease ended (%s)", h.name, w.now-end, l.State())
			return
		}
	}
	since, ok := k.outsiders[owner.token]
	since = max(since, h.keptSince) // a keep-alive started later is watched from then on
	if ok && w.opt.pushProbe() && held && w.keepAliveLive(h) && w.now > since+w.pushBound() {
		k.fail(w, 9, "%s (%s, keep-alive running, push %v) still believes it holds %s %s after an outsider overwrote it",
			h.name, l.State(), !w.opt.WithoutPush, h.key, w.now-since)
	}
}

// pushBound is how long a keep-alive holder may take to learn that an
// outsider overwrote its key, with push on and nothing delaying it: the
// invalidation's trip, and at most two owner-compared reads (one may have
// been in flight, re-arming the tracking, when the overwrite ran).
func (w *world) pushBound() time.Duration {
	return 8*w.opt.LatencyMax + time.Millisecond
}

// overdue reports whether p has an event it has not yet had the chance to
// run (it was paused): its timers catch up first.
func (w *world) overdue(p *process) bool {
	for _, ev := range w.events {
		if ev.proc == p && !ev.cancelled && ev.due <= w.now {
			return true
		}
	}
	return false
}
