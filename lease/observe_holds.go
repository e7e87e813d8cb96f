package lease

import (
	"time"
)

// holdStarts tells when each held lock was seen held, for
// respire.lock.hold.duration: the time since the instruments' epoch on the
// monotonic clock, kept in the lock itself (actor.Lock.SetHeldSince, 8
// bytes of the Lock; a table of held locks cost ~30 bytes a lock). Its
// methods are called with the lock's mutex held (observer effects).
type holdStarts struct {
	epoch time.Time
}

// start records that l is held from now.
func (h *holdStarts) start(l *Lock) {
	l.core().SetHeldSince(int64(max(1, time.Since(h.epoch)))) // 0 stands for none
}

// end forgets l's start and returns how long it was held; false if its
// start was not recorded.
func (h *holdStarts) end(l *Lock) (time.Duration, bool) {
	start := time.Duration(l.core().HeldSince())
	if start == 0 {
		return 0, false
	}
	l.core().SetHeldSince(0)
	return time.Since(h.epoch) - start, true
}
