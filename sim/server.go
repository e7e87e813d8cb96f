package sim

import (
	"bufio"
	"context"
	"net"
	"strings"
	"sync"
	"time"
)

// defaultExpireEvery is how often a Server runs Engine.ExpireDue (active
// expiry and BCAST invalidations) by default; real servers run their
// active expiry 10 times a second, and more often while keys expire.
const defaultExpireEvery = 10 * time.Millisecond

// Server is one simulated node listening on TCP. Create it with Start;
// every method is safe for concurrent use. The zero value is not usable.
// Besides each connection's replies it writes, between replies and never
// inside one, the messages the engine queued for the connection
// (invalidations, pub/sub messages; see Engine.TakePushes), and it runs
// Engine.ExpireDue every Config.ExpireEvery.
type Server struct {
	e           *Engine
	ln          net.Listener
	done        chan struct{} // closed by Close
	expireEvery time.Duration // < 0: no active expiry loop

	mu     sync.Mutex
	conns  map[int64]*srvConn
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
	s := &Server{e: NewEngine(cfg), ln: ln, done: make(chan struct{}), conns: map[int64]*srvConn{},
		expireEvery: cfg.ExpireEvery}
	if s.expireEvery == 0 {
		s.expireEvery = defaultExpireEvery
	}
	s.e.port = ln.Addr().(*net.TCPAddr).Port
	s.e.onKill = s.closeConn
	s.e.onPush = s.wakeConn
	return s, nil
}

func (s *Server) serve() {
	s.wg.Add(1)
	go s.acceptLoop()
	if s.expireEvery > 0 {
		s.wg.Add(1)
		go s.expireLoop()
	}
}

// expireLoop runs the engine's active expiry until Close.
func (s *Server) expireLoop() {
	defer s.wg.Done()
	t := time.NewTicker(s.expireEvery)
	defer t.Stop()
	for {
		select {
		case <-t.C:
			s.e.ExpireDue()
		case <-s.done:
			return
		}
	}
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
			conns = append(conns, c.nc)
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
func (s *Server) waitUnpaused(cn *srvConn) bool {
	s.mu.Lock()
	ch := s.resume
	s.mu.Unlock()
	if ch == nil {
		return true
	}
	cn.flush()
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
		c.nc.Close()
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
	cn := &srvConn{id: id, nc: nc, w: bufio.NewWriter(nc), wake: make(chan struct{}, 1)}
	s.mu.Lock()
	s.conns[id] = cn
	closed := s.closed
	s.mu.Unlock()
	stop := make(chan struct{})
	s.wg.Add(1)
	go s.pushLoop(cn, stop)
	defer func() {
		close(stop)
		s.mu.Lock()
		delete(s.conns, id)
		s.mu.Unlock()
		s.e.CloseClient(id)
	}()
	if closed {
		return
	}
	cn.signal() // messages queued before the connection was registered
	r := bufio.NewReaderSize(nc, 64<<10)
	for {
		raw, err := readCommand(r)
		if err != nil {
			return
		}
		if len(raw) == 0 {
			continue
		}
		if !s.handle(cn, toStrings(raw), r) {
			return
		}
	}
}

// handle runs one command of the connection; false closes it. The
// connection's writer is held from execution to the reply, so messages
// for it (written by pushLoop) never split or overtake a reply.
func (s *Server) handle(cn *srvConn, args []string, r *bufio.Reader) bool {
	id := cn.id
	s.e.Record(id, args)
	if !s.waitUnpaused(cn) {
		return false
	}
	cn.wmu.Lock()
	defer cn.wmu.Unlock()
	w := cn.w
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
		if out = s.e.execute(id, args, true, r.Buffered() == 0); out == nil {
			return false
		}
	}
	if f != nil && f.Kind == ReplaceReply {
		out = []byte(f.Reply)
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

// srvConn is one client connection of a Server.
type srvConn struct {
	id   int64
	nc   net.Conn
	wmu  sync.Mutex // held while writing a reply or queued messages
	w    *bufio.Writer
	wake chan struct{} // capacity 1: messages are queued for the connection
}

func (cn *srvConn) flush() {
	cn.wmu.Lock()
	defer cn.wmu.Unlock()
	cn.w.Flush()
}

func (cn *srvConn) signal() {
	select {
	case cn.wake <- struct{}{}:
	default:
	}
}

// wakeConn is the engine's push hook: the connection has messages queued.
func (s *Server) wakeConn(id int64) {
	s.mu.Lock()
	cn := s.conns[id]
	s.mu.Unlock()
	if cn != nil {
		cn.signal()
	}
}

// pushLoop writes the messages queued for the connection (invalidations
// and pub/sub messages caused by other connections or by expiry) until
// stop is closed.
func (s *Server) pushLoop(cn *srvConn, stop <-chan struct{}) {
	defer s.wg.Done()
	for {
		select {
		case <-cn.wake:
			cn.wmu.Lock()
			for _, m := range s.e.TakePushes(cn.id) {
				cn.w.Write(m)
			}
			cn.w.Flush()
			cn.wmu.Unlock()
		case <-stop:
			return
		}
	}
}
