package conn

import (
	"errors"
	"strconv"
	"strings"
	"testing"

	"github.com/respire-go/respire/capstore"
	"github.com/respire-go/respire/internal/respseeds"
)

// replyOf builds the top of a reply from a RESP type byte (any other byte
// picks a kind, invalid ones included), its text and its integer.
func replyOf(kind byte, text string, n int64) Reply {
	switch kind {
	case '+':
		return Reply{Kind: ReplyStatus, Text: text}
	case '-':
		return Reply{Kind: ReplyError, Text: text}
	case ':':
		return Reply{Kind: ReplyInt, Int: n}
	case '$':
		if text == "-1" {
			return Reply{Kind: ReplyNil}
		}
		return Reply{Kind: ReplyBulk, Text: text}
	case '_':
		return Reply{Kind: ReplyNil}
	case '*', '>', '%', '~':
		return Reply{Kind: ReplyArray}
	}
	return Reply{Kind: ReplyKind(kind % 8), Text: text, Int: n}
}

// confirming reports whether text is one of the replies that prove a step
// unsupported or a script not loaded: the only ones a fallback may follow.
func confirming(text string) bool {
	return text == "ERR syntax error" || strings.HasPrefix(strings.ToLower(text), "err unknown command ") ||
		text == "NOSCRIPT" || strings.HasPrefix(text, "NOSCRIPT ")
}

// FuzzReplyClassification: whatever a server answers, the engine's reply
// classification (Operation.Interpret and FencedAcquire.Interpret, then the
// error it builds) never panics, takes a fallback only after its exact
// confirming error reply, counts a lock as ours only on the reply that says
// so, keeps every other error reply whole as a definite server error, and
// matches ErrDidNotRun exactly on the did-not-run codes. Seeds: real
// server replies.
func FuzzReplyClassification(f *testing.F) {
	for _, w := range respseeds.All() {
		if kind, text, n, ok := respseeds.Top(w); ok {
			f.Add(kind, text, n, uint32(0))
			f.Add(kind, text, n, uint32(capstore.DelexUnsupported|capstore.ConditionalSetUnsupported))
		}
	}
	f.Fuzz(func(t *testing.T, kind byte, text string, n int64, caps uint32) {
		r := replyOf(kind, text, n)
		ops := []*Operation{NewRelease("k", "tok", capstore.Set(caps)), NewExtend("k", "tok", 1000, capstore.Set(caps)),
			NewAcquire("k", "tok", 1000), NewOwnerQuery("k")}
		for _, o := range ops {
			for range 8 { // the reply again after each fallback
				step := o.Step()
				out := o.Interpret(r)
				checkOutcome(t, step, r, out)
				if out.Done {
					break
				}
			}
		}
		fenced := NewFencedAcquire("{k}", "{k}:fence", "tok", 1000)
		for range 3 {
			out := fenced.Interpret(r)
			switch {
			case !out.Done && (r.Kind != ReplyError || !confirming(r.Text)):
				t.Fatalf("fenced: fallback after %+v", r)
			case out.Acquired && (r.Kind != ReplyBulk || out.FencingToken <= 0 || strconv.FormatInt(out.FencingToken, 10) != r.Text):
				t.Fatalf("fenced: acquired with token %d on %+v", out.FencingToken, r)
			case out.Done && r.Kind == ReplyError && out.Redirect == nil && (out.Err == nil || out.Err.Message != r.Text):
				t.Fatalf("fenced: error reply %q gave %+v", r.Text, out)
			}
			if out.Done {
				break
			}
		}
	})
}

// checkOutcome checks one Interpret of r at step (see FuzzReplyClassification).
func checkOutcome(t *testing.T, step Step, r Reply, out Outcome) {
	t.Helper()
	if !out.Done && (r.Kind != ReplyError || !confirming(r.Text)) {
		t.Fatalf("step %d: a fallback after %+v, which confirms nothing", step, r)
	}
	if out.Owned {
		okReply := isOK(r) && (step == StepSetIfeq || step == StepAcquire)
		intReply := r.Kind == ReplyInt && r.Int >= 1 && step != StepGet
		getReply := step == StepGet && (r.Kind == ReplyBulk || r.Kind == ReplyStatus)
		if out.Err != nil || out.Redirect != nil || !(okReply || intReply || getReply) {
			t.Fatalf("step %d: owned on %+v", step, r)
		}
	}
	if out.Done && r.Kind == ReplyError {
		if rd, ok := ParseRedirect(r.Text); ok != (out.Redirect != nil) || ok && *out.Redirect != rd {
			t.Fatalf("step %d: redirect %+v on %q; ParseRedirect says %+v, %v", step, out.Redirect, r.Text, rd, ok)
		}
		if out.Redirect == nil && (out.Err == nil || out.Err.Message != r.Text) {
			t.Fatalf("step %d: error reply %q gave %+v", step, r.Text, out)
		}
	}
	if out.Err != nil {
		e := definiteError("Release", "node", nil, out.Err, nil)
		if !errors.Is(e, ErrServerReply) || errors.Is(e, ErrOutcomeUnknown) || errors.Is(e, ErrNotSubmitted) {
			t.Fatalf("step %d: %q classified %v", step, r.Text, e.Class)
		}
		if errors.Is(e, ErrDidNotRun) != IsDidNotRunReply(out.Err.Message) {
			t.Fatalf("step %d: %q matches ErrDidNotRun: %v", step, r.Text, errors.Is(e, ErrDidNotRun))
		}
		_ = e.Error()
	}
}

// FuzzClusterSlots: whatever CLUSTER SLOTS answers (ranges out of order,
// negative or past the last slot, ports as text), the engine's slot map
// takes it without panicking, and every slot it assigns lies in a range of
// the reply.
func FuzzClusterSlots(f *testing.F) {
	f.Add(int64(0), int64(5460), "127.0.0.1", int64(7000), "", false)
	f.Add(int64(5461), int64(10922), "127.0.0.1", int64(7001), "", false)
	f.Add(int64(10923), int64(16383), "::1", int64(0), "7002", true)
	f.Add(int64(-1), int64(3), "h", int64(1), "", false)
	f.Fuzz(func(t *testing.T, start, end int64, host string, port int64, portText string, textPort bool) {
		master := []Reply{{Kind: ReplyBulk, Text: host}, {Kind: ReplyInt, Int: port}}
		if textPort {
			master[1] = Reply{Kind: ReplyBulk, Text: portText}
		}
		entry := Reply{Kind: ReplyArray, Array: []Reply{{Kind: ReplyInt, Int: start}, {Kind: ReplyInt, Int: end},
			{Kind: ReplyArray, Array: master}}}
		e := &Engine{slots: &slotTable{}, clock: RealClock()}
		e.storeSlots(Reply{Kind: ReplyArray, Array: []Reply{entry}})
		for slot, owner := range e.slots.owner {
			if owner != "" && (int64(slot) < start || int64(slot) > end) {
				t.Fatalf("slot %d assigned to %q outside the reply's range [%d, %d]", slot, owner, start, end)
			}
		}
	})
}
