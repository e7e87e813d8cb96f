package lease

import (
	"context"
	"errors"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/trace"

	"github.com/respire-go/respire/actor"
	"github.com/respire-go/respire/conn"
)

// The spans (WithTracerProvider). Each is a child of the span in the call's
// ctx; the wire commands a call sends are events of its span, named after
// the command (conn reports them through conn.Observer.Command). Errors are
// described by their class (the attribute error.type), never by their text,
// which names the key.
const (
	spanAcquire = "respire.acquire"
	spanRelease = "respire.release"
	spanReset   = "respire.reset"
	spanFence   = "respire.fence"
)

// commandEvent adds the command named name to the span in ctx, if one is
// recording (the connection it is handed to is no event's).
func commandEvent(ctx context.Context, _ conn.Conn, name string) {
	if span := trace.SpanFromContext(ctx); span.IsRecording() {
		span.AddEvent(name)
	}
}

// spanAttrs are a span's attributes for the view with key prefix prefix.
func (o *observer) spanAttrs(prefix string, kvs ...attribute.KeyValue) []attribute.KeyValue {
	if o.prefixAttr {
		kvs = append(kvs, attribute.String(attrKeyPrefix, prefix))
	}
	return kvs
}

// startAcquire starts the acquisition's span, if tracing, and returns the
// ctx the acquisition runs under.
func (o *observer) startAcquire(ctx context.Context, l *Locks, keepAlive bool) (context.Context, trace.Span) {
	if o.tracer == nil {
		return ctx, nil
	}
	inner, span := o.tracer.Start(ctx, spanAcquire,
		trace.WithAttributes(o.spanAttrs(l.prefix, attribute.Bool("respire.lock.keep_alive", keepAlive))...))
	return inner, span
}

// endAcquire ends the acquisition's span with its result and remembers the
// span on the lock, for the links of its fences.
func (o *observer) endAcquire(span trace.Span, lock *actor.Lock, result string, err error) {
	if span == nil {
		return
	}
	span.SetAttributes(attribute.String(attrResult, result))
	if err != nil {
		failSpan(span, err)
	}
	if lock != nil && span.SpanContext().IsValid() {
		sc := span.SpanContext()
		lock.SetAcquireSpan(&sc)
	}
	span.End()
}

// traceRelease runs l.release under a span.
func (o *observer) traceRelease(ctx context.Context, l *Lock) (ReleaseOutcome, error) {
	ctx, span := o.tracer.Start(ctx, spanRelease, trace.WithAttributes(o.spanAttrs(l.core().Prefix())...))
	defer span.End()
	out, err := l.release(ctx)
	if out != 0 {
		span.SetAttributes(attribute.String(attrResult, releaseOutcomeName(out)))
	}
	if err != nil {
		failSpan(span, err)
	}
	return out, err
}

// releaseOutcomeName is the attribute value of a Release's answer.
func releaseOutcomeName(out ReleaseOutcome) string {
	switch out {
	case Released:
		return "released"
	case AlreadyReleased:
		return "already-released"
	case ReleaseUnknown:
		return "unknown"
	}
	return "not-owned"
}

// traceReset runs reset (l.ResetExpiry's work) under a span.
func (o *observer) traceReset(ctx context.Context, l *Lock, reset func(context.Context) (bool, error)) (bool, error) {
	ctx, span := o.tracer.Start(ctx, spanReset, trace.WithAttributes(o.spanAttrs(l.core().Prefix())...))
	defer span.End()
	ok, err := reset(ctx)
	switch {
	case err != nil:
		failSpan(span, err)
	case ok:
		span.SetAttributes(attribute.String(attrResult, "renewed"))
	default:
		span.SetAttributes(attribute.String(attrResult, "refused"))
	}
	return ok, err
}

// startFence starts the span of a fence of one of l's commands (a root,
// linked to the lock's acquisition span when there is one), if tracing.
// link is read under l.mu by the caller.
func (o *observer) startFence(ctx context.Context, l *Lock, link *trace.SpanContext) (context.Context, trace.Span) {
	if o.tracer == nil {
		return ctx, nil
	}
	opts := []trace.SpanStartOption{trace.WithAttributes(o.spanAttrs(l.core().Prefix())...)}
	if link != nil {
		opts = append(opts, trace.WithLinks(trace.Link{SpanContext: *link}))
	}
	return o.tracer.Start(ctx, spanFence, opts...)
}

// endFence ends a fence's span with its result.
func endFence(span trace.Span, result string, err error) {
	if span == nil {
		return
	}
	span.SetAttributes(attribute.String(attrResult, result))
	if err != nil {
		failSpan(span, err)
	}
	span.End()
}

// failSpan marks span failed with err's class.
func failSpan(span trace.Span, err error) {
	kind := errorType(err)
	span.SetAttributes(attribute.String("error.type", kind))
	span.SetStatus(codes.Error, kind)
}

// errorType classifies err in a word, for error.type (the error's text
// names the key, so it is not recorded).
func errorType(err error) string {
	var permErr *PermissionError
	switch {
	case errors.As(err, &permErr):
		return "permission"
	case errors.Is(err, conn.ErrPoolClosed) || errors.Is(err, ErrClosed):
		return "closed"
	case conn.ClassOf(err) == conn.Uncertain:
		return "outcome-unknown"
	case conn.ClassOf(err) == conn.NotSubmitted:
		return "not-sent"
	case conn.ClassOf(err) == conn.Definite:
		return "server-reply"
	case errors.Is(err, ErrFencePending):
		return "fence-pending"
	case errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded):
		return "cancelled"
	}
	return "other"
}
