package conn_test

import (
	"crypto/sha1"
	"encoding/hex"
	. "github.com/respire-go/respire/conn"
	"reflect"
	"strings"
	"testing"
)

func TestScriptsAreFixed_PrimitiveScriptSHA1sMatchTheirSources(t *testing.T) {
	for name, pair := range map[string][2]string{
		"SemaphoreAcquireScript": {SemaphoreAcquireScript, SemaphoreAcquireScriptSHA},
		"HolderRenewScript":      {HolderRenewScript, HolderRenewScriptSHA},
		"HolderReleaseScript":    {HolderReleaseScript, HolderReleaseScriptSHA},
		"HolderLeaseScript":      {HolderLeaseScript, HolderLeaseScriptSHA},
		"HolderCountScript":      {HolderCountScript, HolderCountScriptSHA},
		"ReadAcquireScript":      {ReadAcquireScript, ReadAcquireScriptSHA},
		"WriteAcquireScript":     {WriteAcquireScript, WriteAcquireScriptSHA},
		"OwnerLeaseScript":       {OwnerLeaseScript, OwnerLeaseScriptSHA},
		"HandOverScript":         {HandOverScript, HandOverScriptSHA},
	} {
		sum := sha1.Sum([]byte(pair[0]))
		if got := hex.EncodeToString(sum[:]); got != pair[1] {
			t.Errorf("sha1(%s) = %s; want %s", name, got, pair[1])
		}
	}
}

func TestEvalOnlyAfterNoScript_PrimitiveScriptCalls(t *testing.T) {
	sem := Semaphore{HoldersKey: "{j}:sem", Limit: 4}
	call, ok := sem.AcquireOp("tok", 1500).ScriptCall()
	if !ok {
		t.Fatal("AcquireOp has no ScriptCall")
	}
	want := []string{"EVALSHA", SemaphoreAcquireScriptSHA, "1", "{j}:sem", "tok", "1500", "4"}
	if got := call.Command(); !reflect.DeepEqual(got.Args, want) || got.Key != 3 || call.Step() != StepPrimitiveEvalsha {
		t.Fatalf("Command() = %+v; want %q key 3", got, want)
	}
	for _, text := range []string{noScriptRedis, noScriptValkey} {
		call, _ := sem.AcquireOp("tok", 1500).ScriptCall()
		if out := call.Interpret(errReply(text)); out.Done {
			t.Fatalf("Interpret(%q) = %+v; want the EVAL next", text, out)
		}
		want[0], want[1] = "EVAL", SemaphoreAcquireScript
		if got := call.Command(); !reflect.DeepEqual(got.Args, want) || call.Step() != StepPrimitiveEval {
			t.Fatalf("after NOSCRIPT Command() = %q; want %q", got.Args, want)
		}
		if out := call.Interpret(errReply(text)); !out.Done || out.Err == nil || out.Err.Code != "NOSCRIPT" {
			t.Fatalf("NOSCRIPT to EVAL = %+v; want a definite error, no second fallback", out)
		}
	}
	if _, ok := ReleaseOp("k", "tok").ScriptCall(); ok {
		t.Fatal("a mutex Op claims a ScriptCall")
	}
}

func TestEvalOnlyAfterNoScript_PrimitiveOpsOverTheWire(t *testing.T) {
	srv := startSim(t, "valkey-9.0")
	p := newPool(t, newClient(t, []string{srv.Addr()}, "", simPassword))
	l := mustRWLock(t, "", "doc")
	srv.ResetLog()
	mustDo(t, p, l.ReadAcquireOp("a", 60000))
	mustDo(t, p, l.ReadAcquireOp("b", 60000))
	mustDo(t, p, l.ReadersOp())
	var sent []string
	for _, e := range srv.Log() {
		if strings.HasPrefix(e.Args[0], "EVAL") {
			sent = append(sent, e.Args[0])
		}
	}
	if want := []string{"EVALSHA", "EVAL", "EVALSHA", "EVALSHA", "EVAL"}; !reflect.DeepEqual(sent, want) {
		t.Fatalf("commands = %q; want %q", sent, want)
	}
}

