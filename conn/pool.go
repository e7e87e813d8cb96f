package conn

import (
	"context"
	"errors"
	"sync"
	"sync/atomic"

	"github.com/redis/rueidis"
	"golang.org/x/sync/singleflight"

	"github.com/respire-go/respire/internal/track"
)

// maxRedirects bounds how many MOVED/ASK hops one operation follows.
const maxRedirects = 5

// Pool keeps one current Session per node of a rueidis client and runs lock
// operations on them, following cluster redirects. It is safe for
// concurrent use. Create it with NewPool (the zero value is not usable) and
// Close it when done; it never closes the rueidis client it was given.
type Pool struct {
	client   rueidis.Client
	cluster  bool
	sentinel bool // the primary may change under us: replies are checked (see checkPrimary)

	idleCheck    atomic.Int64 // see SetIdleCheck
	lastProbe    atomic.Int64 // monoNow of the last client probe (ClientAlive)
	clientClosed atomic.Bool  // the rueidis client was found closed

	mu       sync.Mutex
	sessions map[string]*pinned   // current session per node address
	open     map[*pinned]struct{} // every session not yet retired
	slots    *slotMap             // cluster mode only
	closed   bool
	opening  singleflight.Group // one session open per node at a time

	closing track.Tracker // background socket closes of retired sessions (retiring goes on while Close waits)

	obs *Observer // telemetry hooks (SetObserver); nil: none

	watch watchState // tracking watchers, one per node (watch.go)
}

// NewPool wraps client. It sends nothing; sessions open on first use.
func NewPool(client rueidis.Client) *Pool {
	p := &Pool{client: client, sessions: map[string]*pinned{}, open: map[*pinned]struct{}{}}
	p.idleCheck.Store(int64(DefaultIdleCheck))
	switch client.Mode() {
	case rueidis.ClientModeCluster:
		p.cluster = true
		p.slots = &slotMap{}
	case rueidis.ClientModeSentinel:
		p.sentinel = true
	}
	return p
}

// Close retires every session and makes later calls fail with
// ErrPoolClosed. It blocks until every socket it ever opened is closed,
// including sessions from OpenSession; a socket waiting for a delayed reply
// closes when the reply arrives or after rueidis' one-second escape. It is
// idempotent.
func (p *Pool) Close() {
	p.mu.Lock()
	p.closed = true
	open := p.open
	p.open = map[*pinned]struct{}{}
	p.sessions = map[string]*pinned{}
	p.mu.Unlock()
	for s := range open {
		s.close(RetiredClosed)
	}
	p.closeWatchers()
	p.closing.Wait()
}

// RetireAll retires every session open now, as Close does, but leaves the
// pool usable: later calls open fresh sessions. Commands in flight on the
// retired sessions get their replies while rueidis drains them, or an
// Uncertain error. It blocks until their sockets are closed.
func (p *Pool) RetireAll() {
	p.mu.Lock()
	open := p.open
	p.open = map[*pinned]struct{}{}
	p.sessions = map[string]*pinned{}
	p.mu.Unlock()
	for s := range open {
		s.close(RetiredClosed)
	}
	p.closing.Wait()
}

// track records a newly opened session; false when the pool is closed.
func (p *Pool) track(s *pinned) bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.closed {
		return false
	}
	p.open[s] = struct{}{}
	return true
}

// Result is the answer of a conditional operation and the session that
// executed its last attempt (the one to fence after an uncertain outcome).
type Result struct {
	Owned        bool    // true: released/extended/found/acquired; false: not owner, expired, missing or contended
	Token        string  // Owner only: the owner token bytes when Owned
	FencingToken int64   // FencedAcquireOp only: the fencing token when Owned
	Session      Session // session of the last attempt; nil when nothing was sent

	// Semaphore and read/write-lock Ops only (primitive_keys.go):
	Waiting         bool  // RWLock.WriteAcquireOp: not acquired; the token's waiting marker refuses new readers (fair Ops: see FairResource)
	RemainingMillis int64 // lease reads: a live holder's lease left (server ms) when Owned
	Holders         int64 // HoldersOp, ReadersOp: the live holders; fair Ops: the waiters, or a waiter's position
}

