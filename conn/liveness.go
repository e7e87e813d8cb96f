package conn

import (
	"context"
	"errors"
	"time"

	"github.com/redis/rueidis"
)

// DefaultIdleCheck is how long a session may stay without a reply before the
// next lock command on it is preceded by a PING.
const DefaultIdleCheck = time.Second

var monoEpoch = time.Now() // reference for monotonic reply times

// SetIdleCheck sets how long a session of this pool may stay without a
// reply before the next command on it is preceded by a liveness PING, and
// returns the previous value. It is safe for concurrent use and takes effect
// for the next command; zero or less pings before every command. The
// default is DefaultIdleCheck.
func (p *Pool) SetIdleCheck(d time.Duration) time.Duration {
	return time.Duration(p.idleCheck.Swap(int64(d)))
}

func monoNow() int64 { return int64(time.Since(monoEpoch)) }

// touchGrain bounds how stale the recorded reply time may be: within it a
// busy session only reads lastReply, so concurrent callers do not pass its
// cache line back and forth between cores.
const touchGrain = int64(time.Millisecond)

// touch records that the socket just delivered a reply.
func (s *pinned) touch() {
	if now := monoNow(); now-s.lastReply.Load() > touchGrain {
		s.lastReply.Store(now)
	}
}

// checkIdle is called right before a lock command is handed to rueidis. A
// session without a reply for longer than the idle threshold, or suspected
// since another connection to its node broke (suspectNode), may have been
// closed by the server while idle (timeout, CLIENT KILL, failover); writing
// into it would make the command Uncertain, and an uncertain renewal or
// release loses the lock. So such a session first answers a PING on its own
// round trip: any reply, an error reply such as NOPERM included, proves the
// socket was alive after the idle period. A transport failure proves it dead
// with nothing of ours written: the session is retired and the returned
// error (ErrSessionRetired joined) makes the command NotSubmitted, so a fresh
// session may send it.
//
// A close between the PING reply and our write is not seen; that is the
// same narrow window the former asynchronous detection had (it could not see
// a close just before the write either), and it is classified Uncertain:
// conservative, never unsafe. Busy sessions skip the PING and keep rueidis'
// synchronous path. It blocks for the PING's round trip, until ctx ends.
func (s *pinned) checkIdle(ctx context.Context) error {
	if monoNow()-s.lastReply.Load() <= s.pool.idleCheck.Load() && !s.suspect.Load() {
		return nil
	}
	sendCtx, sent := s.sendContext(ctx)
	result := s.client.Do(sendCtx, s.client.B().Ping().Build())
	sent()
	if err := result.NonRedisError(); err != nil {
		if cancelledByCaller(ctx, err) {
			return err // the caller gave up; the PING proved nothing either way
		}
		s.pool.retire(s)
		return errors.Join(ErrSessionRetired, err)
	}
	s.suspect.Store(false)
	s.touch()
	return nil
}

// suspectNode makes the next lock command on node's current session check
// its socket first, with the idle check's PING whatever its idle time: the
// pool's watcher connection to node broke, which a restart, a failover or
// CLIENT KILL TYPE normal does to every connection of ours at once. A
// session in rueidis' synchronous mode reads nothing between its commands,
// so neither rueidis nor the idle check (within its threshold) knows that
// its socket was closed too; the next command would be written into it and
// be uncertain. After the PING it is either known alive or retired with
// the command not submitted, and the command goes to a fresh session (rule
// KnownClosedSessionIsSkipped). A busy session in background mode needs no
// PING (its own close watch retires it) but gets one all the same: one
// round trip, after an event that is rare. It sends nothing itself.
func (p *Pool) suspectNode(node string) {
	if s := p.currentSession(node); s != nil {
		s.suspect.Store(true)
	}
}

