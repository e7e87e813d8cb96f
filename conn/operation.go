package conn

import (
	"strconv"
	"sync/atomic"

	"github.com/respire-go/respire/capstore"
)

// Operation is one conditional extension or release on one session, as a
// pure state machine: Command gives the next command to send, Interpret
// consumes its reply. It is not safe for concurrent use; one caller drives
// it. Build a new Operation for every session tried (after a redirect the
// new session's capabilities apply).
type Operation struct {
	key, token string
	ttlMillis  int64 // extension only
	step       Step
}

// NewRelease starts a compare-and-delete of key for token on a session whose
// capability snapshot is caps: DELEX → DELIFEQ → EVALSHA, skipping what caps
// already marks unsupported.
func NewRelease(key, token string, caps capstore.Set) *Operation {
	op := &Operation{key: key, token: token}
	switch {
	case !caps.Has(capstore.DelexUnsupported):
		op.step = StepDelex
	case !caps.Has(capstore.DelifeqUnsupported):
		op.step = StepDelifeq
	default:
		op.step = StepReleaseEvalsha
	}
	return op
}

// NewExtend starts a compare-and-pexpire of key for token to ttlMillis from
// now: SET IFEQ PX, or EVALSHA when caps says conditional SET is unsupported.
func NewExtend(key, token string, ttlMillis int64, caps capstore.Set) *Operation {
	op := &Operation{key: key, token: token, ttlMillis: ttlMillis, step: StepSetIfeq}
	if caps.Has(capstore.ConditionalSetUnsupported) {
		op.step = StepExtendEvalsha
	}
	return op
}

// NewAcquire takes key for token with a lease of ttlMillis if the key is
// free: SET NX PX (Outcome.Owned = acquired). It has no fallback.
func NewAcquire(key, token string, ttlMillis int64) *Operation {
	return &Operation{key: key, token: token, ttlMillis: ttlMillis, step: StepAcquire}
}

// NewOwnerQuery reads key's owner token with GET (Outcome.Owned = found,
// Outcome.Value = the token bytes).
func NewOwnerQuery(key string) *Operation {
	return &Operation{key: key, step: StepGet}
}

// Step reports which implementation Command currently is.
func (o *Operation) Step() Step { return o.step }

// Command returns the command to send for the current step.
func (o *Operation) Command() Command {
	switch o.step {
	case StepExtendEvalsha, StepExtendEval, StepReleaseEvalsha, StepReleaseEval:
		return Command{Args: o.AppendArgs(make([]string, 0, 6)), Key: 3}
	}
	return Command{Args: o.AppendArgs(make([]string, 0, 7)), Key: 1}
}

// AppendArgs appends the arguments of Command (the current step's) to dst
// and returns the extended slice, for a transport that keeps them in a
// buffer of its own: it allocates nothing when dst has room (but the TTL's
// decimal text of the steps that carry one).
func (o *Operation) AppendArgs(dst []string) []string {
	switch o.step {
	case StepSetIfeq:
		return append(dst, "SET", o.key, o.token, "IFEQ", o.token, "PX", o.ms())
	case StepExtendEvalsha:
		return append(dst, "EVALSHA", ExtendScriptSHA, "1", o.key, o.token, o.ms())
	case StepExtendEval:
		return append(dst, "EVAL", ExtendScript, "1", o.key, o.token, o.ms())
	case StepDelex:
		return append(dst, "DELEX", o.key, "IFEQ", o.token)
	case StepDelifeq:
		return append(dst, "DELIFEQ", o.key, o.token)
	case StepReleaseEvalsha:
		return append(dst, "EVALSHA", ReleaseScriptSHA, "1", o.key, o.token)
	case StepReleaseEval:
		return append(dst, "EVAL", ReleaseScript, "1", o.key, o.token)
	case StepGet:
		return append(dst, "GET", o.key)
	case StepAcquire:
		return append(dst, "SET", o.key, o.token, "NX", "PX", o.ms())
	}
	panic("conn: operation in invalid step " + strconv.Itoa(int(o.step)))
}

