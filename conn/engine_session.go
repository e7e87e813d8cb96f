package conn

import (
	"context"
	"errors"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/respire-go/respire/capstore"
)

// session is the engine's Session: one pinned connection (a link) to one
// node, shared by many locks, with the capability memory and the identity
// of that physical connection. It is retired after a MOVED, ASK or
// READONLY reply, any transport failure, a fence or a demotion; the engine
// then opens a fresh one with empty capabilities and a fresh identity.
// Methods are safe for concurrent use.
type session struct {
	e    *Engine
	node string
	seq  uint64 // the order sessions opened in (Engine.track)
	link *link
	caps capstore.Store

	identity    Identity
	hasIdentity bool
	identityErr error // why there is no identity (server reply), when !hasIdentity
	// infoRefused: Sentinel, the node refused INFO replication when the
	// session opened (NOPERM: the reply), so the replicas its first write
	// needed are unknown and nothing it writes confirms (replicaCheck.blind).
	infoRefused error

	demoted  atomic.Bool // its node stopped being the primary (Sentinel)
	opened   atomic.Bool // its handshake answered (before it, no idle PING)
	reported atomic.Bool // its retirement was told to the observer
	fencing  atomic.Bool // a fence of it started: its retirement reason is "fenced"

	fenceMu       sync.Mutex
	fence         *killCall // the latest CLIENT KILL of this session (see Engine.Fence)
	fenceAnswered bool      // a fence of this session was answered
}

// openBound bounds the opening of a connection: the dial and the
// handshake.
const openBound = 5 * time.Second

// Node implements Session.
func (s *session) Node() string { return s.node }

// Retired implements Session.
func (s *session) Retired() bool { return s.link.retired.Load() }

// Demoted implements Session: the session's node stopped being the
// primary while it lived.
func (s *session) Demoted() bool { return s.demoted.Load() }

// Identity implements Session.
func (s *session) Identity() (Identity, bool) { return s.identity, s.hasIdentity }

// IdentityError implements Session.
func (s *session) IdentityError() error { return s.identityErr }

// Capabilities returns the session's capability snapshot.
func (s *session) Capabilities() capstore.Set { return s.caps.Load() }

// Dead reports, without blocking, whether the session is known unusable:
// retired, or its socket known closed (Conn.Err).
func (s *session) Dead() bool {
	if s.Retired() {
		return true
	}
	if s.link.conn.Err() != nil {
		s.e.retireSession(s, RetiredDead)
		return true
	}
	return false
}

// Close retires the session and closes its connection. Idempotent.
func (s *session) Close() { s.e.retireSession(s, RetiredClosed) }

// reportRetired tells the observer, once, why s was retired.
func (s *session) reportRetired(reason RetireReason) {
	if reason != RetiredFenced && s.fencing.Load() {
		return // the fence reports it once the kill answered or was given up
	}
	if !s.reported.CompareAndSwap(false, true) {
		return
	}
	if o := s.e.obs; o != nil && o.SessionRetired != nil {
		o.SessionRetired(s.node, reason)
	}
}

