package conn

import (
	"errors"
	"fmt"
	"strconv"
	"strings"
)

// This file is the pure protocol of the lease semaphore and the read/write
// lock: ScriptCall runs one of their scripts (primitive_scripts.go) as a
// small state machine, EVALSHA first and EVAL only after the NOSCRIPT
// reply, and reads its reply. Like Operation it has no rueidis types,
// goroutines or clock.

// The steps of a primitive script call.
const (
	StepPrimitiveEvalsha Step = iota + 200 // EVALSHA <sha> n keys… args…
	StepPrimitiveEval                      // EVAL <script> n keys… args… (after NOSCRIPT)
)

// primitiveKind says how a primitive script's reply is read.
type primitiveKind uint8

const (
	primAcquire      primitiveKind = iota + 1 // 1 holds, 0 refused
	primWriteAcquire                          // 1 holds, 2 waiting, 0 refused
	primOwned                                 // renew, release: 1 yes, 0 no
	primLease                                 // n > 0 ms left, 0 or -2 not live
	primCount                                 // n ≥ 0 live holders
	primOwnerLease                            // n ≥ 0 ms left, -1 no expiry, -2 changed (owner_lease.go)
	primGuard                                 // a guarded write: 1 ran, 0 not the owner (guard.go)
	primFairTry                               // 1 holds, 0 refused, -n queued at n (fair.go)
	primFairRenew                             // -n queued at n, 2 try now, 0 not queued (fair.go)
	primHandOver                              // 1 released and handed over, 2 taken free, 0 neither (handover.go)
)

// primitiveCall is one primitive operation, immutable once built and
// shared by the copies of its Op.
type primitiveCall struct {
	name        string // the Op field of its errors
	kind        primitiveKind
	script, sha string
	keys, args  []string
	limit       int   // semaphore acquisitions: the requested limit
	invalid     error // bad input found when it was built: nothing is sent
	// evalsha, when built with the call (a guarded write's), is its
	// EVALSHA command's arguments, keys and args being parts of it: sent
	// as they are, never changed.
	evalsha []string
}

// ScriptCall is one run of a semaphore or read/write-lock script as a pure
// state machine: Command gives the command to send (EVALSHA, then EVAL after
// NOSCRIPT), Interpret consumes its reply. It is not safe for concurrent
// use; one caller drives it. An Uncertain outcome (no reply) must never be
// followed by another Command: the script may have run. Obtain one with
// Op.ScriptCall.
type ScriptCall struct {
	call *primitiveCall
	step Step
}

// ScriptCall returns the pure state machine of a semaphore or read/write
// lock Op (built by the methods of Semaphore and RWLock), of an
// OwnerLeaseOp or of a GuardOp, and ok=false for every other Op. Each call returns a fresh machine at its EVALSHA step.
func (o Op) ScriptCall() (call *ScriptCall, ok bool) {
	if o.kind != opPrimitive {
		return nil, false
	}
	return &ScriptCall{call: o.prim, step: StepPrimitiveEvalsha}, true
}

// Step reports which command Command currently returns.
func (c *ScriptCall) Step() Step { return c.step }

// Err returns the bad-input error found when the Op was built (for example
// a write-lock token beginning with "waiting:"), or nil. A call with an
// error must not be sent.
func (c *ScriptCall) Err() error { return c.call.invalid }

// Command returns the command for the current step. Args[Key] is the first
// key (the one that routes it); all its keys share one hash slot.
func (c *ScriptCall) Command() Command {
	name, script := "EVALSHA", c.call.sha
	if w := c.call.evalsha; w != nil && c.step != StepPrimitiveEval {
		return Command{Args: w[:len(w):len(w)], Key: 3}
	}
	if c.step == StepPrimitiveEval {
		name, script = "EVAL", c.call.script
	}
	args := make([]string, 0, 3+len(c.call.keys)+len(c.call.args))
	args = append(args, name, script, strconv.Itoa(len(c.call.keys)))
	args = append(args, c.call.keys...)
	args = append(args, c.call.args...)
	return Command{Args: args, Key: 3}
}

// ScriptOutcome is what one reply to a ScriptCall means.
type ScriptOutcome struct {
	// Done: the call is finished. Otherwise (NOSCRIPT: the script did not
	// run) Command now returns the EVAL to send.
	Done bool
	// Owned, when Done and no error: an acquisition holds (new or already
	// held), a renewal renewed, a release released a live holder, a lease
	// read found a live holder, a guarded write's writes ran. false:
	// refused or not a live holder; nothing changed that the token owned
	// (a guarded write: nothing written).
	Owned bool
	// Waiting: a write acquisition was not granted, but the token's waiting
	// marker is set and refuses new readers until it expires. A fair try:
	// not granted, the token is queued (Holders is its position). A fair
	// waiter's renewal: granted, try now.
	Waiting bool
	// RemainingMillis: a lease read's live holder has this many ms left
	// (an OwnerLeaseOp: the key's PTTL, -1 for no expiry).
	RemainingMillis int64
	// Holders: a count's live holders (a fair queue's waiters); a fair
	// try's or a fair renewal's position in the queue (1: the head).
	Holders int64
	// LimitMismatch: a semaphore acquisition was refused because the stored
	// limit differs; nothing changed.
	LimitMismatch *LimitMismatchError
	// Err is any other definite error reply (or a reply of an unexpected
	// kind or value, Code "PROTOCOL": the script may have run; settle by a
	// lease read).
	Err *ServerError
	// Redirect is set on MOVED/ASK: the script did not run on this node.
	Redirect *Redirect
}

