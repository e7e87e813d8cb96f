package dst

import (
	"bytes"
	"strconv"
	"time"
)

// takePushes moves the invalidations the engine of n queued for watcher
// connections onto their way back, in order, with the push faults; what
// is queued for any other client (none enables tracking) is dropped.
func (w *world) takePushes(n *node) {
	for _, id := range n.engine.PushTargets() {
		msgs := n.engine.TakePushes(id)
		c := n.watchers[id]
		if c == nil || c.closed || c.abandoned {
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

// invalidatePush is the head of a RESP3 tracking invalidation.
var invalidatePush = []byte(">2\r\n$10\r\ninvalidate\r\n")

// parsePush reads a RESP3 invalidation: its keys, or flush for the null
// that means everything; ok is false for any other message.
func parsePush(msg []byte) (keys []string, flush, ok bool) {
	rest, ok := bytes.CutPrefix(msg, invalidatePush)
	if !ok {
		return nil, false, false
	}
	if len(rest) == 0 || rest[0] != '*' {
		return nil, true, true // "_": a flush
	}
	line, rest, _ := bytes.Cut(rest[1:], []byte("\r\n"))
	n, err := strconv.Atoi(string(line))
	for ; err == nil && n > 0 && len(rest) > 0 && rest[0] == '$'; n-- {
		line, rest, _ = bytes.Cut(rest[1:], []byte("\r\n"))
		size, err := strconv.Atoi(string(line))
		if err != nil || size < 0 || size+2 > len(rest) {
			break
		}
		keys = append(keys, string(rest[:size]))
		rest = rest[size+2:]
	}
	return keys, false, true
}

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