// openSession dials node and learns the connection's identity with one
// pipelined CLIENT ID + CLIENT INFO. It blocks until the replies arrive,
// bounded by ctx; on failure nothing is left open. Failures are
// NotSubmitted (no lock command was involved).
func (e *Engine) openSession(ctx context.Context, node string) (*session, error) {
	if err := e.clientClosed(); err != nil {
		return nil, &Error{Class: NotSubmitted, Op: "open", Addr: node, Err: err}
	}
	c, err := e.client.Dial(ctx, node)
	if err != nil {
		return nil, &Error{Class: NotSubmitted, Op: "open", Addr: node, Err: err}
	}
	s := &session{e: e, node: node}
	s.link = e.newSessionLink(node, c)
	s.link.owner = s
	fenceReady := make(chan struct{}) // the node's fence connection, dialled meanwhile (see prepareFence)
	e.background(func() {
		defer close(fenceReady)
		e.prepareFence(node)
	})
	cmds := []Command{ClientIDCommand(), ClientInfoCommand()}
	if e.mode == ModeSentinel {
		cmds = append(cmds, InfoReplicationCommand()) // the replicas a renewal here waits for (rule SentinelRenewalsNeedReplicaAcks)
	}
	replies := make([]Reply, len(cmds))
	hctx, cancel := s.link.bounded(context.WithoutCancel(ctx), openBound) // see link.bounded
	stop := e.spawn.AfterFunc(ctx, func() { s.link.retire() })            // the open's own end (Close) closes it too
	err = s.link.exchange(hctx, "open", cmds, replies, nil, s)
	stop()
	cancel()
	_ = e.spawn.Wait(ctx, fenceReady) // a failure is left for the fence to try again
	if err != nil {
		s.link.retire()
		return nil, &Error{Class: NotSubmitted, Op: "open", Addr: node, Err: err}
	}
	s.learnIdentity(replies[0], replies[1])
	if len(replies) > 2 {
		e.noteReplicas(node, infoReplicas(replies[2]))
		if replies[2].Kind == ReplyError {
			s.infoRefused = replyErr(replies[2])
		}
	}
	s.opened.Store(true)
	if !e.track(s) {
		s.link.retire()
		return nil, &Error{Class: NotSubmitted, Op: "open", Addr: node, Err: ErrPoolClosed}
	}
	if o := e.obs; o != nil && o.SessionOpened != nil {
		o.SessionOpened(node)
	}
	return s, nil
}

// track records a newly opened session; false when the engine is closed.
func (e *Engine) track(s *session) bool {
	e.mu.Lock()
	defer e.mu.Unlock()
	if e.closed {
		return false
	}
	e.seq++
	s.seq = e.seq
	e.open[s] = struct{}{}
	return true
}

// learnIdentity reads CLIENT ID's reply and CLIENT INFO's addr= field.
func (s *session) learnIdentity(idReply, infoReply Reply) {
	if idReply.Kind != ReplyInt {
		s.identityErr = replyErr(idReply)
		return
	}
	if infoReply.Kind != ReplyBulk && infoReply.Kind != ReplyStatus {
		s.identityErr = replyErr(infoReply)
		return
	}
	for _, field := range strings.Fields(infoReply.Text) {
		if addr, ok := strings.CutPrefix(field, "addr="); ok {
			s.identity, s.hasIdentity = Identity{ID: idReply.Int, Addr: addr}, true
			return
		}
	}
	s.identityErr = errors.New("CLIENT INFO has no addr= field")
}

// replyErr is the error a reply that is not the expected answer stands
// for: the client's own error of an error reply when it has one.
func replyErr(r Reply) error {
	if r.Kind != ReplyError {
		return unexpected(r)
	}
	if r.Err != nil {
		return r.Err
	}
	return newServerError(r.Text)
}

// xbuf is the buffer of one exchange of one command (after ASKING when
// asked): its arguments, commands and replies, recycled, so that a lock
// command costs the engine no allocation of its own.
type xbuf struct {
	args    [8]string
	cmds    [2]Command
	replies [2]Reply
}

var xbufs = sync.Pool{New: func() any { return new(xbuf) }}

var askingCommand = Command{Args: []string{"ASKING"}, Key: -1}

// exchangeOne sends one command (o's current step when o is not nil, else
// cmd), after ASKING when asking, and returns its reply. route, when not
// nil, is told the session right before the hand-off and may veto it.
func (s *session) exchangeOne(ctx context.Context, op string, o *Operation, cmd Command, asking bool,
	route *Route) (Reply, error) {
	b := xbufs.Get().(*xbuf)
	n := 0
	if asking {
		b.cmds[0], n = askingCommand, 1
	}
	if o != nil {
		cmd = Command{Args: o.AppendArgs(b.args[:0]), Key: -1}
	}
	b.cmds[n] = cmd
	err := s.link.exchange(ctx, op, b.cmds[:n+1], b.replies[:n+1], route, s)
	reply := b.replies[n]
	if err != nil && ClassOf(err) == Uncertain && s.link.drain != nil {
		return Reply{}, err // a drainer's batch may still read b: leave it to the collector
	}
	*b = xbuf{}
	xbufs.Put(b)
	return reply, err
}
