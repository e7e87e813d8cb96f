package actor

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"github.com/respire-go/respire/conn"
)

// This file is the fencing permission of sessions: managed renewal and
// fenced release need CLIENT ID and CLIENT KILL on the session's
// connection, probed once per session with the harmless SKIPME form.

// fenceVerdict is the cached answer of mayFence for one session.
type fenceVerdict struct{ err error }

// mayFence reports whether session s can be fenced: its CLIENT ID is known
// and the user may run CLIENT KILL (probed once per session with the SKIPME
// form, bounded by the command timeout). It returns nil when permitted, a
// *PermissionError when the server definitively refused (cached for the
// session's life), or another error (not cached) when the probe could not
// be answered: then not submitted (the command waiting for the probe was
// not sent), or a server error reply. It blocks only the first time per
// session.
func (d *Driver) mayFence(ctx context.Context, s conn.Session) error {
	if v, known := d.fencing.Load(s); known {
		return v.(fenceVerdict).err
	}
	err := d.probe(ctx, s)
	var permErr *PermissionError
	if err != nil && !errors.As(err, &permErr) {
		return err
	}
	d.fencing.Range(func(old, _ any) bool {
		if old.(conn.Session).Retired() {
			d.fencing.Delete(old)
		}
		return true
	})
	d.fencing.Store(s, fenceVerdict{err: err})
	return err
}

func (d *Driver) probe(ctx context.Context, s conn.Session) error {
	if _, ok := s.Identity(); !ok {
		idErr := s.IdentityError()
		if idErr == nil {
			idErr = conn.ErrNoIdentity
		}
		if isPermissionDenial(idErr) {
			return &PermissionError{Command: "CLIENT ID", Err: idErr}
		}
		return &conn.Error{Class: conn.Definite, Op: "identity", Addr: s.Node(), Session: s, Err: idErr}
	}
	ctx, cancel := d.commandContext(ctx)
	defer cancel()
	err := s.ProbeKill(ctx)
	switch {
	case err == nil:
		return nil
	case conn.ClassOf(err) == conn.Definite && isPermissionDenial(err):
		return &PermissionError{Command: "CLIENT KILL", Err: err}
	case conn.ClassOf(err) == conn.Uncertain:
		return probeUnanswered(s, err)
	}
	return err
}

// errProbeUnanswered is the cause of a command that was not sent because
// its session's permission probe got no answer.
var errProbeUnanswered = errors.New("its session's permission probe (CLIENT KILL … SKIPME yes) got no answer")

// probeUnanswered is the error of a command held back by a probe that
// failed without an answer (its connection reset or closed, its ctx ended,
// the server paused): the probe may have run, which kills nothing, but the
// command waiting for it was never handed to a socket, so the command is
// not submitted — it changed nothing and may be tried again. The probe's
// own class (uncertain) goes with its *conn.Error; its cause is kept.
func probeUnanswered(s conn.Session, err error) error {
	cause := err
	var probeErr *conn.Error
	if errors.As(err, &probeErr) {
		cause = probeErr.Err
	}
	return &conn.Error{Class: conn.NotSubmitted, Op: "probe", Addr: s.Node(), Err: fmt.Errorf("%w: %w", errProbeUnanswered, cause)}
}

// notSentError is the error of a caller whose command was not sent (err,
// not submitted): when the caller's ctx has ended, what kept the command
// back is ctx, and the error says ctx's cause as is (a DeadlineExceeded
// stays one, not the "context canceled" of a derived context or a transport)
// while still matching ErrNotSubmitted; else err. A closed Locks or client
// stays said.
func notSentError(ctx context.Context, err error) error {
	var e *conn.Error
	if ctx.Err() == nil || !errors.As(err, &e) || e.Class != conn.NotSubmitted ||
		errors.Is(err, conn.ErrPoolClosed) || errors.Is(err, conn.ErrClientClosed) {
		return err
	}
	return &conn.Error{Class: conn.NotSubmitted, Op: e.Op, Addr: e.Addr, Err: context.Cause(ctx)}
}

// renewalSession routes key to its session and checks that managed renewal
// may run there (see renewalPermit). It blocks for the routing and, once per
// session, the probe. A probe refused because its session was retired
// first (a client that breaks a connection when a caller's ctx cuts a
// round trip short, as go-redis does) is tried once on a fresh session.
func (d *Driver) renewalSession(ctx context.Context, wireKey string) (conn.Session, error) {
	for attempt := 0; ; attempt++ {
		s, err := d.sessionFor(ctx, wireKey)
		if err != nil {
			return nil, err
		}
		_, err = d.renewalPermit(ctx, s)
		if err == nil {
			return s, nil
		}
		if attempt > 0 || !conn.RetriableOnFreshSession(err) {
			return nil, err
		}
	}
}

// renewalPermit reports whether renewals may run on s: fenced when the user
// may run CLIENT ID and CLIENT KILL there; unfenced (true) when not, if
// Config.UnfencedRenewal chose that; otherwise the *PermissionError.
func (d *Driver) renewalPermit(ctx context.Context, s conn.Session) (unfenced bool, err error) {
	err = d.mayFence(ctx, s)
	var permErr *PermissionError
	if err != nil && d.unfencedRenewal && errors.As(err, &permErr) {
		d.unfencedRenewalWarning.Do(func() {
			d.logger.Warn("lease: renewing without fencing (WithUnfencedRenewal): the user may not run "+
				"CLIENT ID/CLIENT KILL; a renewal with an unknown outcome ends the lock and may still run later",
				"error", err)
		})
		return true, nil
	}
	return false, err
}

// warnUnfenced logs, once per driver, that releases go unfenced.
func (d *Driver) warnUnfenced(err error) {
	d.unfencedWarning.Do(func() {
		d.logger.Warn("lease: releasing without fencing: the user may not run CLIENT ID/CLIENT KILL; "+
			"an interrupted release cannot be fenced", "error", err)
	})
}

// isPermissionDenial reports whether err is a server reply that definitively
// refuses a CLIENT subcommand to this user: NOPERM, or ERR unknown command /
// unknown subcommand / wrong number of arguments.
func isPermissionDenial(err error) bool {
	if err == nil {
		return false
	}
	text := strings.ToLower(err.Error())
	return strings.Contains(text, "noperm") || strings.Contains(text, "unknown command") ||
		strings.Contains(text, "unknown subcommand") || strings.Contains(text, "wrong number of arguments")
}
