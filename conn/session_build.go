package conn

import (
	"github.com/redis/rueidis"
)

// buildStep builds the command of o's current step straight into a rueidis
// command: the same arguments as o.Command() (a test checks every step), but
// passed to the builder as arguments rather than through a Command, whose
// argument slice the heap would have to hold. A lock command then costs the
// client no allocation of its own.
func buildStep(b rueidis.Builder, o *Operation) rueidis.Completed {
	switch o.step {
	case StepAcquire:
		return b.Arbitrary("SET", o.key, o.token, "NX", "PX", millis(o.ttlMillis)).Build()
	case StepSetIfeq:
		return b.Arbitrary("SET", o.key, o.token, "IFEQ", o.token, "PX", millis(o.ttlMillis)).Build()
	case StepExtendEvalsha:
		return b.Arbitrary("EVALSHA", ExtendScriptSHA, "1", o.key, o.token, millis(o.ttlMillis)).Build()
	case StepDelex:
		return b.Arbitrary("DELEX", o.key, "IFEQ", o.token).Build()
	case StepDelifeq:
		return b.Arbitrary("DELIFEQ", o.key, o.token).Build()
	case StepReleaseEvalsha:
		return b.Arbitrary("EVALSHA", ReleaseScriptSHA, "1", o.key, o.token).Build()
	case StepGet:
		return b.Arbitrary("GET", o.key).Build()
	}
	return buildCommand(b, o.Command()) // the EVAL fallbacks: rare, and they carry the script
}

// stepName is CommandName(Command{Args: step's arguments}), without
// building them.
func stepName(step Step) string {
	switch step {
	case StepAcquire, StepSetIfeq:
		return "SET"
	case StepExtendEvalsha, StepReleaseEvalsha:
		return "EVALSHA"
	case StepExtendEval, StepReleaseEval:
		return "EVAL"
	case StepDelex:
		return "DELEX"
	case StepDelifeq:
		return "DELIFEQ"
	case StepGet:
		return "GET"
	}
	return ""
}
