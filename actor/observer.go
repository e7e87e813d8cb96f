package actor

import (
	"context"
	"time"

	"go.opentelemetry.io/otel/trace"

	sm "github.com/respire-go/respire/statemachine"
)

// Observer is told what the driver does, for telemetry (package lease's
// metrics, spans and log events implement it). A nil Observer costs
// nothing: every call site checks for it first. Its methods must not block
// and must not call back into the lock.
type Observer interface {
	// Stepped observes one step of lock l: the input and the effects it
	// produced; l's mutex is held.
	Stepped(l *Lock, in sm.Input, effects []sm.Effect)
	// Fence is called before a fence of one of l's commands is sent; it
	// returns the context to send it under (a span's) and the function told
	// the fence's answer.
	Fence(ctx context.Context, l *Lock) (context.Context, func(err error))
	// RenewalSent observes a keep-alive renewal handed to the wire at now,
	// due at due.
	RenewalSent(l *Lock, due, now time.Duration)
}

// AcquireSpan returns the span context a fence of l links to, nil when
// none was recorded (see SetAcquireSpan); l's mutex must not be held.
func (l *Lock) AcquireSpan() *trace.SpanContext {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.AcquireSpanLocked()
}

// AcquireSpanLocked is AcquireSpan for an Observer's Stepped, which runs
// with l's mutex held.
func (l *Lock) AcquireSpanLocked() *trace.SpanContext {
	if l.side == nil {
		return nil
	}
	return l.side.acquireSpan
}
