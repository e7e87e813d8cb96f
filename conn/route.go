package conn

import "sync"

// Route records which session carries one command, and lets its owner stop
// the command before it is handed to a socket. A managed lock keeps one
// Route per command in flight: the operation calls it right before every
// hand-off (again after each redirect), so after an uncertain outcome
// Session names the socket that carried the last attempt, which is the one
// to fence. The zero value is ready to use; a nil *Route is allowed wherever
// one is accepted and records nothing. Safe for concurrent use: Abort may
// race the hand-off, and then either the command is not sent or Abort's
// caller sees the session (sequentially consistent atomics).
type Route struct {
	mu      sync.Mutex
	session Session // the carrier of the last hand-off; nil before the first
	aborted bool
}

// Carry records s as the carrier and reports whether the command may be
// handed to it (false once Abort was called): a Transport calls it right
// before every hand-off. It does not block.
func (r *Route) Carry(s Session) bool {
	if r == nil {
		return true
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	r.session = s
	return !r.aborted
}

// Abort stops the command from being handed to any socket from now on. It
// returns the session a previous hand-off may have used (nil if none): a
// command already handed off is not recalled, so the caller must fence that
// session. It does not block.
func (r *Route) Abort() Session {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.aborted = true
	return r.session
}

// Session returns the session of the last hand-off, or nil if the command
// never reached one. It does not block.
func (r *Route) Session() Session {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.session
}

// Adopt records the carrier of a command sent with from as r's: a managed
// lock made once its SET's reply is in takes over the Route the SET was
// sent with. Call it only when no operation uses from or r any more.
func (r *Route) Adopt(from *Route) {
	s := from.Session()
	r.mu.Lock()
	defer r.mu.Unlock()
	r.session = s
}

// Reset clears r for the next command. Call it only when no operation uses
// r any more.
func (r *Route) Reset() {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.session, r.aborted = nil, false
}
