package dst

import (
	"context"
	"strconv"
	"strings"
	"time"

	"github.com/respire-go/respire/actor"
	sm "github.com/respire-go/respire/statemachine"
)

// observer is a process's actor.Observer: the driver tells it every step
// of every lock (input and effects), for the transcript and the stats. It
// never blocks and never calls back into a lock.
type observer struct {
	w *world
	p *process
}

var inputNames = [...]string{"?", "acquire", "reset", "keep-alive-start", "keep-alive-stop", "release", "close",
	"caller-cancelled", "command-done", "timer", "fence-done", "observe", "watch", "owner-refuted", "acquire-settled"}

var outcomeNames = [...]string{"?", "ok", "mismatch", "not-submitted", "definite", "uncertain"}

// Stepped implements actor.Observer.
func (o *observer) Stepped(l *actor.Lock, in sm.Input, effects []sm.Effect) {
	w := o.w
	if in.Kind == sm.InputAcquireSettled {
		w.stats.Settled++
	}
	for _, e := range effects {
		switch {
		case e.Kind == sm.EffectTransition && e.From == sm.Recovering && e.To == sm.Held:
			w.stats.Recoveries++
		case e.Kind == sm.EffectCleanupDelete:
			w.stats.Cleanups++
		case e.Kind == sm.EffectSendRelease || e.Kind == sm.EffectSendRenew:
			w.check.dispatched(l.Token(), e.Kind, w.nextID) // invariant 3's exemption (checker.unsealedBefore)
		}
	}
	if !w.trace.enabled {
		return
	}
	var b strings.Builder
	b.WriteString("<- ")
	b.WriteString(inputNames[min(int(in.Kind), len(inputNames)-1)])
	if in.Kind == sm.InputCommandDone || in.Kind == sm.InputAcquireSettled {
		b.WriteString(" op " + strconv.Itoa(int(in.Op)) + " " + outcomeNames[min(int(in.Outcome), len(outcomeNames)-1)])
	}
	if in.Kind == sm.InputTimer {
		b.WriteString(" " + strconv.Itoa(int(in.Timer)))
	}
	if in.Err != nil {
		b.WriteString(" err=" + in.Err.Error())
	}
	for _, e := range effects {
		if e.Kind == sm.EffectTransition {
			b.WriteString("; " + e.From.String() + " -" + e.Event.String() + "-> " + e.To.String())
		}
	}
	w.trace.logf(w, o.p, tokenName(l.Token()), "%s", b.String())
}

// Fence implements actor.Observer.
func (o *observer) Fence(ctx context.Context, _ *actor.Lock) (context.Context, func(error)) {
	return ctx, func(error) {}
}

// RenewalSent implements actor.Observer: the renewals the renewer hands
// to the wire together (one Session.ExtendMany) share their time, so a
// new time is a new batch.
func (o *observer) RenewalSent(_ *actor.Lock, _, now time.Duration) {
	if p := o.p; !p.renewedOnce || p.lastRenewalSent != now {
		p.renewedOnce, p.lastRenewalSent = true, now
		o.w.stats.RenewalBatches++
	}
}