// sendContext returns the ctx to hand to rueidis for one command and a
// function to call once it returned. rueidis runs a lone command
// synchronously on the socket when ctx has a deadline, and then does not
// notice a cancellation before that deadline; a cancelled release or renewal
// must return at once (as Uncertain). So a command whose ctx has a deadline
// runs on a copy without one, cancelled when ctx ends, until such a command
// has moved the socket to rueidis' background mode, which lasts for the
// socket's life: every later command is queued there and sees its ctx's
// cancellation. A ctx that cannot be cancelled (context.Background()) keeps
// the synchronous path while no cancellable ctx has been used.
func (s *pinned) sendContext(ctx context.Context) (context.Context, func()) {
	if ctx.Done() == nil || s.background.Load() {
		return ctx, func() {}
	}
	if _, ok := ctx.Deadline(); !ok {
		return ctx, s.inBackground
	}
	inner, cancel := context.WithCancelCause(context.WithoutCancel(ctx))
	stop := context.AfterFunc(ctx, func() { cancel(context.Cause(ctx)) })
	return inner, func() {
		stop()
		cancel(nil)
		s.inBackground()
	}
}

// inBackground records that the socket now runs in rueidis' background mode
// and starts watching it for death.
func (s *pinned) inBackground() {
	s.background.Store(true)
	s.watchDeath()
}

// watchDeath subscribes, once, to the socket's close: rueidis' background
// reader then notices at once when the server closes the socket (failover,
// CLIENT KILL, timeout) and notSendable refuses the next command as not
// submitted, even on a busy session the idle PING would skip. Watching needs
// the background reader, so it starts only once a cancellable ctx has put
// the socket in that mode anyway; a session used only with uncancellable
// contexts keeps rueidis' synchronous path and relies on the idle PING.
func (s *pinned) watchDeath() {
	s.watchOnce.Do(func() {
		ch := s.client.SetPubSubHooks(rueidis.PubSubHooks{OnMessage: func(rueidis.PubSubMessage) {}})
		s.dead.Store(&ch)
	})
}

// clientProbeWait is how long ClientAlive waits for its PING before going
// on: a closed client refuses at once, without the network.
const clientProbeWait = 5 * time.Millisecond

// ClientAlive returns ErrClientClosed (wrapped in a NotSubmitted *Error)
// once the rueidis client was found closed, nil otherwise. rueidis does not
// close or fail dedicated connections when its client closes, so the pool
// asks: at most once per idle-check period a PING is sent on the ordinary
// client, which a closed client refuses at once with rueidis.ErrClosing,
// sending nothing; two refusals in a row (a pipeline connection being
// replaced says ErrClosing once) mark the client closed for good. The PING
// runs on its own goroutine (Close waits for it, at most a second);
// ClientAlive waits for it only a few milliseconds, so a slow or
// stalled connection never delays the caller: any answer but ErrClosing,
// or none yet, counts as open.
func (p *Pool) ClientAlive() error {
	if p.clientClosed.Load() {
		return &Error{Class: NotSubmitted, Op: "client", Err: ErrClientClosed}
	}
	now, last := monoNow(), p.lastProbe.Load()
	// last is 0 before the first probe: monoNow counts from the package's
	// initialisation, so a young process must not read it as a recent probe.
	recent := last != 0 && now-last < max(p.idleCheck.Load(), int64(time.Millisecond))
	if recent || !p.lastProbe.CompareAndSwap(last, now) {
		return nil
	}
	done := make(chan struct{})
	p.closing.Add()
	go func() {
		defer p.closing.Done()
		defer close(done)
		p.probeClient()
	}()
	t := time.NewTimer(clientProbeWait)
	defer t.Stop()
	select {
	case <-done:
		if p.clientClosed.Load() {
			return &Error{Class: NotSubmitted, Op: "client", Err: ErrClientClosed}
		}
	case <-t.C:
	}
	return nil
}

// clientProbeTimeout bounds the PING of ClientAlive.
const clientProbeTimeout = time.Second

// probeClient sends the PING of ClientAlive and records a closed client.
// It is bounded by a cancellation, not a deadline: on the client's shared
// pipeline connection an expired deadline makes rueidis close the
// connection under the application's other commands, and a lone command
// with a deadline holds the socket synchronously, so that a command queued
// behind a stalled PING (a fence) would not even be written.
func (p *Pool) probeClient() {
	ctx, cancel := context.WithCancel(context.Background())
	timer := time.AfterFunc(clientProbeTimeout, cancel)
	defer timer.Stop()
	defer cancel()
	for range 2 {
		err := p.client.Do(ctx, p.client.B().Ping().Build()).Error()
		if !errors.Is(err, rueidis.ErrClosing) {
			return
		}
	}
	p.clientClosed.Store(true)
}
