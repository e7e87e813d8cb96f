package dst

import (
	"strings"
	"time"

	"github.com/respire-go/respire/actor"
	"github.com/respire-go/respire/conn"
)

// Invariant 12's other half, on the server, in fault-free liveness
// schedules: no reader is admitted while a writer waits with its marker
// set. A waiting writer refreshes its marker with every try (every retry
// interval, its lease three intervals and a second), so without faults
// the marker lasts until the writer takes the lock (its try answers 1) or
// deletes the marker (it gives up, or it abandons the try's token for a
// fresh one); a reader admitted in between found the writer key empty
// while the writer still waited — readers that keep coming would starve
// it.

// waitingWriter is a writer whose try set its waiting marker.
type waitingWriter struct {
	h     *handle
	token string        // the try's owner token (the marker is "waiting:" + token)
	since time.Duration // true time the marker was first set
}

// trackMarker follows the waiting markers: a write acquisition answered 2
// (waiting) sets its writer's, one answered 1 and the deletion of a marker
// end it.
func (k *checker) trackMarker(w *world, op *opRun, reply conn.Reply) {
	if !w.opt.Liveness || reply.Kind != conn.ReplyInt {
		return
	}
	switch {
	case op.name == "write-acquire" && reply.Int == 2:
		for _, m := range k.markers {
			if m.token == op.token {
				return
			}
		}
		p := w.primitiveOf(op.key)
		if p == nil {
			return
		}
		h := op.proc.current[p.name]
		if h != nil && h.spec.Kind == actor.KindWrite && h.outcome == "" {
			k.markers = append(k.markers, waitingWriter{h: h, token: op.token, since: w.now})
		}
	case op.name == "write-acquire" && reply.Int == 1:
		k.dropMarker(op.token)
	case op.name == "release" && strings.HasPrefix(op.token, conn.WaitingMarkerPrefix):
		k.dropMarker(strings.TrimPrefix(op.token, conn.WaitingMarkerPrefix))
	}
}

// dropMarker forgets the marker of token.
func (k *checker) dropMarker(token string) {
	for i, m := range k.markers {
		if m.token == token {
			k.markers = append(k.markers[:i], k.markers[i+1:]...)
			return
		}
	}
}

// checkAdmission is invariant 12 when a reader was admitted: no writer may
// be waiting with its marker set.
func (k *checker) checkAdmission(w *world, reader *opRun) {
	for _, m := range k.markers {
		if m.h.outcome == "" {
			k.fail(w, 12, "reader %s admitted while writer %s waited with its marker set since %.3fms",
				tokenName(reader.token), m.h.name, float64(m.since)/1e6)
			return
		}
	}
}
