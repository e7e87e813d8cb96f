package lease

import (
	"sync"
	"time"
)

// holdStarts remembers when each held lock was seen held, for
// respire.lock.hold.duration: one map entry of 16 bytes per held lock (a
// sync.Map of boxed time.Time cost ~130), as the time since the
// instruments' epoch on the monotonic clock.
type holdStarts struct {
	epoch time.Time
	mu    sync.Mutex
	since map[*Lock]time.Duration // nil while no lock is held: a map never shrinks
}

// start records that l is held from now.
func (h *holdStarts) start(l *Lock) {
	now := time.Since(h.epoch)
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.since == nil {
		h.since = make(map[*Lock]time.Duration)
	}
	h.since[l] = now
}

// end forgets l and returns how long it was held; false if its start was
// not recorded.
func (h *holdStarts) end(l *Lock) (time.Duration, bool) {
	now := time.Since(h.epoch)
	h.mu.Lock()
	defer h.mu.Unlock()
	start, ok := h.since[l]
	if !ok {
		return 0, false
	}
	delete(h.since, l)
	if len(h.since) == 0 {
		h.since = nil // the table the busiest moment grew goes with it
	}
	return now - start, true
}
