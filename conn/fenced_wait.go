package conn

import (
	"context"
	"errors"
	"fmt"

	"github.com/redis/rueidis"
)

// ErrInvalidWait is the cause (NotSubmitted) when AcquireFencedReplicated is
// asked for fewer than 1 replica or a WAIT timeout under 1 ms. WAIT 0
// would not wait at all and a WAIT timeout of 0 blocks forever, so neither
// is allowed.
var ErrInvalidWait = errors.New("WAIT needs at least 1 replica and a timeout of at least 1 ms")

// ReplicatedFencedResult is the answer of AcquireFencedReplicated: the
// script's result and, when the lease was acquired, what WAIT said about the
// script's write.
type ReplicatedFencedResult struct {
	FencedResult
	// Acknowledged is WAIT's reply when Acquired and WaitErr is nil: the
	// number of replicas that acknowledged every write of the connection
	// that ran the script, its counter increment included. It can be lower
	// than the number asked for (WAIT timed out) and higher (WAIT answers
	// with every replica that had acknowledged).
	Acknowledged int64
	// WaitErr is set when Acquired and WAIT gave no count: a *Error that is
	// Definite (an error reply, or a reply that is not a non-negative
	// integer; Code "PROTOCOL") or Uncertain (the connection failed after
	// the script's reply arrived). Either way the increment's replication
	// is unknown.
	WaitErr error
}

// AcquireFencedReplicated is AcquireFenced followed by WAIT replicas
// waitMillis on the same connection: it takes a dedicated connection
// (client.Dedicate(); in cluster mode it binds to the primary of the keys'
// slot), pipelines EVALSHA and WAIT in one round trip (after the definite
// NOSCRIPT reply, EVAL and WAIT in a second one) and hands the connection
// back to rueidis' pool, or closes it when a reply was lost. WAIT waits for
// the replication offset the server recorded for its connection when the
// previous command there finished, which is why it must follow the script
// on the script's connection: on a connection last used before the script
// it can count a replica that never received the increment.
//
// It blocks for the round trip(s); WAIT holds the reply for up to
// waitMillis while fewer than replicas replicas have acknowledged, so give
// ctx more time than that or the outcome becomes uncertain. WAIT is sent
// also when the script will not take the lease; such a contended attempt
// then waits too when replicas are missing or behind. Taking the dedicated
// connection can block, regardless of ctx, while rueidis' dedicated pool
// is exhausted (ClientOption.BlockingPoolSize).
//
// Errors describe the script, as for AcquireFenced: NotSubmitted (ctx
// already done, cross-slot keys, replicas < 1 or waitMillis < 1
// (ErrInvalidWait), a dial failure), Uncertain (the script's reply was lost:
// never replayed; rueidis also loses the script's reply when the
// connection fails during WAIT in its synchronous mode, or when ctx ends
// during WAIT) or Definite (server error reply; a MOVED from a stale slot
// map, which rueidis does not follow on a dedicated connection; a malformed
// token, where the lease may exist). With a nil error, the caller decides
// from Acknowledged and WaitErr whether to hand the lease out; a lease it
// does not hand out must be released by its owner token (the counter stays
// incremented).
func AcquireFencedReplicated(ctx context.Context, client rueidis.Client, leaseKey, counterKey, token string,
	ttlMillis, replicas, waitMillis int64) (ReplicatedFencedResult, error) {
	if err := checkFenced(ctx, client, leaseKey, counterKey); err != nil {
		return ReplicatedFencedResult{}, err
	}
	if replicas < 1 || waitMillis < 1 {
		return ReplicatedFencedResult{}, &Error{Class: NotSubmitted, Op: fencedOp,
			Err: fmt.Errorf("%w (got %d replicas, %d ms)", ErrInvalidWait, replicas, waitMillis)}
	}
	dedicated, giveBack := client.Dedicate()
	healthy := false
	defer func() {
		if healthy {
			giveBack()
		} else {
			dedicated.Close() // a reply may still be on its way: never reuse the socket
		}
	}()
	f := NewFencedAcquire(leaseKey, counterKey, token, ttlMillis)
	for {
		b := dedicated.B()
		results := dedicated.DoMulti(ctx, buildFenced(b, f.Command()),
			b.Wait().Numreplicas(replicas).Timeout(waitMillis).Build())
		healthy = results[0].NonRedisError() == nil && results[1].NonRedisError() == nil
		if err := results[0].NonRedisError(); err != nil {
			return ReplicatedFencedResult{}, &Error{Class: ClassifyTransport(err), Op: fencedOp, Err: err}
		}
		reply, redisErr := toReply(results[0])
		out := f.Interpret(reply)
		if !out.Done {
			continue
		}
		res, err := finishFenced(out, redisErr)
		if err != nil || !res.Acquired {
			return ReplicatedFencedResult{FencedResult: res}, err
		}
		acked, waitErr := waitOutcome(results[1])
		return ReplicatedFencedResult{FencedResult: res, Acknowledged: acked, WaitErr: waitErr}, nil
	}
}

const waitOp = "wait"

// waitOutcome reads WAIT's result: the count, or a *Error saying why there
// is none.
func waitOutcome(result rueidis.RedisResult) (int64, error) {
	if err := result.NonRedisError(); err != nil {
		return 0, &Error{Class: ClassifyTransport(err), Op: waitOp, Err: err}
	}
	reply, redisErr := toReply(result)
	return waitCount(reply, redisErr)
}

// waitCount interprets WAIT's reply: a non-negative integer is the count;
// an error reply is a Definite *Error (no error text is matched: every one
// means "no count"); anything else is a Definite protocol error.
func waitCount(r Reply, redisErr error) (int64, error) {
	switch {
	case r.Kind == ReplyInt && r.Int >= 0:
		return r.Int, nil
	case r.Kind == ReplyError:
		return 0, definite(waitOp, "", nil, newServerError(r.Text), redisErr)
	}
	return 0, &Error{Class: Definite, Op: waitOp, Code: "PROTOCOL",
		Err: fmt.Errorf("WAIT replied with kind %d, not a non-negative integer", r.Kind)}
}
