package sim

import (
	"bufio"
	"context"
	"net"
	"strings"
	"sync"
)

// Server is one simulated node listening on TCP. Create it with Start;
// every method is safe for concurrent use. The zero value is not usable.
type Server struct {
	e    *Engine
	ln   net.Listener
	done chan struct{} // closed by Close

	mu     sync.Mutex
	conns  map[int64]net.Conn
	closed bool
	resume chan struct{} // non-nil while paused; closed by Resume
	faults []*armedFault
	fired  []FaultRecord

	closeOnce sync.Once
	wg        sync.WaitGroup
}

// Start listens on cfg.Addr (default a free loopback port) and serves
// until Close. It does not block; ctx only bounds the listen call.
func Start(ctx context.Context, cfg Config) (*Server, error) {
	s, err := listen(ctx, cfg)
	if err != nil {
		return nil, err
	}
	s.serve()
	return s, nil
}

func listen(ctx context.Context, cfg Config) (*Server, error) {
	if cfg.Profile == "" {
		cfg.Profile = Redis70
	}
	if _, err := specFor(cfg.Profile); err != nil {
		return nil, err
	}
	if cfg.Addr == "" {
		cfg.Addr = "127.0.0.1:0"
	}
	var lc net.ListenConfig
	ln, err := lc.Listen(ctx, "tcp", cfg.Addr)
	if err != nil {
		return nil, err
	}
	s := &Server{e: NewEngine(cfg), ln: ln, done: make(chan struct{}), conns: map[int64]net.Conn{}}
	s.e.port = ln.Addr().(*net.TCPAddr).Port
	s.e.onKill = s.closeConn
	return s, nil
}

func (s *Server) serve() {
	s.wg.Add(1)
	go s.acceptLoop()
}

// Addr returns the "host:port" the server listens on.
func (s *Server) Addr() string { return s.ln.Addr().String() }

// Engine returns the node's engine (keyspace, clients, log).
func (s *Server) Engine() *Engine { return s.e }

// Profile returns the node's current profile.
func (s *Server) Profile() Profile { return s.e.Profile() }

// Close stops listening, closes every connection and waits for all the
// server's goroutines to end. It is idempotent and always returns nil.
func (s *Server) Close() error {
	s.closeOnce.Do(func() {
		close(s.done)
		s.ln.Close()
		s.mu.Lock()
		s.closed = true
		conns := make([]net.Conn, 0, len(s.conns))
		for _, c := range s.conns {
			conns = append(conns, c)
		}
		s.mu.Unlock()
		for _, c := range conns {
			c.Close()
		}
	})
	s.wg.Wait()
	return nil
}

// Exec runs a command as an internal admin client (no ACL, no cluster
// redirect, no faults, not logged) and returns its RESP2 reply bytes, e.g.
// ":29998\r\n" for PTTL.
func (s *Server) Exec(args ...string) string { return s.e.AdminExec(args...) }

// Log returns a copy of the node's command log.
func (s *Server) Log() []Entry { return s.e.Log() }

// History returns the commands clients executed (see Engine.History).
func (s *Server) History() []Execution { return s.e.History() }

// ResetLog empties the node's command log.
func (s *Server) ResetLog() { s.e.ResetLog() }

// WaitFor blocks until a logged command (past or future) matches and
// returns it; see Engine.WaitFor.
func (s *Server) WaitFor(ctx context.Context, match func(Entry) bool) (Entry, error) {
	return s.e.WaitFor(ctx, match)
}

// KillClient closes a client's connection as CLIENT KILL ID would and
// reports whether the client existed.
func (s *Server) KillClient(id int64) bool { return s.e.KillClient(id) }

// SetUser creates or replaces an ACL user; see Engine.SetUser. A user
// without "client|tracking" makes rueidis fail to connect unless the
// client sets DisableCache; CLIENT SETINFO errors are ignored by rueidis.
func (s *Server) SetUser(name, password string, commands ...string) {
	s.e.SetUser(name, password, commands...)
}

// Failover replaces the node by a server of profile p behind the same
// address: client connections drop, scripts are forgotten, keys stay.
// It fails only for an unknown profile.
func (s *Server) Failover(p Profile) error { return s.e.Failover(p) }

// Pause holds the node: commands are read and logged but not executed
// until Resume. Idempotent.
func (s *Server) Pause() {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.resume == nil {
		s.resume = make(chan struct{})
	}
}

// Resume releases a Pause; held commands run in arrival order per
// connection. Idempotent.
func (s *Server) Resume() {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.resume != nil {
		close(s.resume)
		s.resume = nil
	}
}

// waitUnpaused blocks while paused, after flushing the replies already
// produced; false means the server closed.
func (s *Server) waitUnpaused(w *bufio.Writer) bool {
	s.mu.Lock()
	ch := s.resume
	s.mu.Unlock()
	if ch == nil {
		return true
	}
	w.Flush()
	select {
	case <-ch:
		return true
	case <-s.done:
		return false
	}
}

func (s *Server) closeConn(id int64) {
	s.mu.Lock()
	c := s.conns[id]
	s.mu.Unlock()
	if c != nil {
		c.Close()
	}
}

func (s *Server) acceptLoop() {
	defer s.wg.Done()
	for {
		nc, err := s.ln.Accept()
		if err != nil {
			return
		}
		s.mu.Lock()
		if s.closed {
			s.mu.Unlock()
			nc.Close()
			continue
		}
		s.wg.Add(1)
		s.mu.Unlock()
		go s.serveConn(nc)
	}
}

func (s *Server) serveConn(nc net.Conn) {
	defer s.wg.Done()
	defer nc.Close()
	id := s.e.newClient(nc.RemoteAddr().String(), nc.LocalAddr().String())
	s.mu.Lock()
	s.conns[id] = nc
	closed := s.closed
	s.mu.Unlock()
	defer func() {
		s.mu.Lock()
		delete(s.conns, id)
		s.mu.Unlock()
		s.e.CloseClient(id)
	}()
	if closed {
		return
	}
	r, w := bufio.NewReaderSize(nc, 64<<10), bufio.NewWriter(nc)
	for {
		raw, err := readCommand(r)
		if err != nil {
			return
		}
		if len(raw) == 0 {
			continue
		}
		if !s.handle(id, toStrings(raw), r, w) {
			return
		}
	}
}

// handle runs one command of connection id; false closes the connection.
func (s *Server) handle(id int64, args []string, r *bufio.Reader, w *bufio.Writer) bool {
	s.e.Record(id, args)
	if !s.waitUnpaused(w) {
		return false
	}
	if strings.EqualFold(args[0], "quit") {
		w.WriteString("+OK\r\n")
		w.Flush()
		return false
	}
	f := s.takeFault(id, args)
	var out []byte
	switch {
	case f != nil && f.Kind == DropBeforeExec:
		w.Flush()
		return false
	case f != nil && f.Kind == FailWith:
		out = []byte("-" + f.Error + "\r\n")
	default:
		if out = s.e.execute(id, args); out == nil {
			return false
		}
	}
	if f != nil && f.Kind == DropAfterExec {
		w.Flush()
		return false
	}
	if f != nil && f.Kind == DelayReply {
		w.Flush()
		if !s.delay(f) {
			return false
		}
	}
	w.Write(out)
	if s.e.Killed(id) {
		w.Flush()
		return false
	}
	if r.Buffered() == 0 {
		return w.Flush() == nil
	}
	return true
}

func toStrings(raw [][]byte) []string {
	out := make([]string, len(raw))
	for i, a := range raw {
		out[i] = string(a)
	}
	return out
}
