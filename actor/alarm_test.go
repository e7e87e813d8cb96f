package actor

import (
	"runtime"
	"sync"
	"testing"
	"time"
)

// tick is the alarm message used by these tests.
type tick struct{ generation uint64 }

// tickRecorder collects the generations of delivered ticks.
type tickRecorder struct {
	mu    sync.Mutex
	ticks []uint64
}

func (r *tickRecorder) record(m tick) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.ticks = append(r.ticks, m.generation)
}

func (r *tickRecorder) delivered() []uint64 {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]uint64(nil), r.ticks...)
}

func newTestAlarm(clock Clock) (*Alarm[tick], *Mailbox[tick], *tickRecorder) {
	rec := &tickRecorder{}
	mb := NewMailbox(0, rec.record)
	return NewAlarm(clock, mb, func(g uint64) tick { return tick{g} }), mb, rec
}

func TestAlarmDeliversOneTickWhenDue(t *testing.T) {
	var clock ManualClock
	alarm, mb, rec := newTestAlarm(&clock)
	gen := alarm.Arm(time.Second)
	clock.Advance(time.Second - 1)
	waitHandled(t, mb)
	if got := rec.delivered(); len(got) != 0 {
		t.Fatalf("ticks before due = %v; want none", got)
	}
	clock.Advance(1)
	waitHandled(t, mb)
	if got := rec.delivered(); len(got) != 1 || got[0] != gen || !alarm.Current(gen) {
		t.Fatalf("ticks = %v, Current = %v; want [%d], true", got, alarm.Current(gen), gen)
	}
	clock.Advance(time.Hour)
	waitHandled(t, mb)
	if got := rec.delivered(); len(got) != 1 {
		t.Fatalf("ticks = %v; want exactly one per arming", got)
	}
	mb.Stop()
}

func TestAlarmStoppedBeforeFiringNeverDelivers(t *testing.T) {
	var clock ManualClock
	alarm, mb, rec := newTestAlarm(&clock)
	alarm.Arm(time.Second)
	if !alarm.Stop() {
		t.Fatal("Stop = false for an alarm that had not fired; want true")
	}
	clock.Advance(time.Hour)
	waitHandled(t, mb)
	if got := rec.delivered(); len(got) != 0 {
		t.Fatalf("ticks after Stop returned true = %v; want none", got)
	}
	mb.Stop()
}

func TestAlarmTickClaimedBeforeStopIsNotCurrent(t *testing.T) {
	var clock ManualClock
	gate := make(chan struct{})
	mb := NewMailbox(0, func(tick) { <-gate }) // the tick waits in the queue
	alarm := NewAlarm(&clock, mb, func(g uint64) tick { return tick{g} })
	gen := alarm.Arm(time.Second)
	clock.Advance(time.Second)
	if alarm.Stop() {
		t.Fatal("Stop = true after the tick was delivered; want false")
	}
	if alarm.Current(gen) {
		t.Fatal("Current(stale tick) = true after Stop; want false")
	}
	close(gate)
	mb.Stop()
}

func TestAlarmRearmMakesEarlierTickStale(t *testing.T) {
	var clock ManualClock
	alarm, mb, rec := newTestAlarm(&clock)
	first := alarm.Arm(time.Second)
	second := alarm.Arm(2 * time.Second)
	clock.Advance(time.Second)
	waitHandled(t, mb)
	if got := rec.delivered(); len(got) != 0 {
		t.Fatalf("ticks = %v; want none before the re-armed deadline", got)
	}
	clock.Advance(time.Second)
	waitHandled(t, mb)
	got := rec.delivered()
	if len(got) != 1 || got[0] != second || alarm.Current(first) {
		t.Fatalf("ticks = %v; want [%d] and the first generation stale", got, second)
	}
	mb.Stop()
}

func TestAlarmLateCallbackOfEarlierArmingDoesNotDeliverEarly(t *testing.T) {
	var clock ManualClock
	alarm, mb, rec := newTestAlarm(&clock)
	alarm.Arm(time.Second)
	clock.Advance(time.Second / 2)
	alarm.Arm(time.Second) // due at 1.5s
	alarm.fire()           // as if the first arming's callback ran late, now
	waitHandled(t, mb)
	if got := rec.delivered(); len(got) != 0 {
		t.Fatalf("ticks = %v; a late callback delivered before the new deadline", got)
	}
	clock.Advance(time.Second)
	waitHandled(t, mb)
	if got := rec.delivered(); len(got) != 1 {
		t.Fatalf("ticks = %v; want exactly one at the new deadline", got)
	}
	mb.Stop()
}

func TestAlarmOnRealClockNeverDeliversAfterStopReturnedTrue(t *testing.T) {
	alarm, mb, rec := newTestAlarm(RealClock())
	stoppedInTime := map[uint64]bool{}

	for i := range 2000 {
		gen := alarm.Arm(time.Duration(i%50) * time.Microsecond)
		if alarm.Stop() {
			stoppedInTime[gen] = true
		}
	}
	final := alarm.Arm(time.Microsecond)
	for !delivered(rec, final) {
		runtime.Gosched()
	}
	mb.Stop()
	for _, g := range rec.delivered() {
		if stoppedInTime[g] {
			t.Fatalf("tick of generation %d delivered after Stop returned true", g)
		}
	}
}

func delivered(rec *tickRecorder, generation uint64) bool {
	for _, g := range rec.delivered() {
		if g == generation {
			return true
		}
	}
	return false
}
