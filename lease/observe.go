package lease

import (
	"context"
	"errors"
	"log/slog"
	"time"

	"go.opentelemetry.io/otel/trace"

	"github.com/respire-go/respire/actor"
	"github.com/respire-go/respire/conn"
	sm "github.com/respire-go/respire/statemachine"
)

// This file is the one place that turns what the runtime already sees into
// telemetry: metrics (observe_metrics.go), spans (observe_trace.go) and log
// events (observe_log.go). The runtime calls it from a handful of places —
// after each step of a handle (its transitions and the end of its lease),
// around acquisitions, releases and resets, when a fence answers, when a
// keep-alive renewal is sent — and conn reports sessions, fallbacks and
// wire commands through a conn.Observer. Every call site checks
// core.obs != nil first; without WithMeterProvider, WithTracerProvider and
// WithLogger it is nil, and nothing here runs, allocates or reads a clock.

// scope is the instrumentation scope of the meter and the tracer.
const scope = "github.com/respire-go/respire/lease"

// observer is the telemetry of one New. Each part is nil when its option
// was not given.
type observer struct {
	metrics    *instruments
	tracer     trace.Tracer
	log        *eventLog
	prefixAttr bool         // WithKeyPrefixAttribute
	renewals   renewalSpans // the spans of keep-alive renewals in flight (observe_spans.go)
}

// newObserver returns the observer the options ask for, or nil when they
// ask for none.
func newObserver(o *options) (*observer, error) {
	if o.meterProvider == nil && o.tracerProvider == nil && o.logger == nil {
		return nil, nil
	}
	obs := &observer{prefixAttr: o.prefixAttr}
	if o.meterProvider != nil {
		m, err := newInstruments(o.meterProvider)
		if err != nil {
			return nil, err
		}
		obs.metrics = m
	}
	if o.tracerProvider != nil {
		obs.tracer = o.tracerProvider.Tracer(scope, trace.WithInstrumentationVersion(Version))
	}
	if o.logger != nil {
		obs.log = newEventLog(o.logger, o.keysInLogs)
	}
	return obs, nil
}

// connObserver is what the pool reports to this observer.
func (o *observer) connObserver() *conn.Observer {
	co := &conn.Observer{
		SessionOpened:  o.sessionOpened,
		SessionRetired: o.sessionRetired,
		FallbackTaken:  o.fallbackTaken,
	}
	if o.tracer != nil {
		co.Command = commandEvent
	}
	return co
}

// Stepped implements actor.Observer: one step of lock a (its mutex held).
func (o *observer) Stepped(a *actor.Lock, in sm.Input, effects []sm.Effect) {
	o.effects(lockOf(a), &in, effects)
}

// Fence implements actor.Observer: the span of a fence of one of a's
// commands, and the function told its answer.
func (o *observer) Fence(ctx context.Context, a *actor.Lock) (context.Context, func(error)) {
	l := lockOf(a)
	var span trace.Span
	if o.tracer != nil {
		ctx, span = o.startFence(ctx, l, a.AcquireSpan())
	}
	return ctx, func(err error) { o.fenced(l, span, err) }
}

// RenewalSent implements actor.Observer.
func (o *observer) RenewalSent(a *actor.Lock, due, now time.Duration) {
	o.renewalSent(lockOf(a), due, now)
}

// effects observes one step of lock l: in and the effects it produced; l.mu
// is held. It records held locks, renewals, releases and losses, and logs
// the operator's events, from the graph's edges (EffectTransition) and the
// end of the lease (EffectEndLease).
func (o *observer) effects(l *Lock, in *sm.Input, effects []sm.Effect) {
	edge := sm.NumEvents // the last edge of this step
	for i := range effects {
		switch e := &effects[i]; e.Kind {
		case sm.EffectTransition:
			edge = e.Event
			if e.From == sm.Acquiring && e.To == sm.Held {
				o.addHeld(l, 1) // acquired, or confirmed by settling: every way in counts once
			}
			o.edge(l, in, e.Event)
		case sm.EffectEndLease:
			o.leaseEnded(l, in, e.Ending, edge)
		}
	}
	if o.tracer != nil {
		o.traceEffects(l, effects)
	}
}

// edge observes one edge of the graph; l.mu is held.
func (o *observer) edge(l *Lock, in *sm.Input, e sm.Event) {
	switch e {
	case sm.EventRenewed, sm.EventRecovered, sm.EventRenewalRefused, sm.EventResetRejected,
		sm.EventRenewalUncertain, sm.EventRenewalUncertainUnfenced, sm.EventRenewalInterrupted, sm.EventRenewalRetry:
		o.countLock(l, lockRenewals, attrResult, renewalResult(e))
		o.renewalAnswered(l, e, in.Err)
	case sm.EventReleased, sm.EventReleaseNotOwned, sm.EventReleaseRefused, sm.EventReleaseNotSubmitted,
		sm.EventReleaseUncertain, sm.EventReleaseUncertainUnfenced:
		outcome := releaseResult(e)
		o.countLock(l, lockReleases, attrResult, outcome)
		if e != sm.EventReleased && e != sm.EventReleaseNotSubmitted {
			o.releaseWarning(l, outcome, in.Err)
		}
	}
}

// renewalResult names what a renewal's edge says about it.
func renewalResult(e sm.Event) string {
	switch e {
	case sm.EventRenewed:
		return "renewed"
	case sm.EventRecovered:
		return "recovered"
	case sm.EventRenewalRefused:
		return "refused"
	case sm.EventRenewalRetry:
		return "not-sent"
	case sm.EventResetRejected, sm.EventRenewalFailed:
		return "error"
	}
	return "unknown"
}