func TestPrimitiveRepliesAreStrict_EveryScriptReply(t *testing.T) {
	sem := Semaphore{HoldersKey: "{j}:sem", Limit: 4}
	l := RWLock{WriterKey: "{c}:w", ReadersKey: "{c}:r"}
	int64Reply := func(n int64) Reply { return Reply{Kind: ReplyInt, Int: n} }
	tests := []struct {
		op    Op
		reply Reply
		want  ScriptOutcome
	}{
		{sem.AcquireOp("t", 1), oneReply, ScriptOutcome{Done: true, Owned: true}},
		{sem.AcquireOp("t", 1), zeroReply, ScriptOutcome{Done: true}},
		{sem.RenewOp("t", 1), oneReply, ScriptOutcome{Done: true, Owned: true}},
		{sem.ReleaseOp("t"), zeroReply, ScriptOutcome{Done: true}},
		{sem.LeaseOp("t"), int64Reply(1234), ScriptOutcome{Done: true, Owned: true, RemainingMillis: 1234}},
		{sem.LeaseOp("t"), zeroReply, ScriptOutcome{Done: true}},
		{sem.LeaseOp("t"), int64Reply(-2), ScriptOutcome{Done: true}},
		{sem.HoldersOp(), int64Reply(3), ScriptOutcome{Done: true, Holders: 3}},
		{l.ReadersOp(), zeroReply, ScriptOutcome{Done: true}},
		{l.ReadAcquireOp("t", 1), oneReply, ScriptOutcome{Done: true, Owned: true}},
		{l.WriteAcquireOp("t", 1, 1), int64Reply(2), ScriptOutcome{Done: true, Waiting: true}},
		{l.WriteAcquireOp("t", 1, 1), oneReply, ScriptOutcome{Done: true, Owned: true}},
		{l.WriteAcquireOp("t", 1, 1), zeroReply, ScriptOutcome{Done: true}},
	}
	for _, tt := range tests {
		call, _ := tt.op.ScriptCall()
		if got := call.Interpret(tt.reply); !reflect.DeepEqual(got, tt.want) {
			t.Errorf("%s: Interpret(%+v) = %+v; want %+v", tt.op.Name(), tt.reply, got, tt.want)
		}
	}
	for _, bad := range []struct {
		op    Op
		reply Reply
	}{
		{sem.AcquireOp("t", 1), int64Reply(2)}, {sem.RenewOp("t", 1), int64Reply(-1)},
		{sem.LeaseOp("t"), int64Reply(-1)}, {sem.HoldersOp(), int64Reply(-1)},
		{l.WriteAcquireOp("t", 1, 1), int64Reply(3)}, {sem.AcquireOp("t", 1), okReply}, {sem.AcquireOp("t", 1), nilReply},
	} {
		call, _ := bad.op.ScriptCall()
		if got := call.Interpret(bad.reply); !got.Done || got.Err == nil || got.Err.Code != "PROTOCOL" || got.Owned {
			t.Errorf("%s: Interpret(%+v) = %+v; want a PROTOCOL error", bad.op.Name(), bad.reply, got)
		}
	}
	call, _ := sem.AcquireOp("t", 1).ScriptCall()
	out := call.Interpret(errReply("LIMITMISMATCH semaphore limit is 2, not 4"))
	if !out.Done || out.LimitMismatch == nil || out.LimitMismatch.Stored != "2" || out.Err != nil {
		t.Fatalf("Interpret(LIMITMISMATCH) = %+v; want a limit mismatch, stored 2", out)
	}
	call, _ = sem.AcquireOp("t", 1).ScriptCall()
	out = call.Interpret(errReply("LIMITMISMATCH semaphore limit is unknown, not 4"))
	if !out.Done || out.LimitMismatch == nil || out.LimitMismatch.Stored != "" || out.Err != nil ||
		!strings.Contains(out.LimitMismatch.Error(), "no stored limit") {
		t.Fatalf("Interpret(LIMITMISMATCH unknown) = %+v; want a limit mismatch with no stored limit", out)
	}
	call, _ = sem.AcquireOp("t", 1).ScriptCall()
	if out := call.Interpret(errReply("LIMITMISMATCH semaphore limit is 2, not 5")); out.LimitMismatch != nil || out.Err == nil {
		t.Fatalf("a mismatch naming another requested limit = %+v; want a plain server error", out)
	}
	call, _ = sem.AcquireOp("t", 1).ScriptCall()
	if out := call.Interpret(errReply("MOVED 7 127.0.0.1:7001")); !out.Done || out.Redirect == nil || out.Redirect.Slot != 7 {
		t.Fatalf("Interpret(MOVED) = %+v; want a redirect", out)
	}
}
