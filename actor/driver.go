package lease

import (
	"context"
	"errors"
	"math/rand/v2"
	"sync"
	"sync/atomic"
	"time"

	"github.com/redis/rueidis"

	"github.com/respire-go/respire/actor"
	"github.com/respire-go/respire/conn"
	"github.com/respire-go/respire/internal/track"
)

// cleanupTimeout bounds the background compare-and-delete that removes the
// lock of an acquisition whose caller gave up after the SET was sent. It
// never delays the caller; only Locks.Close waits for it.
const cleanupTimeout = 5 * time.Second

// managed is the state the managed handles of one New share: the clock, the
// per-session fencing permission, the renewal batchers and the background
// work Close waits for. It is safe for concurrent use.
type managed struct {
	core    *core
	clock   actor.Clock
	jitter  func() float64 // random in [0, 1) for polling sleeps (see sm.Poll)
	cluster bool

	standalone sessionCache // the current session, standalone mode only
	fencing    sync.Map                     // conn.Session → fenceVerdict

	mu       sync.Mutex
	renewers map[string]*renewer // per node address

	timers timerHeap // every lock's renewal and deadline timers (timers.go)

	unfencedWarning        sync.Once
	unfencedRenewalWarning sync.Once
	push                   *pushHub      // push-driven waiting and loss detection; nil with WithoutPush
	background             track.Tracker // fences and clean-ups; Locks.Close waits for them
	inflight               track.Tracker // lock commands sent and the steps of their completions
}

func (l *Locks) managed() *managed {
	c := l.core
	c.managedOnce.Do(func() {
		c.managed = &managed{
			core:     c,
			clock:    actor.RealClock(),
			jitter:   rand.Float64,
			cluster:  c.client.Mode() == rueidis.ClientModeCluster,
			renewers: map[string]*renewer{},
		}
		if !c.withoutPush {
			c.managed.push = newPushHub(c.managed)
		}
		c.onClose(c.managed.closing)
	})
	return c.managed
}

// closing waits for the background work of this Locks (clean-up deletes of
// abandoned acquisitions, fences; each bounded). Locks.Close runs it before
// the sessions are retired (waiting CloseGrace at most: the work then goes
// on under retired sessions) and again after; the second time it first waits
// for the lock commands that were in flight on them (their sockets are
// closed now, so they end within rueidis' one-second drain, or at their
// ctx), so that the fences their uncertain outcomes start are waited for
// too.
func (m *managed) closing(sessionsRetired bool) {
	if m.push != nil {
		m.push.close()
	}
	if !sessionsRetired {
		grace, cancel := context.WithTimeout(context.Background(), CloseGrace) // wall-clock, as Close's bound
		defer cancel()
		m.background.WaitUntil(grace.Done())
		return
	}
	m.inflight.Wait()
	m.background.Wait()
}

// mayFence reports whether session s can be fenced: its CLIENT ID is known
// and the user may run CLIENT KILL (probed once per session with the SKIPME
// form). It returns nil when permitted, a *PermissionError when the server
// definitively refused (cached for the session's life), or another error
// (not cached) when the probe could not be answered. It blocks only the
// first time per session.
func (m *managed) mayFence(ctx context.Context, s conn.Session) error {
	if v, known := m.fencing.Load(s); known {
		return v.(fenceVerdict).err
	}
	err := m.probe(ctx, s)
	var permErr *PermissionError
	if err != nil && !errors.As(err, &permErr) {
		return err
	}
	m.fencing.Range(func(old, _ any) bool {
		if old.(conn.Session).Retired() {
			m.fencing.Delete(old)
		}
		return true
	})
	m.fencing.Store(s, fenceVerdict{err: err})
	return err
}

// fenceVerdict is the cached answer of mayFence for one session.
type fenceVerdict struct{ err error }

// sessionFor returns the session for wireKey: in standalone mode the cached
// current session while it is not retired, otherwise the pool's routing.
func (m *managed) sessionFor(ctx context.Context, wireKey string) (conn.Session, error) {
	if err := m.core.closedErr(); err != nil {
		return nil, err
	}
	if !m.cluster {
		if s := m.standalone.Load(); s != nil && !s.Retired() && m.core.pool.IsPrimary(s.Node()) {
			return s, nil
		}
	}
	s, err := m.core.pool.SessionForKey(ctx, wireKey)
	if err == nil && !m.cluster {
		m.standalone.Store(s)
	}
	return s, err
}

func (m *managed) probe(ctx context.Context, s conn.Session) error {
	if _, ok := s.Identity(); !ok {
		idErr := s.IdentityError()
		if idErr == nil {
			idErr = conn.ErrNoIdentity
		}
		if isPermissionDenial(idErr) {
			return &PermissionError{Command: "CLIENT ID", Err: idErr}
		}
		return &conn.Error{Class: conn.Definite, Op: "identity", Addr: s.Node(), Session: s, Err: idErr}
	}
	err := s.ProbeKill(ctx)
	if err != nil && conn.ClassOf(err) == conn.Definite && isPermissionDenial(err) {
		return &PermissionError{Command: "CLIENT KILL", Err: err}
	}
	return err
}

