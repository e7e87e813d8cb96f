package leasetest

import (
	"context"
	"crypto/rand"
	"errors"
	"fmt"
	"sync"
	"testing"

	"github.com/redis/rueidis"

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

// ClientOption returns the rueidis options that connect to the server:
// its address and password. Add your own fields before rueidis.NewClient.
func (s *Server) ClientOption() rueidis.ClientOption {
	return rueidis.ClientOption{InitAddress: []string{s.Addr()}, Password: s.password}
}

// Client returns a new rueidis client connected to the server (ClientOption,
// client-side caching on, as by default), closed by Close — at the end of
// the test for a Server from Start. Each call returns a client of its own.
// It blocks for the connection's handshake. It fails the test (or, for
// NewServer, panics) once the server is closed.
func (s *Server) Client() rueidis.Client {
	if s.tb != nil {
		s.tb.Helper()
	}
	client, err := s.newClient()
	if err != nil {
		s.fail(err)
	}
	return client
}

// Locks returns a new lease.Locks with opts on a rueidis client of its
// own, as a separate process would have, closed (the Locks, then its
// client) by Close — at the end of the test for a Server from Start. Close
// it earlier yourself if the test needs to; closing twice is harmless. It
// blocks for the connection's handshake. It fails the test (or, for
// NewServer, panics) when lease.New refuses an option or the server is
// closed.
func (s *Server) Locks(opts ...lease.Option) *lease.Locks {
	if s.tb != nil {
		s.tb.Helper()
	}
	client, err := rueidis.NewClient(s.ClientOption())
	if err != nil {
		s.fail(fmt.Errorf("connect: %w", err))
	}
	locks, err := lease.New(client, opts...)
	if err != nil {
		client.Close()
		s.fail(err)
	}
	if err := s.keep(func() { locks.Close(); client.Close() }); err != nil {
		locks.Close()
		client.Close()
		s.fail(err)
	}
	return locks
}

// errClosed is the error of Client and Locks after Close.
var errClosed = errors.New("server closed")

func (s *Server) newClient() (rueidis.Client, error) {
	client, err := rueidis.NewClient(s.ClientOption())
	if err != nil {
		return nil, fmt.Errorf("connect: %w", err)
	}
	if err := s.keep(client.Close); err != nil {
		client.Close()
		return nil, err
	}
	return client, nil
}

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
// closes every lease.Locks and rueidis client it handed out, newest first
// (a Locks before its client, so that the Locks' fences and clean-ups can
// still run), then closes the server and waits for its goroutines. It
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