// Interpret consumes the reply to Command and advances the call.
func (c *ScriptCall) Interpret(r Reply) ScriptOutcome {
	if r.Kind == ReplyError {
		return c.interpretError(r.Text)
	}
	if r.Kind != ReplyInt {
		return ScriptOutcome{Done: true, Err: unexpected(r)}
	}
	n := r.Int
	switch c.call.kind {
	case primAcquire, primOwned, primGuard:
		if n == 0 || n == 1 {
			return ScriptOutcome{Done: true, Owned: n == 1}
		}
	case primWriteAcquire:
		if n >= 0 && n <= 2 {
			return ScriptOutcome{Done: true, Owned: n == 1, Waiting: n == 2}
		}
	case primLease:
		if n > 0 {
			return ScriptOutcome{Done: true, Owned: true, RemainingMillis: n}
		}
		if n == 0 || n == -2 {
			return ScriptOutcome{Done: true}
		}
	case primCount:
		if n >= 0 {
			return ScriptOutcome{Done: true, Holders: n}
		}
	case primFairTry:
		switch {
		case n == 0 || n == 1:
			return ScriptOutcome{Done: true, Owned: n == 1}
		case n < 0:
			return ScriptOutcome{Done: true, Waiting: true, Holders: -n}
		}
	case primFairRenew:
		switch {
		case n == 0 || n == 2:
			return ScriptOutcome{Done: true, Waiting: n == 2}
		case n < 0:
			return ScriptOutcome{Done: true, Owned: true, Holders: -n}
		}
	case primHandOver:
		if n >= 0 && n <= 2 {
			return ScriptOutcome{Done: true, Owned: n == 1, Waiting: n >= 1}
		}
	case primOwnerLease:
		if n >= -1 {
			return ScriptOutcome{Done: true, Owned: true, RemainingMillis: n}
		}
		if n == -2 {
			return ScriptOutcome{Done: true}
		}
	}
	return ScriptOutcome{Done: true, Err: &ServerError{Code: "PROTOCOL",
		Message: fmt.Sprintf("unexpected integer reply %d to %s", n, c.call.name)}}
}

func (c *ScriptCall) interpretError(text string) ScriptOutcome {
	if rd, ok := ParseRedirect(text); ok {
		return ScriptOutcome{Done: true, Redirect: &rd}
	}
	if c.step == StepPrimitiveEvalsha && isNoScript(text) {
		c.step = StepPrimitiveEval
		return ScriptOutcome{}
	}
	if (c.call.kind == primAcquire || c.call.kind == primFairTry) && c.call.limit > 0 {
		if m, ok := parseLimitMismatch(text, c.call.limit); ok {
			return ScriptOutcome{Done: true, LimitMismatch: m}
		}
	}
	return ScriptOutcome{Done: true, Err: newServerError(text)}
}

// LimitMismatchCode is the error code of SemaphoreAcquireScript's refusal.
const LimitMismatchCode = "LIMITMISMATCH"

// ErrLimitMismatch matches (errors.Is) a semaphore acquisition refused
// because the semaphore's stored limit differs from the caller's.
var ErrLimitMismatch = errors.New("semaphore limit differs from the limit stored with it")

// LimitMismatchError is a semaphore acquisition refused because the limit
// stored with the semaphore (set by the holders that are live now) differs
// from the requested one, or because live holders have no stored limit at
// all (added by hand, or by a version of respire-go that stored it
// elsewhere): a missing limit is never taken as "no limit". Nothing changed
// on the server. errors.Is matches ErrLimitMismatch; Unwrap gives the
// server's reply (*rueidis.RedisError over a transport, *ServerError from
// the pure protocol).
type LimitMismatchError struct {
	Stored    string // the stored limit, as the server holds it; "" when none is stored
	Requested int    // the caller's limit
	Reply     error
}

// Error describes the mismatch (the limits are not secrets).
func (e *LimitMismatchError) Error() string {
	if e.Stored == "" {
		return fmt.Sprintf("semaphore limit mismatch: the semaphore has live holders but no stored limit "+
			"(added by hand or by another version of respire-go), this caller %d", e.Requested)
	}
	return fmt.Sprintf("semaphore limit mismatch: the semaphore's live holders use limit %s, this caller %d", e.Stored, e.Requested)
}

// Is reports whether target is ErrLimitMismatch.
func (e *LimitMismatchError) Is(target error) bool { return target == ErrLimitMismatch }

// Unwrap returns the server's reply.
func (e *LimitMismatchError) Unwrap() error { return e.Reply }

// limitUnknown is what SemaphoreAcquireScript's refusal says of the stored
// limit when live holders have none.
const limitUnknown = "unknown"

// parseLimitMismatch recognises "LIMITMISMATCH semaphore limit is <stored>,
// not <requested>" for the requested limit (<stored> "unknown": none).
func parseLimitMismatch(text string, requested int) (*LimitMismatchError, bool) {
	prefix := LimitMismatchCode + " semaphore limit is "
	suffix := ", not " + strconv.Itoa(requested)
	if !strings.HasPrefix(text, prefix) || !strings.HasSuffix(text, suffix) || len(text) < len(prefix)+len(suffix) {
		return nil, false
	}
	stored := text[len(prefix) : len(text)-len(suffix)]
	if stored == limitUnknown {
		stored = ""
	}
	return &LimitMismatchError{Stored: stored, Requested: requested, Reply: newServerError(text)}, true
}