// Do runs op on the session of the key's primary, following MOVED (re-send
// on the target) and ASK (ASKING + the command on the target): a redirect
// proves the command did not run where it was sent. A command that a socket
// found dead before the hand-off refused is sent once more on a fresh
// session. route, when not nil, is told each session right before its
// hand-off and may stop the operation (NotSubmitted, ErrAborted); after an
// Uncertain error route.Session() is the socket to fence. It blocks until a
// definite answer or an error; a returned *Error tells its Class and
// Session. Cancellation after hand-off cannot recall the command
// (Uncertain), and an Uncertain command is never replayed.
func (p *Pool) Do(ctx context.Context, op Op, route *Route) (Result, error) {
	if op.kind == opFenced {
		if err := p.CheckFencedKeys(op.key, op.counter); err != nil {
			return Result{}, err
		}
	}
	if err := op.invalid(); err != nil {
		return Result{}, err
	}
	node, err := p.route(ctx, op.name(), op.key)
	if err != nil {
		return Result{}, err
	}
	asking, learned := false, false
	for hop := 0; ; hop++ {
		s, err := p.sessionFor(ctx, node)
		if err != nil && errors.Is(err, errUnknownNode) && hop > 0 && !learned {
			p.learnNode(ctx, op.key) // a redirect named a node rueidis does not know yet
			learned = true
			s, err = p.sessionFor(ctx, node)
		}
		if err != nil {
			return Result{}, err
		}
		res, err := s.run(ctx, op, asking, route)
		var e *Error
		if err == nil || !errors.As(err, &e) || hop >= maxRedirects {
			return res, err
		}
		if RetriableOnFreshSession(err) {
			continue // the socket died before hand-off: a fresh session may send it
		}
		if e.Redirect == nil {
			return res, err
		}
		if !e.Redirect.Ask {
			p.learnSlot(e.Redirect.Slot, e.Redirect.Addr)
		}
		node, asking = e.Redirect.Addr, e.Redirect.Ask
	}
}

// RetriableOnFreshSession reports an error of a command that provably never
// reached its socket because the session was retired or found dead first: a
// fresh session may send it.
func RetriableOnFreshSession(err error) bool {
	if err == nil {
		return false
	}
	var e *Error
	return errors.As(err, &e) && e.Class == NotSubmitted && errors.Is(e.Err, ErrSessionRetired)
}

// Release deletes key if it holds token (ReleaseOp, see Do).
func (p *Pool) Release(ctx context.Context, key, token string) (Result, error) {
	return p.Do(ctx, ReleaseOp(key, token), nil)
}

// Extend sets key's expiry to ttlMillis from now if it holds token
// (ExtendOp, see Do). A missing, expired or replaced key is never created or
// changed.
func (p *Pool) Extend(ctx context.Context, key, token string, ttlMillis int64) (Result, error) {
	return p.Do(ctx, ExtendOp(key, token, ttlMillis), nil)
}

// Owner reads key's owner token with GET on the primary's session (OwnerOp,
// see Do).
func (p *Pool) Owner(ctx context.Context, key string) (Result, error) {
	return p.Do(ctx, OwnerOp(key), nil)
}

// Acquire sends SET key token NX PX ttlMillis on the key's node session, the
// socket that also carries the lock's release and renewals: one pipeline per
// node batches all of them (two sockets per node halved the batches and cost
// about a tenth of the throughput), and a clean-up delete sent after an
// abandoned acquisition queues behind its SET (AcquireOp, see Do).
func (p *Pool) Acquire(ctx context.Context, key, token string, ttlMillis int64) (Result, error) {
	return p.Do(ctx, AcquireOp(key, token, ttlMillis), nil)
}

// drive runs one Operation on this session through its fallback steps.
func (s *pinned) drive(ctx context.Context, op string, o *Operation, asking bool, route *Route) (Result, error) {
	for {
		reply, redisErr, err := s.exchangeStep(ctx, op, Command{}, o, asking, route)
		if err == nil {
			err = s.checkPrimary(op)
		}
		if err != nil {
			return Result{Session: s}, err
		}
		step := o.step
		out := o.Interpret(reply)
		s.learn(step, out)
		if !out.Done {
			continue
		}
		return s.finish(op, out, redisErr)
	}
}

func (s *pinned) finish(op string, out Outcome, redisErr error) (Result, error) {
	if out.Redirect != nil {
		s.pool.retireFor(s, RetiredRedirect)
		e := definite(op, s.node, s, out.Err, redisErr)
		if out.Err == nil {
			e.Code = "MOVED"
			if out.Redirect.Ask {
				e.Code = "ASK"
			}
		}
		e.Redirect = out.Redirect
		return Result{Session: s}, e
	}
	if out.Err != nil {
		if IsReadOnlyReply(out.Err.Message) {
			s.pool.retireFor(s, RetiredReadOnly) // not a primary any more
		}
		if IsDidNotRunReply(out.Err.Message) {
			s.pool.markSlotsStale()
		}
		return Result{Session: s}, definite(op, s.node, s, out.Err, redisErr)
	}
	return Result{Owned: out.Owned, Token: out.Value, Session: s}, nil
}

// definite builds a Definite *Error whose cause is the client library's
// error when there is one (so errors.As to *rueidis.RedisError works).
func definite(op, node string, s *pinned, serverErr *ServerError, redisErr error) *Error {
	e := &Error{Class: Definite, Op: op, Addr: node, Session: s, Err: redisErr}
	if serverErr != nil {
		e.Code = serverErr.Code
		if redisErr == nil {
			e.Err = serverErr
		}
	}
	if e.Err == nil {
		e.Err = ErrServerReply
	}
	return e
}
