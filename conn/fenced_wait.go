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

// ErrWaitStopped is the cause (Uncertain) of a replicated fenced
// acquisition whose dedicated connection was closed because its stop
// context ended while the script and WAIT were on the wire: the script may
// have run. Before anything was written the error is NotSubmitted with this
// cause.
var ErrWaitStopped = errors.New("dedicated connection closed by its owner while WAIT was pending")

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

// AcquireReplicated implements Transport with AcquireFencedReplicated on
// the pool's client.
func (p *Pool) AcquireReplicated(ctx, stop context.Context, leaseKey, counterKey, token string, ttlMillis, replicas,
	waitMillis int64) (ReplicatedFencedResult, error) {
	return AcquireFencedReplicated(ctx, p.client, stop, leaseKey, counterKey, token, ttlMillis, replicas, waitMillis)
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
//
// stop lets the caller's owner cut the call short whatever ctx says
// (rueidis ignores a bare cancellation of ctx on a dedicated connection in
// its synchronous mode; pass context.Background() for no such owner): once
// stop ends, the dedicated connection is closed at once and the call
// returns within moments with an error wrapping ErrWaitStopped —
// NotSubmitted if stop had ended before the call, Uncertain (NotSubmitted
// when rueidis proves nothing was written) if the pipeline was on its way;
// a script whose reply arrived reports the lost WAIT in WaitErr instead.
// Closing the socket does not recall bytes the kernel already took: a
// script the server had not read yet can still run.
func AcquireFencedReplicated(ctx context.Context, client rueidis.Client, stop context.Context,
	leaseKey, counterKey, token string, ttlMillis, replicas, waitMillis int64) (ReplicatedFencedResult, error) {
	if err := checkFenced(ctx, client, leaseKey, counterKey); err != nil {
		return ReplicatedFencedResult{}, err
	}
	if replicas < 1 || waitMillis < 1 {
		return ReplicatedFencedResult{}, &Error{Class: NotSubmitted, Op: fencedOp,
			Err: fmt.Errorf("%w (got %d replicas, %d ms)", ErrInvalidWait, replicas, waitMillis)}
	}
	if stop.Err() != nil {
		return ReplicatedFencedResult{}, &Error{Class: NotSubmitted, Op: fencedOp, Err: ErrWaitStopped}
	}
	dedicated, giveBack := client.Dedicate()
	healthy := false
	unwatch := watchStop(stop, dedicated.Close)
	defer func() {
		switch {
		case !unwatch():
			// stop closed it (and gave it back to rueidis as closed)
		case healthy:
			giveBack()
		default:
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
			return ReplicatedFencedResult{}, &Error{Class: ClassifyTransport(err), Op: fencedOp, Err: stopCause(stop, err)}
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
		if waitErr != nil && ClassOf(waitErr) == Uncertain && stop.Err() != nil {
			waitErr = &Error{Class: Uncertain, Op: waitOp, Err: stopCause(stop, errors.Unwrap(waitErr))}
		}
		return ReplicatedFencedResult{FencedResult: res, Acknowledged: acked, WaitErr: waitErr}, nil
	}
}

// watchStop closes the dedicated connection (closeConn) as soon as stop
// ends, until unwatch is called. unwatch reports false when closeConn ran,
// after it returned: the connection must not be given back then (rueidis'
// Close after a give-back would close the next borrower's socket).
func watchStop(stop context.Context, closeConn func()) (unwatch func() bool) {
	closed := make(chan struct{})
	stopWatch := context.AfterFunc(stop, func() {
		closeConn()
		close(closed)
	})
	return func() bool {
		if stopWatch() {
			return true
		}
		<-closed
		return false
	}
}

// stopCause is err, the transport error of a call, with ErrWaitStopped
// when stop had ended: the connection was closed under it on purpose.
func stopCause(stop context.Context, err error) error {
	if stop.Err() == nil {
		return err
	}
	return fmt.Errorf("%w: %w", ErrWaitStopped, err)
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
