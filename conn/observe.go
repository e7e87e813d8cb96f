package conn

import "context"

// Observer receives a transport's events (a Pool's, or any transport with
// a SetObserver method), for telemetry: sessions opened and
// retired, fallbacks taken, and the name of each command right before it is
// handed to a socket. Any field may be nil. The callbacks run on the
// goroutine of the event, with no lock of the Pool or of a Session held; they
// must not block. Without an Observer (the default) each of these places
// costs one nil check and nothing else.
type Observer struct {
	// SessionOpened: a session to node opened (its CLIENT ID and CLIENT INFO
	// answered).
	SessionOpened func(node string)
	// SessionRetired: a session to node was retired, once per session, with
	// the first reason that retired it.
	SessionRetired func(node string, reason RetireReason)
	// FallbackTaken: a reply on a session to node proved an implementation
	// unsupported (or a script not cached) and the operation moved to the
	// next one. first is true the first time the session learned that
	// capability (never for FallbackScriptCache, which is no capability).
	FallbackTaken func(node string, fallback Fallback, first bool)
	// Command: a command named name ("SET", "EVALSHA", "CLIENT KILL", …) is
	// about to be handed to c (the Conn the Client dialled) on behalf of
	// ctx. Pipelined keep-alive renewals (Session.ExtendMany) and the
	// idle-check PING are not reported. A command handed to c is written on
	// c or on no connection: a retry after a not-submitted failure is a new
	// hand-off (to a fresh Conn).
	Command func(ctx context.Context, c Conn, name string)
	// Op: the engine starts op for a caller (Engine.Do, Session.Do, and
	// each request of Session.ExtendMany, as its Renewal), before any of its
	// commands is handed to a socket. The returned ctx is the one op is
	// sent under; the returned function is called once, with the error
	// the caller gets (nil for an answer), before the caller sees it.
	Op func(ctx context.Context, op Op) (context.Context, func(err error))
}

// RetireReason says why a session was retired.
type RetireReason uint8

// The reasons a session is retired.
const (
	// RetiredDead: its socket was found closed before a command was handed
	// to it (the idle check's PING failed, or the socket's close was seen).
	RetiredDead RetireReason = iota + 1
	// RetiredTransportError: a command handed to it failed in transport
	// (timeout, reset, EOF).
	RetiredTransportError
	// RetiredFenced: it was fenced (CLIENT KILL) after an uncertain outcome.
	RetiredFenced
	// RetiredRedirect: it received MOVED or ASK.
	RetiredRedirect
	// RetiredReadOnly: it received READONLY (its node is a replica now).
	RetiredReadOnly
	// RetiredDemoted: its node stopped being the primary (Sentinel).
	RetiredDemoted
	// RetiredSuperseded: another session to the same node became current
	// while it opened.
	RetiredSuperseded
	// RetiredClosed: Session.Close, Pool.RetireAll or Pool.Close.
	RetiredClosed
)

var retireReasonNames = [...]string{
	RetiredDead:           "dead",
	RetiredTransportError: "transport-error",
	RetiredFenced:         "fenced",
	RetiredRedirect:       "redirect",
	RetiredReadOnly:       "readonly",
	RetiredDemoted:        "demoted",
	RetiredSuperseded:     "superseded",
	RetiredClosed:         "closed",
}

// String returns the reason's name, for example "fenced".
func (r RetireReason) String() string {
	if r != 0 && int(r) < len(retireReasonNames) {
		return retireReasonNames[r]
	}
	return "unknown"
}

// Fallback names the implementation a reply proved unavailable.
type Fallback uint8

// The fallbacks an operation takes.
const (
	// FallbackSetIfeq: SET … IFEQ answered "ERR syntax error" (before Redis
	// 8.4 and Valkey 8.1): renewals use the Lua script.
	FallbackSetIfeq Fallback = iota + 1
	// FallbackDelex: DELEX is an unknown command: DELIFEQ is tried.
	FallbackDelex
	// FallbackDelifeq: DELIFEQ is an unknown command: releases use the Lua
	// script.
	FallbackDelifeq
	// FallbackScriptCache: EVALSHA answered NOSCRIPT: the script is sent
	// with EVAL (which caches it on the server).
	FallbackScriptCache
)

var fallbackNames = [...]string{
	FallbackSetIfeq:     "set-ifeq",
	FallbackDelex:       "delex",
	FallbackDelifeq:     "delifeq",
	FallbackScriptCache: "script-cache",
}

// String returns the fallback's name, for example "delex".
func (f Fallback) String() string {
	if f != 0 && int(f) < len(fallbackNames) {
		return fallbackNames[f]
	}
	return "unknown"
}

// FallbackOf names the fallback taken from step, the step a reply refused
// (an Outcome that is not Done): for transports that report
// Observer.FallbackTaken themselves.
func FallbackOf(step Step) Fallback {
	switch step {
	case StepSetIfeq:
		return FallbackSetIfeq
	case StepDelex:
		return FallbackDelex
	case StepDelifeq:
		return FallbackDelifeq
	}
	return FallbackScriptCache
}

// ProbeCommandName is what Observer.Command calls the permission probe
// (ProbeKillCommand: CLIENT KILL ID <own id> SKIPME yes, which kills
// nothing), so that a trace never shows it as a fence's CLIENT KILL.
const ProbeCommandName = "CLIENT KILL SKIPME (permission probe)"

// CommandName is the command's name as the server's documentation writes
// it (Observer.Command's name): the first word, and the subcommand of
// CLIENT and CLUSTER (the permission probe gets ProbeCommandName). It
// returns a constant string or cmd's own first argument (no allocation).
func CommandName(cmd Command) string {
	if len(cmd.Args) == 0 {
		return ""
	}
	if len(cmd.Args) > 1 && (cmd.Args[0] == "CLIENT" || cmd.Args[0] == "CLUSTER") {
		switch {
		case cmd.Args[1] == "ID":
			return "CLIENT ID"
		case cmd.Args[1] == "INFO":
			return "CLIENT INFO"
		case cmd.Args[1] == "KILL" && len(cmd.Args) > 4 && cmd.Args[4] == "SKIPME":
			return ProbeCommandName
		case cmd.Args[1] == "KILL":
			return "CLIENT KILL"
		case cmd.Args[1] == "SLOTS":
			return "CLUSTER SLOTS"
		}
	}
	return cmd.Args[0]
}