func (o *Operation) ms() string { return millis(o.ttlMillis) }

// millisText is one TTL in milliseconds and its decimal text.
type millisText struct {
	ms   int64
	text string
}

// lastMillis remembers the text of the latest TTL formatted: an application
// usually takes its locks with one or a few lease lengths, so the text is
// reused instead of formatted (and allocated) for every command.
var lastMillis atomic.Pointer[millisText]

// millis is strconv.FormatInt(ms, 10), reusing the latest text.
func millis(ms int64) string {
	if last := lastMillis.Load(); last != nil && last.ms == ms {
		return last.text
	}
	t := &millisText{ms: ms, text: strconv.FormatInt(ms, 10)}
	lastMillis.Store(t)
	return t.text
}

// Outcome is what one reply means.
type Outcome struct {
	// Done: the operation is finished; Owned and Err hold the answer.
	// Otherwise Command now returns the next fallback step to send.
	Done bool
	// Owned is the ownership answer when Done and Err is nil: true = the
	// lock was ours and is now released/extended; false = not owner,
	// expired or missing (nothing changed).
	Owned bool
	// Value is the owner token read by an owner query (when Owned).
	Value string
	// Err is the definite server error when Done (never a fallback reply).
	Err *ServerError
	// Redirect is set (with Done) on MOVED/ASK: the command did not run here.
	Redirect *Redirect
	// Learned holds capability bits this reply confirmed; add them to the
	// session's store.
	Learned capstore.Set
}

// Interpret consumes the reply to Command and advances the operation.
func (o *Operation) Interpret(r Reply) Outcome {
	if r.Kind == ReplyError {
		return o.interpretError(r.Text)
	}
	var out Outcome
	switch o.step {
	case StepGet:
		token, found, err := OwnerResult(r)
		return Outcome{Done: true, Owned: found, Value: token, Err: err}
	case StepSetIfeq, StepAcquire:
		out = ownedIf(isOK(r), r.Kind == ReplyNil, r)
	default:
		out = ownedIf(r.Kind == ReplyInt && r.Int >= 1, r.Kind == ReplyInt && r.Int == 0, r)
	}
	if out.Err == nil {
		switch o.step {
		case StepExtendEvalsha, StepExtendEval:
			out.Learned = capstore.ExtendScriptLoaded
		case StepReleaseEvalsha, StepReleaseEval:
			out.Learned = capstore.ReleaseScriptLoaded
		}
	}
	return out
}

func ownedIf(owned, notOwned bool, r Reply) Outcome {
	switch {
	case owned:
		return Outcome{Done: true, Owned: true}
	case notOwned:
		return Outcome{Done: true}
	}
	return Outcome{Done: true, Err: unexpected(r)}
}

func (o *Operation) interpretError(text string) Outcome {
	if rd, ok := ParseRedirect(text); ok {
		return Outcome{Done: true, Redirect: &rd}
	}
	next, learned := o.fallback(text)
	if next == 0 {
		return Outcome{Done: true, Err: newServerError(text)}
	}
	o.step = next
	return Outcome{Learned: learned}
}

// fallback returns the next step when text is the exact confirming reply
// for the current step, or 0 when text is a definite error.
func (o *Operation) fallback(text string) (Step, capstore.Set) {
	switch o.step {
	case StepSetIfeq:
		if isSyntaxError(text) {
			return StepExtendEvalsha, capstore.ConditionalSetUnsupported
		}
	case StepDelex:
		if isUnknownCommand(text, "DELEX") {
			return StepDelifeq, capstore.DelexUnsupported
		}
	case StepDelifeq:
		if isUnknownCommand(text, "DELIFEQ") {
			return StepReleaseEvalsha, capstore.DelifeqUnsupported
		}
	case StepExtendEvalsha:
		if isNoScript(text) {
			return StepExtendEval, 0
		}
	case StepReleaseEvalsha:
		if isNoScript(text) {
			return StepReleaseEval, 0
		}
	}
	return 0, 0
}
