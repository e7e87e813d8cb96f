package conn_test

import (
	"errors"
	"testing"

	. "github.com/respire-go/respire/conn"
)

// Rule PushHandsOverWithinOneLocks, on the wire: the hand-over releases a
// key its owner holds and gives it to the next owner in one command; a key
// the owner lost is taken by the next owner only when free, and never
// overwritten. Over a real redis-server 7.0.
func TestPushHandsOverWithinOneLocks_TheScriptReleasesAndHandsOverInOneStep(t *testing.T) {
	p := realRedis70Pool(t)
	ctx := ctxT(t)
	const key = "conn-handover"
	owner := func() string {
		res, err := p.Do(ctx, OwnerOp(key), nil)
		if err != nil {
			t.Fatal(err)
		}
		if !res.Owned {
			return ""
		}
		return res.Token
	}
	if _, err := p.Do(ctx, ReleaseOp(key, "b"), nil); err != nil {
		t.Fatal(err)
	}
	if res, err := p.Do(ctx, AcquireOp(key, "a", 60000), nil); err != nil || !res.Owned {
		t.Fatalf("acquire a = %+v, %v", res, err)
	}
	res, err := p.Do(ctx, HandOverOp(key, "a", "b", 60000), nil)
	if err != nil || !res.Owned || !res.Waiting || owner() != "b" {
		t.Fatalf("hand-over a→b = %+v, %v, owner %q; want released, handed over, owner b", res, err, owner())
	}
	// a no longer holds it: nothing changes, b keeps it.
	res, err = p.Do(ctx, HandOverOp(key, "a", "c", 60000), nil)
	if err != nil || res.Owned || res.Waiting || owner() != "b" {
		t.Fatalf("hand-over by a non-owner = %+v, %v, owner %q; want neither, owner b", res, err, owner())
	}
	if res, err := p.Do(ctx, ReleaseOp(key, "b"), nil); err != nil || !res.Owned {
		t.Fatalf("release b = %+v, %v", res, err)
	}
	// The key is free: the next owner takes it, the release is refused.
	res, err = p.Do(ctx, HandOverOp(key, "a", "c", 60000), nil)
	if err != nil || res.Owned || !res.Waiting || owner() != "c" {
		t.Fatalf("hand-over of a free key = %+v, %v, owner %q; want taken by c", res, err, owner())
	}
	if res, err := p.Do(ctx, ReleaseOp(key, "c"), nil); err != nil || !res.Owned {
		t.Fatalf("release c = %+v, %v", res, err)
	}
}

// Bad input is refused before anything is sent.
func TestPushHandsOverWithinOneLocks_BadInputIsNotSent(t *testing.T) {
	for _, op := range []Op{HandOverOp("k", "", "b", 1), HandOverOp("k", "a", "", 1), HandOverOp("k", "a", "b", 0)} {
		var e *Error
		if err := op.Invalid(); !errors.As(err, &e) || e.Class != NotSubmitted {
			t.Errorf("%v: Invalid() = %v; want a NotSubmitted *Error", op.Key(), err)
		}
	}
	call, _ := HandOverOp("k", "a", "b", 1).ScriptCall()
	for n, want := range map[int64][2]bool{0: {false, false}, 1: {true, true}, 2: {false, true}} {
		out := call.Interpret(Reply{Kind: ReplyInt, Int: n})
		if !out.Done || out.Err != nil || out.Owned != want[0] || out.Waiting != want[1] {
			t.Errorf("reply %d: %+v; want owned %v, next holds %v", n, out, want[0], want[1])
		}
	}
	if out := call.Interpret(Reply{Kind: ReplyInt, Int: 3}); out.Err == nil {
		t.Error("reply 3 read as an answer; want a PROTOCOL error")
	}
}
