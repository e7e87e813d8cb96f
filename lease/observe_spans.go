package lease

import (
	"context"
	"sync"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/trace"

	"github.com/respire-go/respire/actor"
	sm "github.com/respire-go/respire/statemachine"
)

// The spans of what a held lock does in the background (WithTracerProvider):
// each keep-alive renewal, from the step that sent it to its answer, and
// each loss, at the moment the handle saw it. Both are roots (nothing
// waits for them), linked to the lock's respire.acquire span.
const (
	spanRenew = "respire.renew"
	spanLoss  = "respire.loss"
)

// renewalSpans are the spans of the keep-alive renewals in flight, at most
// one per lock. It is safe for concurrent use.
type renewalSpans struct {
	mu    sync.Mutex
	spans map[*actor.Lock]trace.Span
}

// put records lock l's renewal span, ending one left behind.
func (r *renewalSpans) put(l *actor.Lock, span trace.Span) {
	r.mu.Lock()
	if r.spans == nil {
		r.spans = map[*actor.Lock]trace.Span{}
	}
	old := r.spans[l]
	r.spans[l] = span
	r.mu.Unlock()
	if old != nil {
		old.SetAttributes(attribute.String(attrResult, "superseded"))
		old.End()
	}
}

// take removes and returns l's renewal span, nil when none.
func (r *renewalSpans) take(l *actor.Lock) trace.Span {
	r.mu.Lock()
	defer r.mu.Unlock()
	span := r.spans[l]
	delete(r.spans, l)
	return span
}

// lockSpanOptions are the options of a background span of l: a root,
// linked to its acquisition's span, with the view's prefix attribute.
// l.mu is held.
func (o *observer) lockSpanOptions(l *Lock) []trace.SpanStartOption {
	opts := []trace.SpanStartOption{trace.WithNewRoot(), trace.WithAttributes(o.spanAttrs(l.core().Prefix())...)}
	if link := l.core().AcquireSpanLocked(); link != nil {
		opts = append(opts, trace.WithLinks(trace.Link{SpanContext: *link}))
	}
	return opts
}

// traceEffects starts the span of each keep-alive renewal a step sends;
// l.mu is held.
func (o *observer) traceEffects(l *Lock, effects []sm.Effect) {
	for i := range effects {
		if e := &effects[i]; e.Kind == sm.EffectSendRenew && e.Caller == 0 {
			_, span := o.tracer.Start(context.Background(), spanRenew, o.lockSpanOptions(l)...)
			o.renewals.put(l.core(), span)
		}
	}
}

// renewalAnswered ends the span of l's keep-alive renewal, if one is in
// flight, with the result of the edge that answered it.
func (o *observer) renewalAnswered(l *Lock, e sm.Event, err error) {
	if o.tracer == nil {
		return
	}
	span := o.renewals.take(l.core())
	if span == nil {
		return // a manual reset's answer: its respire.reset span says it
	}
	span.SetAttributes(attribute.String(attrResult, renewalResult(e)), attribute.String("respire.event", e.String()))
	if err != nil {
		failSpan(span, err)
	}
	span.End()
}

// traceLoss records the end of l's lease other than by a release as a span
// of its own, with the cause and the edge that lost it, and ends the span
// of a renewal still in flight with the same cause; l.mu is held.
func (o *observer) traceLoss(l *Lock, cause string, edge sm.Event, err error) {
	if span := o.renewals.take(l.core()); span != nil {
		span.AddEvent("lost", trace.WithAttributes(attribute.String(attrResult, cause)))
		span.SetAttributes(attribute.String(attrResult, "lost"))
		span.End()
	}
	_, span := o.tracer.Start(context.Background(), spanLoss, o.lockSpanOptions(l)...)
	span.SetAttributes(attribute.String(attrResult, cause))
	if edge < sm.NumEvents {
		span.SetAttributes(attribute.String("respire.event", edge.String()))
	}
	if err != nil {
		failSpan(span, err)
	}
	span.End()
}

// forgetRenewal ends a renewal span left when l's lease ended by a release
// (its keep-alive stopped with a renewal in flight); l.mu is held.
func (o *observer) forgetRenewal(l *Lock) {
	if span := o.renewals.take(l.core()); span != nil {
		span.SetAttributes(attribute.String(attrResult, "released"))
		span.End()
	}
}
