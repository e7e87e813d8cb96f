package conn

import (
	"context"
	"errors"
	"strings"
	"sync"
	"sync/atomic"

	"github.com/redis/rueidis"

	"github.com/respire-go/respire/capstore"
)

// Identity is how the server names a session's connection, learned once
// when the session opens: CLIENT ID and the peer address from CLIENT INFO.
type Identity struct {
	ID   int64  // CLIENT ID
	Addr string // addr= field of CLIENT INFO (the client side as the server sees it)
}

// Session is one pinned socket to one node (a rueidis dedicated client),
// shared by many callers at once; rueidis pipelines their commands. It owns
// the capability memory of that physical connection. A session is retired
// (closed for good) after a MOVED, ASK or READONLY reply, after any
// non-server error, or after a fence; the Pool then opens a fresh one with
// empty capabilities and a fresh identity. All methods are safe for
// concurrent use. Sessions are created only by a Pool.
type pinned struct {
	pool   *Pool
	node   string
	client rueidis.DedicatedClient
	caps   capstore.Store

	background atomic.Bool  // the socket runs in rueidis' background mode (see sendContext)
	_          [64]byte     // keeps lastReply's writes off the cache line every command reads
	lastReply  atomic.Int64 // monotonic time of the last reply (see checkIdle)
	_          [56]byte

	identity    Identity
	hasIdentity bool
	identityErr error // why there is no identity (server reply), when !hasIdentity

	retired   atomic.Bool
	suspect   atomic.Bool // another connection to its node broke: PING before the next command (see Pool.suspectNode)
	demoted   atomic.Bool // its node stopped being the primary (Sentinel): see checkPrimary
	closeOnce sync.Once

	watchOnce sync.Once
	dead      atomic.Pointer[<-chan error] // closes when the socket breaks (see watchDeath)

	fenceMu       sync.Mutex
	fence         *fenceCall // the latest CLIENT KILL of this session (see Pool.Fence)
	fenceAnswered bool       // a fence of this session was answered
}

// Node returns the node address (host:port) the session is connected to.
func (s *pinned) Node() string { return s.node }

// Capabilities returns the session's current capability snapshot.
func (s *pinned) Capabilities() capstore.Set { return s.caps.Load() }

// Identity returns the session's identity, or ok=false when CLIENT ID or
// CLIENT INFO was refused (for example NOPERM); the session works without it
// but cannot be fenced.
func (s *pinned) Identity() (id Identity, ok bool) { return s.identity, s.hasIdentity }

// IdentityError returns the server error that denied CLIENT ID/INFO, or nil.
func (s *pinned) IdentityError() error { return s.identityErr }

// Retired reports whether the session was closed for good.
func (s *pinned) Retired() bool { return s.retired.Load() }

// openSession pins a dedicated socket on nodeClient and learns its identity
// with one pipelined CLIENT ID + CLIENT INFO. It blocks until the replies
// arrive or ctx is done; on failure nothing is left open.
func openSession(ctx context.Context, pool *Pool, node string, nodeClient rueidis.Client) (*pinned, error) {
	if err := ctx.Err(); err != nil {
		return nil, &Error{Class: NotSubmitted, Op: "open", Addr: node, Err: err}
	}
	dedicated, _ := nodeClient.Dedicate()
	s := &pinned{pool: pool, node: node, client: dedicated}
	pool.reportCommand(ctx, "CLIENT ID")
	pool.reportCommand(ctx, "CLIENT INFO")
	sendCtx, sent := s.sendContext(ctx) // a cancellation before ctx's deadline is honoured
	results := dedicated.DoMulti(sendCtx, s.build(ClientIDCommand()), s.build(ClientInfoCommand()))
	sent()
	for _, r := range results {
		if err := r.NonRedisError(); err != nil {
			dedicated.Close()
			return nil, &Error{Class: NotSubmitted, Op: "open", Addr: node, Err: err}
		}
	}
	s.learnIdentity(results[0], results[1])
	s.touch()
	if !pool.track(s) {
		dedicated.Close()
		return nil, &Error{Class: NotSubmitted, Op: "open", Addr: node, Err: ErrPoolClosed}
	}
	if o := pool.obs; o != nil && o.SessionOpened != nil {
		o.SessionOpened(node)
	}
	return s, nil
}

func (s *pinned) learnIdentity(idReply, infoReply rueidis.RedisResult) {
	id, err := idReply.AsInt64()
	if err != nil {
		s.identityErr = err
		return
	}
	info, err := infoReply.ToString()
	if err != nil {
		s.identityErr = err
		return
	}
	for _, field := range strings.Fields(info) {
		if addr, ok := strings.CutPrefix(field, "addr="); ok {
			s.identity, s.hasIdentity = Identity{ID: id, Addr: addr}, true
			return
		}
	}
	s.identityErr = errors.New("CLIENT INFO has no addr= field")
}

// build turns a Command into a rueidis command (not retryable: rueidis never
// resends it on its own).
func (s *pinned) build(cmd Command) rueidis.Completed {
	return buildCommand(s.client.B(), cmd)
}

// buildCommand builds cmd without marking its key (Command.Key): every keyed
// command built here goes to a socket pinned to one node (a session), so
// rueidis needs no hash slot, and computing one (CRC16 of the key) on every
// lock command is measurable at high rates. The rest (fence, CLUSTER SLOTS)
// are keyless.
func buildCommand(b rueidis.Builder, cmd Command) rueidis.Completed {
	return b.Arbitrary(cmd.Args...).Build()
}

