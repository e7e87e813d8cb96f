//go:build !goredisadapter

package goredis

import (
	"context"

	"github.com/respire-go/respire/capstore"
	"github.com/respire-go/respire/conn"
)

// SetObserver sets the transport's observer (telemetry: lease's
// WithMeterProvider, WithTracerProvider and WithLogger set it through
// lease.NewTransport); nil removes it. It reports what conn.Pool reports:
// sessions opened and retired (once per session, with its first reason),
// fallbacks taken, and each command's name right before it is handed to
// a session or Conn, on the caller's goroutine (not the keep-alive's
// pipelined renewals, nor the idle check's PING). Call it before the
// transport's first use: it is not synchronised with commands in flight.
func (t *Transport) SetObserver(o *conn.Observer) { t.obs = o }

// report tells the observer, if any, that cmds are about to be handed to
// a socket for ctx.
func (t *Transport) report(ctx context.Context, cmds ...conn.Command) {
	if o := t.obs; o != nil && o.Command != nil {
		for _, c := range cmds {
			o.Command(ctx, conn.CommandName(c))
		}
	}
}

// reportOpened tells the observer that a session to node opened.
func (t *Transport) reportOpened(node string) {
	if o := t.obs; o != nil && o.SessionOpened != nil {
		o.SessionOpened(node)
	}
}

// reportRetired tells the observer that a session to node was retired.
func (t *Transport) reportRetired(node string, reason conn.RetireReason) {
	if o := t.obs; o != nil && o.SessionRetired != nil {
		o.SessionRetired(node, reason)
	}
}

// learn adds what a reply of step confirmed to the session's capabilities
// and reports the fallback an Outcome that is not done takes.
func (s *session) learn(step conn.Step, out conn.Outcome) {
	added := s.caps.AddNew(out.Learned)
	if out.Done {
		return
	}
	if o := s.t.obs; o != nil && o.FallbackTaken != nil {
		o.FallbackTaken(s.node, conn.FallbackOf(step), added&capstore.FallbackBits != 0)
	}
}

// scriptNotCached reports a NOSCRIPT reply, after which the script is sent
// with EVAL.
func (s *session) scriptNotCached() {
	if o := s.t.obs; o != nil && o.FallbackTaken != nil {
		o.FallbackTaken(s.node, conn.FallbackScriptCache, false)
	}
}
