package dst

import (
	"context"
	"errors"

	"github.com/respire-go/respire/actor"
	"github.com/respire-go/respire/conn"
	sm "github.com/respire-go/respire/statemachine"
)

// Guarded writes in the simulation (Options.Guarded): a holder of a mutex
// key (plain or fenced) makes, among its other calls, guarded writes
// through the shipped driver (actor.Lock.Guard): an INCR of the key's data
// counter "{key}:data", sent as conn's guard script, which also keeps the
// write-id record "{key}:guard" and, for a fenced lock, the fence record
// "{key}:fence:guarded" (all in the key's slot). Invariant 14 watches every
// run of the script on the servers: it may write only while the lease key
// holds the writer's token — no guarded write lands after another owner
// acquired the lock (or after an outsider overwrote it). A refusal ends
// the handle (statemachine's guard-refused), which invariant 1 then sees.

// guardName is the Op name of guarded writes (conn.GuardOp).
const guardName = "guarded-write"

// dataKey is the counter a key's holders write through guarded writes.
func dataKey(key string) string { return "{" + key + "}:data" }

// guardKeys are the keys a lock key's guarded writes touch besides it: the
// data counter, the write-id record and the fence record (copied with the
// key by failovers and slot moves).
func guardKeys(key string) []string {
	return []string{dataKey(key), conn.GuardRecordKey(key), conn.GuardFenceKey(counterKey(key))}
}

// guardWrite makes one guarded write on h's lock, as a user call.
func (w *world) guardWrite(h *handle) {
	l := h.lock
	w.call(h, callGuard, func(ctx context.Context) string {
		err := l.Guard(ctx, actor.Guarded{Writes: [][]string{{"INCR", dataKey(h.key)}}})
		switch {
		case err == nil:
			w.stats.GuardedWrites++
			return "written"
		case errors.Is(err, sm.ErrOwnershipLost) && !errors.Is(err, sm.ErrNotHeld):
			w.stats.GuardRefusals++
		case errors.Is(err, actor.ErrNotWritten):
			w.stats.GuardNotWritten++
		case errors.Is(err, conn.ErrOutcomeUnknown):
			w.stats.GuardUnknown++
		}
		return "error" + errText(err)
	})
}

// afterGuardExec is invariant 14, checked each time a server ran a
// guarded-write script (the reply says whether its writes ran): the lease
// key held the script's token when it ran (before: the key as it stood).
func (k *checker) afterGuardExec(w *world, r *request, before keyState, reply conn.Reply) {
	op := r.op
	if op == nil || op.name != guardName {
		return
	}
	owned := before.found && before.token == op.token
	if !owned {
		w.stats.StaleGuards++
	}
	if reply.Kind == conn.ReplyInt && reply.Int == 1 && !owned {
		k.fail(w, 14, "a guarded write of %s (op %d) ran on %s while %s's owner was %s",
			tokenName(op.token), op.id, r.conn.label(), op.key, w.ownerName(before))
	}
}
