package lease

import "testing"

func TestCloseRunsHooksOnceBeforeAndOnceAfterTheSessionsClose(t *testing.T) {
	locks, err := New(newIdleClient(t))
	if err != nil {
		t.Fatal(err)
	}
	var calls []bool
	locks.core.onClose(func(after bool) { calls = append(calls, after) })
	locks.WithKeyPrefix("v:").Close()
	locks.Close()
	if len(calls) != 2 || calls[0] || !calls[1] {
		t.Fatalf("close hook calls %v; want [false true]", calls)
	}
	locks.core.onClose(func(after bool) { calls = append(calls, after) })
	if len(calls) != 4 {
		t.Fatal("a hook registered after Close did not run at once")
	}
}
