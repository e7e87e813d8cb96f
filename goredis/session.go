//go:build !goredisadapter

package goredis

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"sync/atomic"

	"github.com/redis/go-redis/v9"

	"github.com/respire-go/respire/capstore"
	"github.com/respire-go/respire/conn"
)

// session is one pinned go-redis Conn to one node, owned by its drainer
// goroutine (drain.go): callers queue requests and wait on them; only the
// drainer writes and reads the Conn. It owns the capability memory and the
// identity of that physical connection. It is retired after a MOVED, ASK
// or READONLY reply, any non-server error, a fence or a demotion; the
// transport then opens a fresh one. Methods are safe for concurrent use.
type session struct {
	t    *Transport
	node string
	rc   *redis.Conn
	caps capstore.Store
	w    witness // the drainer's record of what go-redis read (hook.go)

	identity    conn.Identity
	hasIdentity bool
	identityErr error

	mu      sync.Mutex
	busy    bool // the Conn is in use: by the drainer, or by a caller (drain.go)
	queue   []*request
	batch   []*request    // the drainer's batch buffer (take)
	flight  []*request    // the batch on the wire (claim), for cutOff
	wake    chan struct{} // cap 1: the queue grew, or the session retired
	stopped chan struct{} // closed once the drainer ended and the Conn is closed

	lastReply atomic.Int64 // monoNow of the last reply
	retired   atomic.Bool
	suspect   atomic.Bool // another connection to the node broke: PING before the next batch
	demoted   atomic.Bool
	reason    atomic.Uint32 // the first RetireReason

	fenceMu       sync.Mutex
	fence         *fenceCall
	fenceAnswered bool
}

// Node implements conn.Session.
func (s *session) Node() string { return s.node }

// Retired implements conn.Session.
func (s *session) Retired() bool { return s.retired.Load() }

// Demoted implements conn.Session: the session's node stopped being the
// primary while it lived (Sentinel: another node is the master now).
func (s *session) Demoted() bool {
	return s.demoted.Load() || (s.t.mode == modeSentinel && !s.t.IsPrimary(s.node))
}

// Identity implements conn.Session.
func (s *session) Identity() (conn.Identity, bool) { return s.identity, s.hasIdentity }

// IdentityError implements conn.Session.
func (s *session) IdentityError() error { return s.identityErr }

// Capabilities returns the session's capability snapshot.
func (s *session) Capabilities() capstore.Set { return s.caps.Load() }

// openSession pins an EphemeralConn of node's client and learns its
// identity with one pipelined CLIENT ID + CLIENT INFO, then starts its
// drainer. On failure nothing is left open; failures are NotSubmitted (no
// lock command was involved).
func (t *Transport) openSession(ctx context.Context, node string) (*session, error) {
	if err := ctx.Err(); err != nil {
		return nil, &conn.Error{Class: conn.NotSubmitted, Op: "open", Addr: node, Err: err}
	}
	nc, err := t.nodeClient(ctx, node)
	if err != nil {
		return nil, &conn.Error{Class: conn.NotSubmitted, Op: "open", Addr: node, Err: err}
	}
	s := &session{t: t, node: node, rc: ephemeral(nc), wake: make(chan struct{}, 1), stopped: make(chan struct{})}
	s.w.install(s.rc)
	handshake := []conn.Command{conn.ClientIDCommand(), conn.ClientInfoCommand()}
	t.report(ctx, handshake...)
	replies, err := s.w.roundTrip(ctx, s.rc, handshake)
	for _, r := range replies {
		if err == nil && r.transport != nil {
			err = r.transport // a dial failure, or the socket failed under the handshake
		}
	}
	if err != nil {
		_ = s.rc.Close()
		return nil, &conn.Error{Class: conn.NotSubmitted, Op: "open", Addr: node, Err: err}
	}
	laddr := s.learnIdentity(replies[0].reply, replies[1].reply)
	if t.mode == modeSentinel {
		if laddr == "" {
			_ = s.rc.Close()
			return nil, &conn.Error{Class: conn.NotSubmitted, Op: "open", Addr: node,
				Err: errors.New("CLIENT INFO did not name the Sentinel master (laddr=): the transport needs CLIENT INFO on Sentinel")}
		}
		s.node = laddr
	}
	s.touch()
	t.mu.Lock()
	if t.closed {
		t.mu.Unlock()
		_ = s.rc.Close()
		return nil, &conn.Error{Class: conn.NotSubmitted, Op: "open", Addr: node, Err: conn.ErrPoolClosed}
	}
	t.open[s] = struct{}{}
	t.running.Add(1)
	t.mu.Unlock()
	go s.drain()
	t.reportOpened(s.node)
	t.notePrimary(s.node)
	return s, nil
}

// ephemeral returns a Conn whose socket is dropped, never pooled again,
// when it is closed.
func ephemeral(c *redis.Client) *redis.Conn { return c.EphemeralConn() }

// learnIdentity reads CLIENT ID and CLIENT INFO's addr=; it returns
// laddr= (the server's side of the socket: the node's address).
func (s *session) learnIdentity(idReply, infoReply conn.Reply) (laddr string) {
	if idReply.Kind != conn.ReplyInt {
		s.identityErr = replyError(idReply)
		return ""
	}
	if infoReply.Kind != conn.ReplyBulk && infoReply.Kind != conn.ReplyStatus {
		s.identityErr = replyError(infoReply)
		return ""
	}
	addr, laddr := infoFields(infoReply.Text)
	if addr == "" {
		s.identityErr = errors.New("CLIENT INFO has no addr= field")
		return laddr
	}
	s.identity, s.hasIdentity = conn.Identity{ID: idReply.Int, Addr: addr}, true
	return laddr
}

// infoFields returns the addr= and laddr= fields of a CLIENT INFO line.
func infoFields(info string) (addr, laddr string) {
	for _, field := range strings.Fields(info) {
		if v, ok := strings.CutPrefix(field, "addr="); ok {
			addr = v
		} else if v, ok := strings.CutPrefix(field, "laddr="); ok {
			laddr = v
		}
	}
	return addr, laddr
}

// replyError is the error a non-answer reply stands for.
func replyError(r conn.Reply) error {
	if r.Kind == conn.ReplyError {
		return &serverError{text: r.Text}
	}
	return fmt.Errorf("unexpected reply kind %d", r.Kind)
}

// serverError is a server's error reply, as go-redis' own witness read it
// (never a user hook's rewrite). Its text is the whole line.
type serverError struct{ text string }

func (e *serverError) Error() string { return e.text }

// RedisError marks it a Redis error reply (redis.Error).
func (e *serverError) RedisError() {}

// Code returns the first word of the reply.
func (e *serverError) Code() string {
	code, _, _ := strings.Cut(e.text, " ")
	return code
}

// retire marks the session retired at once (nothing new is handed to it)
// and wakes its drainer, which fails what is still queued as not
// submitted, closes the Conn after the batch in flight and stops. The
// first reason is kept.
func (s *session) retire(reason conn.RetireReason) {
	if s.markRetired(reason) {
		s.t.reportRetired(s.node, conn.RetireReason(s.reason.Load()))
	}
}

// markRetired is retire without telling the observer; it reports whether
// this call retired the session (a fence reports it once the kill was
// answered, as conn.Pool does).
func (s *session) markRetired(reason conn.RetireReason) bool {
	s.reason.CompareAndSwap(0, uint32(reason))
	if s.retired.Swap(true) {
		return false
	}
	select {
	case s.wake <- struct{}{}:
	default:
	}
	return true
}

func (s *session) touch() { s.lastReply.Store(monoNow()) }
