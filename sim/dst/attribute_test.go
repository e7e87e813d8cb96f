package dst

import (
	"context"
	"testing"

	"github.com/respire-go/respire/conn"
)

// TestUncertainWriteNeverReplayed_TheCheckerAttributesADrainedCommandByItsConnection:
// a command a drainer writes under its own ctx is attributed to the
// operation that handed it to that connection. An owner read (GET, no
// token) handed to a link that was retired before writing it, then retried
// on a fresh session, must not take the place of another owner read handed
// to the fresh connection first: matched first-in-first-out per process,
// the other read's GET would count as the retried op's second send (seeds
// 5685 and 17336 of TestSimulate reported invariant 3 so).
func TestUncertainWriteNeverReplayed_TheCheckerAttributesADrainedCommandByItsConnection(t *testing.T) {
	w, p := quietWorld(t)
	inTask(w, p, func() {
		stale, fresh := dialIn(t, p), dialIn(t, p)
		ctx1, end1 := p.opStarted(context.Background(), conn.OwnerOp("lock:1"))
		ctx2, end2 := p.opStarted(context.Background(), conn.OwnerOp("lock:1"))
		retried, other := opsOf(ctx1)[0], opsOf(ctx2)[0]
		get := conn.OwnerCommand("lock:1")
		p.handedOff(ctx1, stale, "GET") // its link is retired before writing it: never written
		p.handedOff(ctx2, fresh, "GET")
		if op, late := p.attribute(context.Background(), get, false, fresh.c); op != other || late {
			t.Errorf("the GET written on the connection op %d handed it to went to op %d (late %v)",
				other.id, opID(op), late)
		}
		p.handedOff(ctx1, fresh, "GET") // the retry on the fresh session
		if op, late := p.attribute(context.Background(), get, false, fresh.c); op != retried || late {
			t.Errorf("the retried GET went to op %d (late %v); want op %d", opID(op), late, retried.id)
		}
		end1(nil)
		end2(nil)
		stale.Close()
		fresh.Close()
	})
	if v := w.check.violations; len(v) > 0 {
		t.Errorf("violations: %v", v)
	}
}

// opID is op's id, 0 for none.
func opID(op *opRun) int64 {
	if op == nil {
		return 0
	}
	return op.id
}
