// Package track counts running work for a closer that must wait for all of
// it, including work that starts while it waits — which sync.WaitGroup
// forbids (an Add from zero must happen before Wait).
package track

import (
	"sync"
	"sync/atomic"
)

// Tracker counts running work. Add and Done cost two atomic operations
// unless someone waits. The zero value is ready to use; it is safe for
// concurrent use and must not be copied after first use.
type Tracker struct {
	running atomic.Int64
	waiting atomic.Int32 // callers in Wait: Done must signal idle

	mu   sync.Mutex
	idle chan struct{} // closed when running reaches 0 while someone waits
}

// Add records that one piece of work started.
func (t *Tracker) Add() { t.running.Add(1) }

// Done records that one piece of work ended.
func (t *Tracker) Done() {
	if t.running.Add(-1) == 0 && t.waiting.Load() > 0 {
		t.mu.Lock()
		if t.idle != nil {
			close(t.idle)
			t.idle = nil
		}
		t.mu.Unlock()
	}
}

// Wait blocks until no work runs. Work added while it waits is waited for
// too; it returns at the first moment nothing runs.
func (t *Tracker) Wait() { _ = t.WaitUntil(nil) }

// WaitUntil is Wait that gives up when stop is closed (a nil stop never
// is), reporting whether nothing ran any more when it returned. Work still
// running then goes on; a later Wait or WaitUntil waits for it.
func (t *Tracker) WaitUntil(stop <-chan struct{}) bool {
	return t.WaitWith(func(idle <-chan struct{}) bool {
		select {
		case <-idle:
			return true
		case <-stop:
			return false
		}
	})
}

// WaitWith is WaitUntil with the blocking receive left to wait, which
// blocks until idle is closed (returning true) or it gives up (false): for
// a caller that must block through a scheduler of its own (a simulator's
// tasks).
func (t *Tracker) WaitWith(wait func(idle <-chan struct{}) bool) bool {
	t.waiting.Add(1)
	defer t.waiting.Add(-1)
	for {
		t.mu.Lock()
		if t.running.Load() == 0 {
			t.mu.Unlock()
			return true
		}
		if t.idle == nil {
			t.idle = make(chan struct{})
		}
		idle := t.idle
		t.mu.Unlock()
		if !wait(idle) {
			return false
		}
	}
}
