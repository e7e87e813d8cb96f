package conn_test

import (
	. "github.com/respire-go/respire/conn"
	"reflect"
	"testing"
)

// TestHolderRevealsNoToken_OwnerLeaseScriptCall: OwnerLeaseOp is EVALSHA
// of OwnerLeaseScript on the key with the value a GET read (EVAL only
// after NOSCRIPT); a PTTL reply (n >= 0, or -1 for no expiry) says the key
// still holds that value, -2 that it changed or is gone, anything else is
// a protocol error.
func TestHolderRevealsNoToken_OwnerLeaseScriptCall(t *testing.T) {
	call, ok := OwnerLeaseOp("k", "tok\x00label").ScriptCall()
	if !ok {
		t.Fatal("OwnerLeaseOp has no ScriptCall")
	}
	want := []string{"EVALSHA", OwnerLeaseScriptSHA, "1", "k", "tok\x00label"}
	if got := call.Command(); !reflect.DeepEqual(got.Args, want) || got.Key != 3 {
		t.Fatalf("Command() = %q; want %q", got.Args, want)
	}
	if out := call.Interpret(errReply(noScriptRedis)); out.Done || call.Command().Args[0] != "EVAL" {
		t.Fatalf("NOSCRIPT: %+v, then %q; want EVAL next", out, call.Command().Args[0])
	}
	for _, tc := range []struct {
		reply     int64
		owned     bool
		remaining int64
		protocol  bool
	}{{29998, true, 29998, false}, {0, true, 0, false}, {-1, true, -1, false}, {-2, false, 0, false}, {-3, false, 0, true}} {
		call, _ := OwnerLeaseOp("k", "v").ScriptCall()
		out := call.Interpret(Reply{Kind: ReplyInt, Int: tc.reply})
		if !out.Done || out.Owned != tc.owned || out.RemainingMillis != tc.remaining || (out.Err != nil) != tc.protocol {
			t.Errorf("reply %d: %+v; want owned %v, remaining %d, protocol error %v", tc.reply, out, tc.owned, tc.remaining, tc.protocol)
		}
	}
}
