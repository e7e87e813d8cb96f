package dst

import "time"

// This file is the contract between the runtime and a lock handle's pure
// core. The production core is statemachine/ (adapted in core_statemachine.go);
// tests may plug in small stand-ins. A core never does I/O: the runtime feeds
// it Inputs carrying the handle's own monotonic time and executes the Effects
// it returns.

// Core is one lock handle's pure logic. Step is called only by the runtime's
// goroutine, one input at a time.
type Core interface {
	// Step applies one input and returns the effects to execute, in order.
	Step(in Input) []Effect
	// Belief reports what the handle believes right now (for the checker):
	// held with the local monotonic time at which it expects the lease to
	// end, and whether its keep-alive context is live (not cancelled).
	Belief() Belief
}

// Belief is a handle's own view of its ownership.
type Belief struct {
	Held          bool          // the handle believes it owns the lease
	ExpiresLocal  time.Duration // local monotonic time its estimate runs out
	KeepAliveLive bool          // a keep-alive context exists and is not cancelled
	State         string        // the core's state name, for the transcript
}

// InputKind names what happened to a handle.
type InputKind int

// The inputs a core receives.
const (
	InAcquire       InputKind = iota + 1 // user: acquire Key with Token for Duration (Wait budget, Retry period, KeepAlive)
	InReset                              // user: reset expiry to Duration
	InKeepAlive                          // user: start a keep-alive
	InStopKeepAlive                      // user: stop the keep-alive (does not release)
	InRelease                            // user: release
	InClose                              // user: close (stop keep-alive, release, swallow transport errors)
	InVerify                             // user: check ownership on the server
	InCancel                             // user: the caller of Call gave up (context cancelled)
	InOpDone                             // an operation the core started has finished (Op, Result)
	InFenceDone                          // the fence of Op's session has been answered (Result.Err on failure)
	InTimer                              // timer Timer fired
)

// Input is one event for a core. Now is the handle's monotonic clock.
type Input struct {
	Kind      InputKind
	Now       time.Duration
	Call      int64 // user call id (InAcquire..InVerify, InCancel)
	Op        int64 // InOpDone, InFenceDone
	Timer     int64 // InTimer
	Key       string
	Token     string
	Duration  time.Duration // InAcquire, InReset
	Wait      time.Duration // InAcquire: polling budget (0 = try once)
	Retry     time.Duration // InAcquire: polling period
	KeepAlive bool          // InAcquire: start a keep-alive on success
	Result    OpResult      // InOpDone, InFenceDone
}

// OpKind names a server operation a core asks for.
type OpKind int

// The operations.
const (
	OpAcquire OpKind = iota + 1 // SET k tok NX PX ms
	OpExtend                    // compare-and-pexpire ladder (SET IFEQ → EVALSHA → EVAL)
	OpRelease                   // compare-and-delete ladder (DELEX → DELIFEQ → EVALSHA → EVAL)
	OpVerify                    // GET k, compare
)

// String names the operation for transcripts.
func (k OpKind) String() string {
	return [...]string{"?", "acquire", "extend", "release", "verify"}[k]
}

// Class is how an operation ended, as the transport classifies it.
type Class int

// The classes (docs/architecture.md, "Classification decides everything").
const (
	Definite     Class = iota + 1 // the server replied (Owned or Err)
	NotSubmitted                  // provably never written; ownership unchanged
	Uncertain                     // written, outcome unknown (timeout, cancel, connection loss)
)

// String names the class for transcripts.
func (c Class) String() string {
	return [...]string{"?", "definite", "not-submitted", "uncertain"}[c]
}

// OpResult is the outcome of an operation or a fence.
type OpResult struct {
	Class Class
	Owned bool   // Definite: acquired / extended / released / still held
	Err   string // Definite: server error text; or the transport/fence error
	// NoIdentity: the session could not establish CLIENT ID / CLIENT KILL
	// permission (NOPERM); the op ran unfenced or was refused.
	NoIdentity bool
}

// EffectKind names what a core asks the runtime to do.
type EffectKind int

// The effects.
const (
	EffSend            EffectKind = iota + 1 // start operation Op of kind OpKind (TTL for acquire/extend); Fenced: needs identity
	EffCancelOp                              // give up on Op: NotSubmitted if unwritten, else Uncertain
	EffFence                                 // fence the session that carried Op (CLIENT KILL)
	EffArm                                   // arm timer Timer at local time At (re-arming replaces)
	EffDisarm                                // disarm timer Timer
	EffResolve                               // answer user call Call with Outcome/Err
	EffCancelKeepAlive                       // the keep-alive context is cancelled with Cause
	EffTrace                                 // nothing to do; Outcome is a note for the transcript
)

// Effect is one instruction from a core.
type Effect struct {
	Kind    EffectKind
	Op      int64
	OpKind  OpKind
	TTL     time.Duration
	Fenced  bool   // EffSend: the op may be fenced, so the session needs an identity
	Cleanup bool   // EffSend of a release: the clean-up of the abandoned acquisition After
	After   int64  // EffSend with Cleanup: the acquisition op whose SET must not run after the delete
	Token   string // EffSend of an acquisition: the owner token of this try ("" = keep the handle's)
	Timer   int64
	At      time.Duration
	Call    int64
	Outcome string // EffResolve: e.g. "acquired", "not-acquired", "released", "not-owned", "ok", "false"
	Err     string // EffResolve: error text, "" on success
	Cause   string // EffCancelKeepAlive
}
