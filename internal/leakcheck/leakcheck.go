// Package leakcheck holds the goroutine-leak check options the tests share.
package leakcheck

import "go.uber.org/goleak"

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
