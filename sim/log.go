package sim

import (
	"context"
	"slices"
)

// Log returns a copy of the command log: every command clients sent, in
// arrival order (admin commands are not logged). Safe for concurrent use.
func (e *Engine) Log() []Entry {
	e.mu.Lock()
	defer e.mu.Unlock()
	out := make([]Entry, len(e.log))
	for i, en := range e.log {
		out[i] = Entry{Seq: en.Seq, ClientID: en.ClientID, Args: slices.Clone(en.Args)}
	}
	return out
}

// ResetLog empties the command log; sequence numbers keep increasing.
func (e *Engine) ResetLog() {
	e.mu.Lock()
	defer e.mu.Unlock()
	e.log = nil
}

// WaitFor blocks until the log holds an entry (already logged or arriving
// later) for which match returns true, and returns the first such entry.
// It returns ctx.Err() when ctx ends first. match runs without locks held.
func (e *Engine) WaitFor(ctx context.Context, match func(Entry) bool) (Entry, error) {
	var seen int64
	for {
		e.mu.Lock()
		var fresh []Entry
		for _, en := range e.log {
			if en.Seq > seen {
				fresh = append(fresh, Entry{Seq: en.Seq, ClientID: en.ClientID, Args: slices.Clone(en.Args)})
			}
		}
		wake := e.logWake
		e.mu.Unlock()
		for _, en := range fresh {
			if match(en) {
				return en, nil
			}
			seen = en.Seq
		}
		select {
		case <-wake:
		case <-ctx.Done():
			return Entry{}, ctx.Err()
		}
	}
}

// KillClient kills a client as CLIENT KILL ID would and reports whether it
// existed. The network layer closes its socket.
func (e *Engine) KillClient(id int64) bool {
	e.mu.Lock()
	_, ok := e.clients[id]
	if ok {
		e.kill(id)
	}
	e.unlockAndCloseVictims(0)
	return ok
}

// Failover replaces the node's server process by one of profile p, as a
// promoted replica would: all clients are killed, the script cache is
// emptied, keys and ACL users are kept.
func (e *Engine) Failover(p Profile) error {
	spec, err := specFor(p)
	if err != nil {
		return err
	}
	e.mu.Lock()
	e.spec, e.profile = spec, p
	e.scripts = map[string]string{}
	for id := range e.clients {
		e.kill(id)
	}
	e.trackTable, e.bcast, e.bcastDirty = nil, nil, false // a new process tracks nothing
	e.unlockAndCloseVictims(0)
	return nil
}
