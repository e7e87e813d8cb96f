package sim

import (
	"strings"
	"time"
)

// armedFault is an injected fault with its remaining firings.
type armedFault struct {
	f    Fault
	left int
}

// Inject arms a fault for commands arriving from now on; see Fault. Faults
// are checked in injection order and at most one fires per command. While
// a DelayReply holds a reply, later commands of the same connection wait
// behind it (replies stay in order); other connections are unaffected.
// Safe for concurrent use; does not block.
func (s *Server) Inject(f Fault) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.faults = append(s.faults, &armedFault{f: f, left: max(f.Times, 1)})
}

// FaultLog returns a copy of the records of every fault that fired.
func (s *Server) FaultLog() []FaultRecord {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]FaultRecord(nil), s.fired...)
}

// takeFault finds, counts and records the first fault matching a command.
func (s *Server) takeFault(id int64, args []string) *Fault {
	s.mu.Lock()
	defer s.mu.Unlock()
	for i, a := range s.faults {
		f := a.f
		if (f.Command != "" && !strings.EqualFold(f.Command, args[0])) ||
			(f.ClientID != 0 && f.ClientID != id) || (f.Match != nil && !f.Match(args)) {
			continue
		}
		if a.left--; a.left == 0 {
			s.faults = append(s.faults[:i], s.faults[i+1:]...)
		}
		rec := FaultRecord{Kind: f.Kind, ClientID: id, Args: append([]string(nil), args...)}
		s.fired = append(s.fired, rec)
		if f.Fired != nil {
			select {
			case f.Fired <- rec:
			default:
			}
		}
		return &f
	}
	return nil
}

// delay holds a DelayReply fault's reply; false means the server closed.
func (s *Server) delay(f *Fault) bool {
	gate := f.Gate
	if gate == nil {
		t := time.NewTimer(f.Delay)
		defer t.Stop()
		select {
		case <-t.C:
			return true
		case <-s.done:
			return false
		}
	}
	select {
	case <-gate:
		return true
	case <-s.done:
		return false
	}
}
