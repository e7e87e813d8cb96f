package dst

import (
	"time"
)

// takePushes moves the invalidations the engine of n queued for watcher
// connections onto their way back, in order, with the push faults; what
// is queued for any other client (none enables tracking) is dropped.
func (w *world) takePushes(n *node) {
	for _, id := range n.engine.PushTargets() {
		msgs := n.engine.TakePushes(id)
		c := n.byID[id]
		if c == nil || c.listener == nil || c.closed || c.abandoned {
			continue
		}
		for _, msg := range msgs {
			keys, flush, ok := parsePush(msg)
			switch {
			case !ok:
			case w.shouldDropPush():
				w.stats.PushesLost++
				w.trace.logf(w, c.proc, "", "fault: push to watcher id=%d lost", c.clientID)
			default:
				delay := w.between(w.opt.LatencyMin, w.opt.LatencyMax)
				if w.shouldDelayPush() {
					delay += w.between(0, w.opt.LeaseMax/2)
					w.trace.logf(w, c.proc, "", "fault: push to watcher id=%d delayed", c.clientID)
				}
				w.sendBack(c, answer{keys: keys, flush: flush}, delay)
			}
		}
	}
}

func (w *world) shouldDropPush() bool  { return w.chance(w.opt.DropPushPercent) }
func (w *world) shouldDelayPush() bool { return w.chance(w.opt.DelayPushPercent) }

// cron is the servers' active expiry (real servers run it in the
// background): every few milliseconds each node deletes the keys whose
// TTL passed and pushes their invalidations. It stops a while after the
// horizon, once pending work has had time to drain.
func (w *world) cron() {
	if w.now >= w.opt.Horizon+4*w.opt.LeaseMax {
		return
	}
	for _, n := range w.nodes {
		if !n.paused {
			n.engine.ExpireDue()
			w.takePushes(n)
		}
	}
	w.schedule(nil, w.now+w.between(5*time.Millisecond, 15*time.Millisecond), w.cron)
}
