package conn

import (
	"context"
	"errors"
	"fmt"
)

// GuardConfirmScript re-writes a guarded write's write-id record with the
// same value and TTL (KEYS[1] = the record; ARGV[1] = the write id) if it
// still holds that id: a write of nothing new, so that the connection that
// runs it has a replication offset at or past the guarded write's (which
// ran before it), for the WAIT that follows it there. Replies: 1 = the
// record holds the id (and was re-written), 0 = it does not (nothing
// written: the lease ended, or a later write of the lock replaced it).
const GuardConfirmScript = "if redis.call('get', KEYS[1]) ~= ARGV[1] then return 0 end\n" +
	"redis.call('set', KEYS[1], ARGV[1], 'KEEPTTL')\n" +
	"return 1"

// GuardConfirmScriptSHA is the SHA1 of GuardConfirmScript.
const GuardConfirmScriptSHA = "aa49e18b2ced989f8394f15f0a7c023755bac511"

// GuardConfirmOp runs GuardConfirmScript on recordKey for writeID
// (Result.Owned: the record held it and was re-written).
func GuardConfirmOp(recordKey, writeID string) Op {
	return primitiveOp(&primitiveCall{name: guardConfirmOp, kind: primOwned, script: GuardConfirmScript,
		sha: GuardConfirmScriptSHA, keys: []string{recordKey}, args: []string{writeID}})
}

const guardConfirmOp = "guard-confirm"

// ErrGuardRecordChanged is the Definite cause of a replication check whose
// write-id record no longer held the write's id (GuardConfirmScript
// answered 0): WAIT, sent after it, counts nothing about the guarded write.
var ErrGuardRecordChanged = errors.New("the write-id record no longer holds the guarded write's id")

// GuardReplicator is what a Transport implements to offer WAIT after a
// guarded write (lease's GuardWith with Replicas); *Pool and package
// goredis' Transport do, the simulator's transport does not.
type GuardReplicator interface {
	// ConfirmGuardReplicated runs GuardConfirmOp(recordKey, writeID) and
	// WAIT replicas waitMillis, pipelined on one dedicated connection to
	// the primary of recordKey's slot, and returns WAIT's count. WAIT waits
	// for the replication offset of its connection's last write, which is
	// the re-write of the record, after the guarded write: so the count is
	// of replicas that have the guarded write too. Errors are *Error
	// values: NotSubmitted (replicas < 1 or waitMillis < 1:
	// ErrInvalidWait; stop already ended: ErrWaitStopped; a dial failure),
	// Definite (the record no longer held the id: ErrGuardRecordChanged; a
	// server error reply to the script or to WAIT), Uncertain (the
	// connection failed or ctx or stop ended on the way; the re-write is
	// harmless, so nothing needs settling). stop ending closes the
	// connection at once.
	ConfirmGuardReplicated(ctx, stop context.Context, recordKey, writeID string, replicas, waitMillis int64) (int64, error)
}

// checkWaitArgs refuses, before anything is sent, a WAIT that would not
// wait (replicas < 1) or would block forever (waitMillis < 1), or whose
// stop already ended.
func checkWaitArgs(op string, stop context.Context, replicas, waitMillis int64) error {
	if replicas < 1 || waitMillis < 1 {
		return &Error{Class: NotSubmitted, Op: op,
			Err: fmt.Errorf("%w (got %d replicas, %d ms)", ErrInvalidWait, replicas, waitMillis)}
	}
	if stop.Err() != nil {
		return &Error{Class: NotSubmitted, Op: op, Err: ErrWaitStopped}
	}
	return nil
}

// ConfirmGuardReplicated implements GuardReplicator on the pool's client
// (client.Dedicate(); in cluster mode the connection binds to the primary
// of the record's slot), as AcquireFencedReplicated does for the fenced
// script: EVALSHA and WAIT in one round trip, EVAL and WAIT in a second one
// after NOSCRIPT.
func (p *Pool) ConfirmGuardReplicated(ctx, stop context.Context, recordKey, writeID string, replicas,
	waitMillis int64) (int64, error) {
	if err := checkWaitArgs(guardConfirmOp, stop, replicas, waitMillis); err != nil {
		return 0, err
	}
	if err := ctx.Err(); err != nil {
		return 0, &Error{Class: NotSubmitted, Op: guardConfirmOp, Err: err}
	}
	dedicated, giveBack := p.client.Dedicate()
	healthy := false
	unwatch := watchStop(stop, dedicated.Close)
	defer func() {
		switch {
		case !unwatch():
		case healthy:
			giveBack()
		default:
			dedicated.Close()
		}
	}()
	call, _ := GuardConfirmOp(recordKey, writeID).ScriptCall()
	for {
		b := dedicated.B()
		cmd := call.Command()
		results := dedicated.DoMulti(ctx, b.Arbitrary(cmd.Args[:cmd.Key]...).Keys(cmd.Args[cmd.Key]).
			Args(cmd.Args[cmd.Key+1:]...).Build(), b.Wait().Numreplicas(replicas).Timeout(waitMillis).Build())
		healthy = results[0].NonRedisError() == nil && results[1].NonRedisError() == nil
		if err := results[0].NonRedisError(); err != nil {
			return 0, &Error{Class: ClassifyTransport(err), Op: guardConfirmOp, Err: stopCause(stop, err)}
		}
		reply, redisErr := toReply(results[0])
		out := call.Interpret(reply)
		switch {
		case !out.Done:
			continue // NOSCRIPT: the script did not run (WAIT counted nothing of ours); EVAL it
		case out.Err != nil || out.Redirect != nil:
			se := out.Err
			if se == nil {
				se = newServerError("MOVED " + out.Redirect.Addr)
			}
			return 0, definite(guardConfirmOp, "", nil, se, redisErr)
		case !out.Owned:
			return 0, &Error{Class: Definite, Op: guardConfirmOp, Err: ErrGuardRecordChanged}
		}
		return waitOutcome(results[1])
	}
}
