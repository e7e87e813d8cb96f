package lease

import "testing"

func TestCloseRunsHooksOnceBeforeSessionsClose(t *testing.T) {
	locks, err := New(newIdleClient(t))
	if err != nil {
		t.Fatal(err)
	}
	calls := 0
	locks.core.onClose(func() { calls++ })
	locks.WithKeyPrefix("v:").Close()
	locks.Close()
	if calls != 1 {
		t.Fatalf("close hook ran %d times; want 1", calls)
	}
	locks.core.onClose(func() { calls++ })
	if calls != 2 {
		t.Fatal("a hook registered after Close did not run at once")
	}
}