// exchange sends cmd (after ASKING when asking) and returns its reply.
// route, when not nil, is told the session right before the hand-off and
// may veto it. A returned error is an *Error: NotSubmitted when nothing was
// handed to the socket (or rueidis proves it was not written), otherwise
// Uncertain. The session is retired on any transport failure, but not when
// the caller's own ctx ended the wait (cancelledByCaller).
func (s *pinned) exchange(ctx context.Context, op string, cmd Command, asking bool, route *Route) (Reply, error, error) {
	return s.exchangeStep(ctx, op, cmd, nil, asking, route)
}

// exchangeStep is exchange of cmd, or of o's current step when o is not nil
// (built by buildStep, without a Command on the heap).
func (s *pinned) exchangeStep(ctx context.Context, op string, cmd Command, o *Operation, asking bool, route *Route) (Reply, error, error) {
	if err := s.notSendable(ctx); err != nil {
		return Reply{}, nil, &Error{Class: NotSubmitted, Op: op, Addr: s.node, Session: s, Err: err}
	}
	if !route.carry(s) {
		return Reply{}, nil, &Error{Class: NotSubmitted, Op: op, Addr: s.node, Session: s, Err: ErrAborted}
	}
	if s.pool.obs != nil {
		if asking {
			s.pool.reportCommand(ctx, "ASKING")
		}
		if o != nil {
			s.pool.reportCommand(ctx, stepName(o.step))
		} else {
			s.pool.reportCommand(ctx, CommandName(cmd))
		}
	}
	var built rueidis.Completed
	if o != nil {
		built = buildStep(s.client.B(), o)
	} else {
		built = s.build(cmd)
	}
	sendCtx, sent := s.sendContext(ctx)
	var result rueidis.RedisResult
	if asking {
		results := s.client.DoMulti(sendCtx, s.build(AskingCommand()), built)
		result = results[1]
		if err := results[0].NonRedisError(); err != nil {
			result = results[0]
		}
	} else {
		result = s.client.Do(sendCtx, built)
	}
	sent()
	if err := result.NonRedisError(); err != nil {
		return Reply{}, nil, s.transportError(ctx, op, err)
	}
	s.touch()
	reply, redisErr := toReply(result)
	return reply, redisErr, nil
}

// transportError classifies a transport failure of a command handed to the
// socket (ClassifyTransport) and retires the session unless the caller's own
// ctx ended the wait. A command rueidis proves unwritten is joined with
// ErrSessionRetired, so a fresh session may send it.
func (s *pinned) transportError(ctx context.Context, op string, err error) *Error {
	class := ClassifyTransport(err)
	if !cancelledByCaller(ctx, err) {
		s.pool.retireFor(s, RetiredTransportError)
		s.pool.markSlotsStale()
	}
	if class == NotSubmitted {
		err = errors.Join(ErrSessionRetired, err)
	}
	return &Error{Class: class, Op: op, Addr: s.node, Session: s, Err: err}
}

// notSendable is checked right before hand-off: a done ctx, a retired
// session or a socket found dead by the idle check (checkIdle) prove nothing
// will be written.
func (s *pinned) notSendable(ctx context.Context) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	if s.retired.Load() {
		return ErrSessionRetired
	}
	if dead := s.dead.Load(); dead != nil {
		select {
		case err, ok := <-*dead:
			s.pool.retire(s)
			if ok && err != nil {
				return errors.Join(ErrSessionRetired, err)
			}
			return ErrSessionRetired
		default:
		}
	}
	return s.checkIdle(ctx)
}

// cancelledByCaller reports that rueidis gave up waiting for a reply because
// the caller's ctx ended. That says nothing about the socket: in background
// mode (the only mode a cancellable ctx reaches, see sendContext) rueidis
// still reads the late reply and drops it, and the session stays in use for
// its other callers. (The command's uncertainty is settled by the caller: a
// managed lock fences the session, which retires it.)
func cancelledByCaller(ctx context.Context, err error) bool {
	return ctx.Err() != nil && (errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded))
}

// toReply converts a rueidis reply (no transport error) to the pure Reply,
// keeping the server's whole error text (rueidis strips "ERR " from
// RedisError.Error(); the message itself keeps it).
func toReply(result rueidis.RedisResult) (Reply, error) {
	msg, err := result.ToMessage()
	switch {
	case msg.IsNil():
		return Reply{Kind: ReplyNil}, nil
	case err != nil:
		text, _ := msg.ToString()
		return Reply{Kind: ReplyError, Text: text}, err
	case msg.IsInt64():
		n, _ := msg.AsInt64()
		return Reply{Kind: ReplyInt, Int: n}, nil
	case msg.IsString():
		text, _ := msg.ToString()
		return Reply{Kind: ReplyBulk, Text: text}, nil
	}
	return Reply{Kind: 0}, nil
}

// close marks the session retired at once and closes its socket in the
// background: rueidis drains replies to commands already written first, which
// can take until a delayed reply arrives, and no caller should wait for that.
// Pool.Close waits for every background close. The first close reports
// reason to the observer.
func (s *pinned) close(reason RetireReason) {
	s.retired.Store(true)
	s.closeOnce.Do(func() {
		if o := s.pool.obs; o != nil && o.SessionRetired != nil {
			o.SessionRetired(s.node, reason)
		}
		s.pool.closing.Add()
		go func() {
			defer s.pool.closing.Done()
			s.client.Close()
		}()
	})
}

type (
	rueidisCompleted = rueidis.Completed
	rueidisResult    = rueidis.RedisResult
)