// releaseResult names what a release's edge says about its delete.
func releaseResult(e sm.Event) string {
	switch e {
	case sm.EventReleased:
		return "released"
	case sm.EventReleaseNotOwned:
		return "not-owned"
	case sm.EventReleaseRefused:
		return "refused"
	case sm.EventReleaseNotSubmitted:
		return "not-sent"
	}
	return "unknown"
}

// leaseEnded observes the end of l's lease, reached by edge; l.mu is held.
func (o *observer) leaseEnded(l *Lock, in *sm.Input, why sm.Ending, edge sm.Event) {
	o.addHeld(l, -1)
	o.holdEnded(l, why.Cause == sm.CauseReleased)
	if why.Cause == sm.CauseReleased {
		if o.tracer != nil {
			o.forgetRenewal(l)
		}
		return
	}
	if edge == sm.EventRenewalFailed && why.Cause == sm.CauseRenewalFailure {
		o.countLock(l, lockRenewals, attrResult, renewalResult(edge)) // a renewal's error reply
	}
	cause := lossCause(why)
	o.countLock(l, lockLosses, attrResult, cause)
	err := why.Err
	if err == nil {
		err = in.Err
	}
	if o.tracer != nil {
		o.traceLoss(l, cause, edge, err)
	}
	switch edge {
	case sm.EventReleaseNotOwned, sm.EventReleaseUncertain, sm.EventReleaseUncertainUnfenced:
		return // the release's own warning says it
	}
	o.lossWarning(l, cause, edge, err)
}

// lossCause names why a lease ended other than by a release: the
// LossReason's name, "renewal-failed" or "expired".
func lossCause(why sm.Ending) string {
	switch why.Cause {
	case sm.CauseRenewalFailure:
		return "renewal-failed"
	case sm.CauseExpired:
		return "expired"
	}
	if r := actor.LossReasonOf(why.Reason); r != 0 {
		return r.String()
	}
	return "unknown"
}

// renewalSent observes keep-alive renewals handed to the wire at now, due
// at due (0: not timer-driven, no lateness).
func (o *observer) renewalSent(l *Lock, due, now time.Duration) {
	if o.metrics == nil || due <= 0 {
		return
	}
	late := max(0, now-due)
	o.metrics.lateness.Record(context.Background(), late.Seconds(), o.lockAttrs(l, "", "").rec...)
}

// acquire runs the driver's acquisition observed: the acquisition's result
// and duration, its span (the commands of every try and the polling
// between them are inside it) and its debug event.
func (o *observer) acquire(ctx context.Context, l *Locks, spec actor.AcquireSpec) (*actor.Lock, error) {
	d := l.core.driver
	if o.metrics == nil && o.tracer == nil && !o.log.enabled(slog.LevelDebug) {
		return d.Acquire(ctx, spec)
	}
	start := time.Now()
	inner, span := o.startAcquire(ctx, l, spec.KeepAlive)
	waits := o.metrics != nil && (spec.Wait > 0 || spec.UntilDone)
	if waits {
		o.addWaiters(l.prefix, spec.Fair != nil, 1)
	}
	lock, err := d.Acquire(inner, spec)
	if waits {
		o.addWaiters(l.prefix, spec.Fair != nil, -1)
	}
	waited := time.Since(start)
	result := acquireResult(ctx, lock, err)
	if o.metrics != nil {
		attrs := o.viewAttrs(l.prefix, attrResult, result)
		o.metrics.acquisitions.Add(context.Background(), 1, attrs.add...)
		o.metrics.acquireDuration.Record(context.Background(), waited.Seconds(), attrs.rec...)
	}
	o.endAcquire(span, lock, result, err)
	if lock != nil {
		o.log.acquired(spec.WireKey, spec.TTL, spec.KeepAlive, waited)
	}
	return lock, err
}

// acquireResult names how an acquisition ended.
func acquireResult(ctx context.Context, lock *actor.Lock, err error) string {
	switch {
	case lock != nil:
		return "acquired"
	case err == nil:
		return "contended"
	case ctx.Err() != nil || errors.Is(err, ErrAcquiredTooLate):
		return "abandoned"
	}
	return "failed"
}

// fenced observes the answer to the fence of one of l's commands.
func (o *observer) fenced(l *Lock, span trace.Span, err error) {
	result := "ok"
	if err != nil {
		result = "failed"
	}
	o.countLock(l, lockFences, attrResult, result)
	endFence(span, result, err)
	o.log.fenced(l, result, err)
}

// sessionOpened is the pool's report of a new session.
func (o *observer) sessionOpened(node string) {
	if o.metrics != nil {
		o.metrics.sessionsOpened.Add(context.Background(), 1, o.serverAttrs(node, "", "").add...)
	}
}

// sessionRetired is the pool's report of a retired session.
func (o *observer) sessionRetired(node string, reason conn.RetireReason) {
	if o.metrics != nil {
		o.metrics.sessionsRetired.Add(context.Background(), 1, o.serverAttrs(node, attrResult, reason.String()).add...)
	}
	o.log.sessionRetired(node, reason)
}

// fallbackTaken is the pool's report of a fallback.
func (o *observer) fallbackTaken(node string, f conn.Fallback, first bool) {
	if o.metrics != nil {
		o.metrics.fallbacks.Add(context.Background(), 1, o.serverAttrs(node, attrCapability, f.String()).add...)
	}
	if first {
		o.log.fallbackLearned(node, f)
	}
}
