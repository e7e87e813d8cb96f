package leasetest

import (
	"context"
	"crypto/rand"
	"errors"
	"sync"
	"testing"

	"github.com/respire-go/respire/conn"
	"github.com/respire-go/respire/internal/wire"
	"github.com/respire-go/respire/lease"
	"github.com/respire-go/respire/sim"
)

// Option configures Start and NewServer. Options are plain values; reusing
// one is safe.
type Option func(*config)

// config is what the options set.
type config struct {
	profile sim.Profile
}

// WithProfile sets the server version the simulated node reproduces: one
// of sim.Profiles (sim.Redis70, sim.Redis84, sim.Valkey81, sim.Valkey90).
// Default sim.Redis70. An unknown profile fails Start (and makes NewServer
// panic).
func WithProfile(p sim.Profile) Option {
	return func(c *config) { c.profile = p }
}

// Server is one simulated Redis or Valkey node for a test, with the faults
// of a lock's life as methods. Every method is safe for concurrent use,
// also with the clients and locks it handed out. Create it with Start or
// NewServer; the zero value is not usable.
type Server struct {
	srv      *sim.Server
	password string
	tb       testing.TB // nil for NewServer: failures panic

	mu      sync.Mutex
	closers []func() // what Client and Locks handed out, in creation order
	closed  bool
	once    sync.Once
}

// Start starts a simulated server for the test and registers its Close
// with t.Cleanup: at the end of the test (after the test's own later
// cleanups) the server is resumed if paused, every lease.Locks and client
// it handed out is closed, newest first, and the server closes. It fails
// the test (t.Fatal) if the server cannot start; call it from the test's
// goroutine. It does not block beyond the listen call.
func Start(t testing.TB, opts ...Option) *Server {
	t.Helper()
	s, err := start(opts)
	if err != nil {
		t.Fatalf("leasetest: %v", err)
	}
	s.tb = t
	t.Cleanup(s.Close)
	return s
}

// NewServer starts a simulated server outside a test (an example, a
// benchmark's set-up, a program); the caller must Close it. As
// httptest.NewServer, it panics if the server cannot start (an unknown
// profile).
func NewServer(opts ...Option) *Server {
	s, err := start(opts)
	if err != nil {
		panic("leasetest: " + err.Error())
	}
	return s
}

func start(opts []Option) (*Server, error) {
	cfg := config{profile: sim.Redis70}
	for _, opt := range opts {
		opt(&cfg)
	}
	password := rand.Text()
	srv, err := sim.Start(context.Background(), sim.Config{Profile: cfg.profile, Password: password})
	if err != nil {
		return nil, err
	}
	return &Server{srv: srv, password: password}, nil
}

// Addr returns the "host:port" the server listens on (loopback). It stays
// the same across Failover.
func (s *Server) Addr() string { return s.srv.Addr() }

// Password returns the password of the server's "default" user, which
// every connection needs (rueidis.ClientOption.Password). It is random per
// server.
func (s *Server) Password() string { return s.password }

// Profile returns the server version the node reproduces now (the one of
// the latest Failover, else WithProfile's).
func (s *Server) Profile() sim.Profile { return s.srv.Profile() }

// Sim returns the simulated node itself, for what this package does not
// name: sim.Fault on single commands (Inject), the command log (Log,
// WaitFor), ACL users (SetUser). Its Close is this Server's to call.
func (s *Server) Sim() *sim.Server { return s.srv }

// Client returns a new client of respire-go's own for the server, for
// lease.New (or coordination and election on top of it): what your Redis
// client's adapter (rueidislease, goredis, valkeygo) gives a program. Each
// call returns a client of its own, closed by Close — at the end of the
// test for a Server from Start (close the Locks made on it first). To
// connect your own client instead, use Addr and Password. It sends nothing
// and does not block. It fails the test (or, for NewServer, panics) once
// the server is closed.
func (s *Server) Client() conn.Client {
	if s.tb != nil {
		s.tb.Helper()
	}
	client := wire.New(wire.Options{Addrs: []string{s.Addr()}, Password: s.password, Name: "leasetest"})
	if err := s.keep(client.Close); err != nil {
		s.fail(err)
	}
	return client
}

// NewClient returns a client of respire-go's own for the server at addr
// (any Redis or Valkey node, a sim.Server's too) with password ("" for
// none), for lease.New in tests and examples: in a program, take the
// client from your Redis client's adapter (rueidislease.New, goredis.New,
// valkeygo.New). It sends nothing and does not block; it needs no closing
// (the Locks made on it close their own connections).
func NewClient(addr, password string) conn.Client {
	return wire.New(wire.Options{Addrs: []string{addr}, Password: password, Name: "leasetest"})
}

// Locks returns a new lease.Locks with opts on a client of its own (see
// Client), as a separate process would have, closed by Close — at the end
// of the test for a Server from Start. Close it earlier yourself if the
// test needs to; closing twice is harmless. It sends nothing. It fails the
// test (or, for NewServer, panics) when lease.New refuses an option or the
// server is closed.
func (s *Server) Locks(opts ...lease.Option) *lease.Locks {
	if s.tb != nil {
		s.tb.Helper()
	}
	locks, err := lease.New(NewClient(s.Addr(), s.password), opts...)
	if err != nil {
		s.fail(err)
	}
	if err := s.keep(locks.Close); err != nil {
		locks.Close()
		s.fail(err)
	}
	return locks
}

// errClosed is the error of Locks after Close.
var errClosed = errors.New("server closed")

// keep registers closer for Close, or refuses it once Close began.
func (s *Server) keep(closer func()) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		return errClosed
	}
	s.closers = append(s.closers, closer)
	return nil
}

// fail ends the test, or panics outside one.
func (s *Server) fail(err error) {
	if s.tb != nil {
		s.tb.Helper()
		s.tb.Fatalf("leasetest: %v", err)
	}
	panic("leasetest: " + err.Error())
}

// Close resumes the server if it is paused (so that nothing waits on it),
// closes every lease.Locks it handed out, newest first (their fences and
// clean-ups still run), then closes the server and waits for its
// goroutines. It
// blocks until all that is done: a Locks' Close waits for its bounded
// background work (see lease.Locks.Close). It is idempotent; Start calls it
// at the end of the test.
func (s *Server) Close() {
	s.once.Do(func() {
		s.mu.Lock()
		s.closed = true
		closers := s.closers
		s.closers = nil
		s.mu.Unlock()
		s.srv.Resume()
		for i := len(closers) - 1; i >= 0; i-- {
			closers[i]()
		}
		s.srv.Close()
	})
}
