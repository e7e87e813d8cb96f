package conn_test

import (
	"crypto/sha1"
	"encoding/hex"
	"errors"
	"fmt"
	. "github.com/respire-go/respire/conn"
	"reflect"
	"testing"

	"github.com/respire-go/respire/capstore"
)

func errReply(text string) Reply { return Reply{Kind: ReplyError, Text: text} }

var (
	okReply   = Reply{Kind: ReplyStatus, Text: "OK"}
	nilReply  = Reply{Kind: ReplyNil}
	oneReply  = Reply{Kind: ReplyInt, Int: 1}
	zeroReply = Reply{Kind: ReplyInt, Int: 0}
)

const (
	unknownDelex   = "ERR unknown command 'DELEX', with args beginning with: 'k' 'IFEQ' 'tok' "
	unknownDelifeq = "ERR unknown command 'DELIFEQ', with args beginning with: 'k' 'tok' "
	noScriptRedis  = "NOSCRIPT No matching script. Please use EVAL."
	noScriptValkey = "NOSCRIPT No matching script."
)

// drivePure feeds replies to op and returns the command names sent, the
// final outcome and the capability bits learned.
func drivePure(t *testing.T, op *Operation, replies ...Reply) ([]string, Outcome, capstore.Set) {
	t.Helper()
	var sent []string
	var learned capstore.Set
	for i, r := range replies {
		sent = append(sent, op.Command().Args[0])
		out := op.Interpret(r)
		learned |= out.Learned
		if out.Done {
			if i != len(replies)-1 {
				t.Fatalf("operation finished after %d of %d replies", i+1, len(replies))
			}
			return sent, out, learned
		}
	}
	t.Fatalf("operation not finished after %d replies; next %v", len(replies), op.Command().Args)
	return nil, Outcome{}, 0
}

func TestScriptSHA1sMatchTheirSources(t *testing.T) {
	for src, want := range map[string]string{ReleaseScript: ReleaseScriptSHA, ExtendScript: ExtendScriptSHA} {
		sum := sha1.Sum([]byte(src))
		if got := hex.EncodeToString(sum[:]); got != want {
			t.Errorf("sha1(%q) = %s; want %s", src, got, want)
		}
	}
}

func TestReleaseLadderPerServer(t *testing.T) {
	tests := []struct {
		name    string
		caps    capstore.Set
		replies []Reply
		sent    []string
		learned capstore.Set
	}{
		{"redis 8.4: DELEX alone", 0, []Reply{oneReply}, []string{"DELEX"}, 0},
		{"valkey 9.0 first: DELEX unknown then DELIFEQ", 0, []Reply{errReply(unknownDelex), oneReply},
			[]string{"DELEX", "DELIFEQ"}, capstore.DelexUnsupported},
		{"valkey 9.0 later: DELIFEQ alone", capstore.DelexUnsupported, []Reply{oneReply}, []string{"DELIFEQ"}, 0},
		{"valkey 8.1 first: DELEX, DELIFEQ, EVALSHA, EVAL", 0,
			[]Reply{errReply(unknownDelex), errReply(unknownDelifeq), errReply(noScriptValkey), oneReply},
			[]string{"DELEX", "DELIFEQ", "EVALSHA", "EVAL"},
			capstore.DelexUnsupported | capstore.DelifeqUnsupported | capstore.ReleaseScriptLoaded},
		{"redis 7.0 first with Redis NOSCRIPT text", 0,
			[]Reply{errReply(unknownDelex), errReply(unknownDelifeq), errReply(noScriptRedis), oneReply},
			[]string{"DELEX", "DELIFEQ", "EVALSHA", "EVAL"},
			capstore.DelexUnsupported | capstore.DelifeqUnsupported | capstore.ReleaseScriptLoaded},
		{"old server later: EVALSHA alone", capstore.DelexUnsupported | capstore.DelifeqUnsupported,
			[]Reply{oneReply}, []string{"EVALSHA"}, capstore.ReleaseScriptLoaded},
		{"backtick quoting also falls back", 0,
			[]Reply{errReply("ERR unknown command `DELEX`, with args beginning with: "), oneReply},
			[]string{"DELEX", "DELIFEQ"}, capstore.DelexUnsupported},
		{"lower-case text also falls back", 0,
			[]Reply{errReply("err Unknown Command 'delex', with args"), oneReply},
			[]string{"DELEX", "DELIFEQ"}, capstore.DelexUnsupported},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			sent, out, learned := drivePure(t, NewRelease("k", "tok", tt.caps), tt.replies...)
			if !reflect.DeepEqual(sent, tt.sent) || !out.Owned || out.Err != nil || learned != tt.learned {
				t.Fatalf("sent %v owned %v err %v learned %v; want %v true nil %v", sent, out.Owned, out.Err, learned, tt.sent, tt.learned)
			}
		})
	}
}

