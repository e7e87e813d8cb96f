package sim

import (
	"slices"
	"strings"
	"time"
)

// armedFault is an injected fault with its remaining firings.
type armedFault struct {
	f    Fault
	left int
}

// Inject arms a fault for commands arriving (invalidations queued) from
// now on; see Fault. Faults are checked in injection order and at most one
// fires per command or invalidation. While a DelayReply holds a reply,
// later commands of the same connection wait behind it (replies stay in
// order); other connections are unaffected. Safe for concurrent use; does
// not block.
func (s *Server) Inject(f Fault) {
	if isPushFault(f.Kind) {
		s.e.setPushFaults(s.takePushFault, s.holdPush)
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	s.faults = append(s.faults, &armedFault{f: f, left: max(f.Times, 1)})
}

// isPushFault tells the kinds that act on invalidations, not commands.
func isPushFault(k FaultKind) bool { return k == DropPush || k == DelayPush }

// FaultLog returns a copy of the records of every fault that fired.
func (s *Server) FaultLog() []FaultRecord {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]FaultRecord(nil), s.fired...)
}

// takeFault finds, counts and records the first command fault matching a
// command.
func (s *Server) takeFault(id int64, args []string) *Fault {
	return s.take(id, args, func(f *Fault) bool {
		return !isPushFault(f.Kind) && (f.Command == "" || strings.EqualFold(f.Command, args[0]))
	})
}

// takePushFault finds, counts and records the first push fault matching
// an invalidation (["invalidate", key...]) for the client. The engine
// calls it with its mutex held.
func (s *Server) takePushFault(id int64, inv []string) *Fault {
	return s.take(id, inv, func(f *Fault) bool {
		return isPushFault(f.Kind) && (f.Key == "" || len(inv) == 1 || slices.Contains(inv[1:], f.Key))
	})
}

// take finds, counts and records the first fault that matches (kind and
// target by match, then ClientID and Match).
func (s *Server) take(id int64, args []string, match func(*Fault) bool) *Fault {
	s.mu.Lock()
	defer s.mu.Unlock()
	for i, a := range s.faults {
		f := a.f
		if !match(&f) || (f.ClientID != 0 && f.ClientID != id) || (f.Match != nil && !f.Match(args)) {
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

// holdPush runs release once a DelayPush's delay is over, on a goroutine
// Close waits for; not at all when the server closes first.
func (s *Server) holdPush(f *Fault, release func()) {
	s.wg.Add(1)
	go func() {
		defer s.wg.Done()
		if s.delay(f) {
			release()
		}
	}()
}

// delay waits out a DelayReply's or DelayPush's delay or gate; false
// means the server closed.
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
