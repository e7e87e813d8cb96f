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

// Found from outside (issue 19): a watched lock without keep-alive sends a shortening reset
// whose reply is slow. The lock's context is driven by the deadline timer alone, so that timer
// must move to the shortened deadline when the reset is sent, not when its reply arrives.
func TestContextEndsByTheEarliestExpiryInFlight_AWatchedResetWithoutKeepAlive(t *testing.T) {
	d := acquired(t, 10*time.Second, false)
	d.step(Input{Kind: InputWatch})
	_, eff := d.reset(300 * time.Millisecond)
	watch := findTimer(t, eff, TimerDeadline)
	if want := d.now + 300*time.Millisecond; watch.At > want {
		t.Fatalf("deadline timer armed at %v; want by %v (the shortening reset's deadline)", watch.At, want)
	}
	eff = d.fire(TimerDeadline, eff)
	if d.h.State() != Uncertain || !has(eff, EffectEndLease) || !has(eff, EffectFence) {
		t.Fatalf("at the shortened deadline with the reset in flight: state %s, effects %+v; want Uncertain, lease ended, fence", d.h.State(), eff)
	}
}

// The same while a keep-alive is being stopped (its renewal in flight) and the context watched.
func TestContextEndsByTheEarliestExpiryInFlight_AResetQueuedBehindAStoppingKeepAlive(t *testing.T) {
	d := acquired(t, 10*time.Second, true)
	d.step(Input{Kind: InputWatch})
	c := d.newCaller()
	d.step(Input{Kind: InputKeepAliveStop, Caller: c})
	_, eff := d.reset(300 * time.Millisecond)
	watch := findTimer(t, eff, TimerDeadline)
	if want := d.now + 300*time.Millisecond; watch.At > want {
		t.Fatalf("deadline timer armed at %v; want by %v", watch.At, want)
	}
}