func TestExtendLadder(t *testing.T) {
	sent, out, learned := drivePure(t, NewExtend("k", "tok", 30000, 0), okReply)
	if !reflect.DeepEqual(sent, []string{"SET"}) || !out.Owned || learned != 0 {
		t.Fatalf("native: sent %v owned %v learned %v", sent, out.Owned, learned)
	}
	sent, out, learned = drivePure(t, NewExtend("k", "tok", 30000, 0),
		errReply("ERR syntax error"), errReply(noScriptRedis), oneReply)
	want := capstore.ConditionalSetUnsupported | capstore.ExtendScriptLoaded
	if !reflect.DeepEqual(sent, []string{"SET", "EVALSHA", "EVAL"}) || !out.Owned || learned != want {
		t.Fatalf("fallback: sent %v owned %v learned %v", sent, out.Owned, learned)
	}
	sent, _, _ = drivePure(t, NewExtend("k", "tok", 30000, capstore.ConditionalSetUnsupported), zeroReply)
	if !reflect.DeepEqual(sent, []string{"EVALSHA"}) {
		t.Fatalf("remembered: sent %v", sent)
	}
}

func TestOwnershipMismatchNeverFallsBack(t *testing.T) {
	for _, op := range []*Operation{NewRelease("k", "t", 0), NewExtend("k", "t", 1, 0)} {
		r := zeroReply
		if op.Step() == StepSetIfeq {
			r = nilReply
		}
		sent, out, learned := drivePure(t, op, r)
		if len(sent) != 1 || out.Owned || out.Err != nil || learned != 0 {
			t.Fatalf("%v: sent %v out %+v learned %v", sent, sent, out, learned)
		}
	}
}

func TestNoFallbackOnOtherErrors(t *testing.T) {
	releaseErrors := []string{
		"NOPERM User locker has no permissions to run the 'delex' command",
		"ERR syntax error",
		"ERR unknown command 'another', with args beginning with: ",
		"ERR unknown command 'DELEX'",
		"WRONGTYPE Operation against a key holding the wrong kind of value",
		"ERR arbitrary server failure",
		"ERR proxy reported syntax error after forwarding",
		"ERR unknown command 'DELIFEQ', with args beginning with: ",
	}
	for _, text := range releaseErrors {
		sent, out, learned := drivePure(t, NewRelease("k", "t", 0), errReply(text))
		if len(sent) != 1 || out.Err == nil || out.Err.Message != text || learned != 0 {
			t.Errorf("release %q: sent %v out %+v learned %v", text, sent, out, learned)
		}
	}
	extendErrors := []string{"ERR syntax error after forwarding", "err syntax error", "ERR Syntax error",
		"NOPERM denied", "WRONGTYPE Operation against a key holding the wrong kind of value",
		"ERR unknown command 'SET', with args beginning with: "}
	for _, text := range extendErrors {
		sent, out, _ := drivePure(t, NewExtend("k", "t", 1, 0), errReply(text))
		if len(sent) != 1 || out.Err == nil || out.Err.Message != text {
			t.Errorf("extend %q: sent %v out %+v", text, sent, out)
		}
	}
	// NOSCRIPT is only meaningful after EVALSHA.
	sent, out, _ := drivePure(t, NewRelease("k", "t", 0), errReply(noScriptRedis))
	if len(sent) != 1 || out.Err == nil {
		t.Errorf("NOSCRIPT on DELEX: sent %v out %+v", sent, out)
	}
}

