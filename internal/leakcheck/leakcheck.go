// Package leakcheck holds the goroutine-leak check options the tests share.
package leakcheck

import (
	"fmt"
	"os"
	"testing"
	"time"

	"go.uber.org/goleak"
)

// RueidisBackground returns goleak options that ignore the two goroutines
// rueidis' cluster client leaves sleeping after Close: the one that closes
// connections dropped by a topology refresh after a fixed 5 s sleep
// (cluster.go _refresh) and the lazy-refresh delay of its singleflight
// (singleflight.go DelayDo). Both end by themselves and are not ours.
func RueidisBackground() []goleak.Option {
	return []goleak.Option{
		goleak.IgnoreAnyFunction("github.com/redis/rueidis.(*clusterClient)._refresh.func2"),
		goleak.IgnoreAnyFunction("github.com/redis/rueidis.(*call).DelayDo.func1"),
	}
}

// VerifyTestMain is goleak.VerifyTestMain with a window that holds on a
// busy machine: after a passing run it looks for leaked goroutines until
// none is left or settleWindow has passed. A goroutine the code under test
// ends by itself soon after (a connection closed on a task of its own, a
// timer's callback) may need more than goleak's own half second to run
// when the host is loaded; a real leak — a socket never closed, a loop
// never stopped — is still there after the window and fails the run.
func VerifyTestMain(m *testing.M, opts ...goleak.Option) {
	code := m.Run()
	if code == 0 {
		if err := settled(opts); err != nil {
			fmt.Fprintf(os.Stderr, "goleak: Errors on successful test run: %v\n", err)
			code = 1
		}
	}
	os.Exit(code)
}

// settleWindow is how long VerifyTestMain waits for goroutines to end.
const settleWindow = 10 * time.Second

// settled returns goleak's error once no leak is left (nil) or the window
// has passed.
func settled(opts []goleak.Option) error {
	deadline := time.Now().Add(settleWindow)
	for {
		err := goleak.Find(opts...)
		if err == nil || time.Now().After(deadline) {
			return err
		}
		time.Sleep(50 * time.Millisecond)
	}
}
