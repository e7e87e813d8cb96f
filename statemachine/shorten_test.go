package statemachine

import (
	"testing"
	"time"
)

// Found by the deterministic simulator (sim/dst, seed 551): a reset that SHORTENS the lease
// may apply on the server before its reply arrives, so the handle must count the shorter
// deadline from the moment it sends it, not from the reply.
func TestShorteningResetInFlightCountsFromItsSendAtOnce(t *testing.T) {
	d := acquired(t, 30*time.Second, false)
	d.advance(10 * time.Millisecond)
	_, eff := d.reset(time.Second)
	renew := find(t, eff, EffectSendRenew)
	sentAt := d.now
	d.advance(20 * time.Millisecond)
	if got, want := d.h.RemainingEstimate(d.now), time.Second-20*time.Millisecond; got != want {
		t.Fatalf("RemainingEstimate with the shortening reset in flight = %v; want %v", got, want)
	}
	if got, _ := d.h.LeaseDeadline(); got != sentAt+time.Second {
		t.Fatalf("LeaseDeadline = %v; want %v (send time + the in-flight TTL)", got, sentAt+time.Second)
	}
	d.done(renew.Op, OutcomeDefinite, errNoPerm) // did not run: the old deadline counts again
	if got, want := d.h.RemainingEstimate(d.now), 30*time.Second-30*time.Millisecond; got != want {
		t.Fatalf("RemainingEstimate after a definite error = %v; want %v", got, want)
	}
}

func TestLengtheningResetInFlightKeepsTheConfirmedDeadline(t *testing.T) {
	d := acquired(t, time.Second, false)
	confirmed, _ := d.h.LeaseDeadline()
	d.reset(time.Minute)
	if got, _ := d.h.LeaseDeadline(); got != confirmed {
		t.Fatalf("LeaseDeadline with a longer reset in flight = %v; want the confirmed %v", got, confirmed)
	}
}

func TestKeepAliveDeadlineWatchMovesEarlierWhenAShorteningResetIsSent(t *testing.T) {
	d := acquired(t, 30*time.Second, true)
	_, eff := d.reset(time.Second)
	watch := findTimer(t, eff, TimerDeadline)
	if watch.At != d.now+time.Second {
		t.Fatalf("deadline timer armed at %v; want %v (the shortening reset's deadline)", watch.At, d.now+time.Second)
	}
	eff = d.fire(TimerDeadline, eff)
	if d.h.State() != Uncertain || !has(eff, EffectCancelKeepAlive) || !has(eff, EffectFence) {
		t.Fatalf("after the deadline with the reset in flight: state %s, effects %+v; want Uncertain, keep-alive cancelled, fence", d.h.State(), eff)
	}
}