func TestRedirectRepliesEndTheOperation(t *testing.T) {
	sent, out, _ := drivePure(t, NewRelease("foo", "t", 0), errReply("MOVED 12182 127.0.0.1:7272"))
	if len(sent) != 1 || out.Redirect == nil || out.Redirect.Ask || out.Redirect.Slot != 12182 || out.Redirect.Addr != "127.0.0.1:7272" {
		t.Fatalf("MOVED: %+v", out.Redirect)
	}
	_, out, _ = drivePure(t, NewExtend("foo", "t", 1, 0), errReply("ASK 12182 127.0.0.1:7270"))
	if out.Redirect == nil || !out.Redirect.Ask {
		t.Fatalf("ASK: %+v", out)
	}
}

func TestCommandsAreExact(t *testing.T) {
	tests := []struct {
		got  Command
		want []string
	}{
		{AcquireCommand("p:k", "tok", 30001), []string{"SET", "p:k", "tok", "NX", "PX", "30001"}},
		{NewExtend("p:k", "tok", 5, 0).Command(), []string{"SET", "p:k", "tok", "IFEQ", "tok", "PX", "5"}},
		{NewExtend("p:k", "tok", 5, capstore.ConditionalSetUnsupported).Command(), []string{"EVALSHA", ExtendScriptSHA, "1", "p:k", "tok", "5"}},
		{NewRelease("p:k", "tok", 0).Command(), []string{"DELEX", "p:k", "IFEQ", "tok"}},
		{NewRelease("p:k", "tok", capstore.DelexUnsupported).Command(), []string{"DELIFEQ", "p:k", "tok"}},
		{NewRelease("p:k", "tok", capstore.DelexUnsupported|capstore.DelifeqUnsupported).Command(), []string{"EVALSHA", ReleaseScriptSHA, "1", "p:k", "tok"}},
		{OwnerCommand("p:k"), []string{"GET", "p:k"}},
		{FenceCommand(7, "127.0.0.1:5000"), []string{"CLIENT", "KILL", "ID", "7", "ADDR", "127.0.0.1:5000"}},
		{ProbeKillCommand(7), []string{"CLIENT", "KILL", "ID", "7", "SKIPME", "yes"}},
	}
	for _, tt := range tests {
		if !reflect.DeepEqual(tt.got.Args, tt.want) {
			t.Errorf("command = %q; want %q", tt.got.Args, tt.want)
		}
		if tt.got.Key >= 0 && tt.got.Args[tt.got.Key] != "p:k" {
			t.Errorf("%q: Key index %d does not point at the key", tt.got.Args, tt.got.Key)
		}
	}
}

func TestOwnerAndAcquireResults(t *testing.T) {
	if ok, err := AcquireResult(okReply); !ok || err != nil {
		t.Fatal("SET NX +OK should acquire")
	}
	if ok, err := AcquireResult(nilReply); ok || err != nil {
		t.Fatal("SET NX nil should not acquire")
	}
	if _, err := AcquireResult(errReply("NOPERM x")); err == nil || err.Code != "NOPERM" {
		t.Fatalf("NOPERM: %v", err)
	}
	_, out, _ := drivePure(t, NewOwnerQuery("k"), Reply{Kind: ReplyBulk, Text: "\x00\xff"})
	if !out.Owned || out.Value != "\x00\xff" {
		t.Fatalf("GET bulk: %+v", out)
	}
	_, out, _ = drivePure(t, NewOwnerQuery("k"), nilReply)
	if out.Owned {
		t.Fatalf("GET nil: %+v", out)
	}
}

func TestErrorClassesMatchTheirSentinels(t *testing.T) {
	tests := []struct {
		class Class
		is    error
	}{{Definite, ErrServerReply}, {NotSubmitted, ErrNotSubmitted}, {Uncertain, ErrOutcomeUnknown}}
	for _, tt := range tests {
		err := error(&Error{Class: tt.class, Op: "release", Err: errors.New("cause")})
		for _, other := range tests {
			if got := errors.Is(err, other.is); got != (other.class == tt.class) {
				t.Errorf("errors.Is(%s error, %v) = %v", tt.class, other.is, got)
			}
		}
		if ClassOf(fmt.Errorf("wrapped: %w", err)) != tt.class {
			t.Errorf("ClassOf lost the class %s through wrapping", tt.class)
		}
	}
}