// renewalSession routes key to its session and checks that managed renewal
// may run there (see renewalPermit). It blocks for the routing and, once per
// session, the probe.
func (m *managed) renewalSession(ctx context.Context, wireKey string) (conn.Session, error) {
	s, err := m.sessionFor(ctx, wireKey)
	if err != nil {
		return nil, err
	}
	if _, err := m.renewalPermit(ctx, s); err != nil {
		return nil, err
	}
	return s, nil
}

// renewalPermit reports whether renewals may run on s: fenced when the user
// may run CLIENT ID and CLIENT KILL there; unfenced (true) when not, if
// WithUnfencedRenewal chose that; otherwise the *PermissionError.
func (m *managed) renewalPermit(ctx context.Context, s conn.Session) (unfenced bool, err error) {
	err = m.mayFence(ctx, s)
	var permErr *PermissionError
	if err != nil && m.core.unfencedRenewal && errors.As(err, &permErr) {
		m.unfencedRenewalWarning.Do(func() {
			m.core.logger.Warn("lease: renewing without fencing (WithUnfencedRenewal): the user may not run "+
				"CLIENT ID/CLIENT KILL; a renewal with an unknown outcome ends the lock and may still run later",
				"error", err)
		})
		return true, nil
	}
	return false, err
}

// warnUnfenced logs, once per Locks, that releases go unfenced.
func (m *managed) warnUnfenced(err error) {
	m.unfencedWarning.Do(func() {
		m.core.logger.Warn("lease: releasing without fencing: the user may not run CLIENT ID/CLIENT KILL; "+
			"an interrupted release cannot be fenced", "error", err)
	})
}

// commandContext applies WithCommandTimeout to one managed command.
func (m *managed) commandContext(ctx context.Context) (context.Context, context.CancelFunc) {
	if m.core.commandTimeout > 0 {
		return context.WithTimeout(ctx, m.core.commandTimeout)
	}
	return ctx, func() {}
}

// fenceContext bounds a fence by FenceTimeout, or by WithCommandTimeout
// when that is shorter. The bound is a cancellation, not a deadline: the
// kill travels on the client's shared pipeline connection, and rueidis
// closes that connection, under the application's other commands, when a
// deadline expires on it (a cancellation only ends the wait).
func (m *managed) fenceContext() (context.Context, context.CancelFunc) {
	return m.fenceBound(context.Background())
}

// goBackground runs f on a goroutine that Locks.Close waits for.
func (m *managed) goBackground(f func()) {
	m.background.Add()
	go func() {
		defer m.background.Done()
		f()
	}()
}

// cleanupDelete deletes key if it still holds token, once the SET that an
// abandoned acquisition sent on setOn can no longer run after the delete:
// on setOn itself while it lives (the delete queues behind the SET on the
// same socket); otherwise — setOn retired, or that delete's outcome unknown
// — it fences the socket (nothing it carried can run after the kill's
// reply), reads the key on a fresh session, and deletes it only if it still
// holds the token: a delete that ran, or a SET that never did, left it
// without, so a delete sent then is the first to run. It goes on until the
// key is settled or ctx ends. Without an identity setOn cannot be fenced and
// the delete is best effort (the key then lives at most until its expiry).
func (m *managed) cleanupDelete(ctx context.Context, setOn conn.Session, key, token string) error {
	op := conn.ReleaseOp(key, token)
	if setOn != nil && !setOn.Retired() {
		if _, err := setOn.Do(ctx, op, nil); settled(err) {
			return err
		}
	}
	unsettled := setOn
	for {
		if unsettled != nil {
			if err := m.core.pool.Fence(ctx, unsettled); err != nil && !errors.Is(err, conn.ErrNoIdentity) {
				return err // the SET or a delete may still run: nothing more can be proved
			}
			unsettled = nil
		}
		res, err := m.core.pool.Do(ctx, conn.OwnerOp(key), nil)
		if err == nil && (!res.Owned || res.Token != token) {
			return nil // gone, or another owner's
		}
		if err == nil {
			route := &conn.Route{}
			if _, err = m.core.pool.Do(ctx, op, route); settled(err) {
				return err
			}
			unsettled = route.Session() // unknown: fence it and look again
		}
		if errors.Is(err, conn.ErrPoolClosed) || sleepContext(ctx, actor.RealClock(), cleanupRetry) != nil {
			return err
		}
	}
}

// settled reports whether a delete's outcome is known for good: an answer,
// or a server error reply that a later attempt would get too (not a
// redirect, CLUSTERDOWN, LOADING…: those did not run and are tried again).
func settled(err error) bool {
	return err == nil || (conn.ClassOf(err) == conn.Definite && !errors.Is(err, conn.ErrDidNotRun))
}

// cleanupRetry is the pause between clean-up deletes that could not be sent.
const cleanupRetry = 50 * time.Millisecond

// sessionCache holds one session, read without a lock.
type sessionCache struct{ p atomic.Pointer[sessionBox] }

type sessionBox struct{ s conn.Session }

// Load returns the session, nil when none was stored.
func (c *sessionCache) Load() conn.Session {
	if b := c.p.Load(); b != nil {
		return b.s
	}
	return nil
}

// Store keeps s (allocating only when it changes).
func (c *sessionCache) Store(s conn.Session) {
	if b := c.p.Load(); b == nil || b.s != s {
		c.p.Store(&sessionBox{s: s})
	}
}
