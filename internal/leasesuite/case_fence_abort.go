package leasesuite

// This file is the case of a fence that stops a command still on its way
// to a socket (rule FenceBeforeReturn).

import (
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/respire-go/respire/actor"
	"github.com/respire-go/respire/internal/faultproxy"
	"github.com/respire-go/respire/internal/leaseinternal"
	"github.com/respire-go/respire/lease"
)

// serverWrites counts the commands the server ran that may write a key
// (a lock's acquisition, renewal or release; not the push hub's reads nor
// connection chatter).
func serverWrites(tg *target) int {
	writes := func(name string) bool {
		switch strings.ToLower(name) {
		case "set", "eval", "evalsha", "fcall", "pexpire", "pexpireat", "del", "delex", "unlink", "getdel":
			return true
		}
		return false
	}
	n := 0
	if !tg.real {
		for _, e := range tg.srv.Log() {
			if len(e.Args) > 0 && writes(e.Args[0]) {
				n++
			}
		}
		return n
	}
	for _, line := range strings.Split(tg.srv.Exec("INFO", "commandstats"), "\r\n") {
		rest, ok := strings.CutPrefix(line, "cmdstat_")
		name, stats, _ := strings.Cut(rest, ":calls=")
		if ok && writes(name) {
			calls, _ := strconv.Atoi(stats[:max(strings.IndexByte(stats, ','), 0)])
			n += calls
		}
	}
	return n
}

// TestFenceBeforeReturn_ARenewalNotYetHandedOffIsNeverSent: a keep-alive
// renewal waits for its session's idle check (a PING, stalled) when the
// lease deadline passes. The lock is lost and its fence aborts the
// renewal, so once the PING is answered the renewal is not handed to the
// socket: no command of the lost lock runs after Close returned.
func caseFenceBeforeReturn_ARenewalNotYetHandedOffIsNeverSent(t *testing.T, tr Transport) {
	forEachFaultyServer(t, tr, func(t *testing.T, f *faulty) {
		locks := f.locks(t, lease.WithIdleCheck(0)) // every command of an idle session is preceded by a PING
		clock := &actor.ManualClock{}
		useClock(locks, clock)
		lock, err := locks.Acquire(ctxT(t), "k", 10*time.Second, lease.WithKeepAlive())
		if err != nil {
			t.Fatal(err)
		}
		session := f.sessionConn(t, lock)
		session.Stall(faultproxy.ToServer)
		clock.Advance(5 * time.Second)
		if err := session.WaitBuffered(ctxT(t), faultproxy.ToServer, 1); err != nil { // the idle check's PING
			t.Fatal(err)
		}
		clock.Advance(5 * time.Second) // past the lease deadline
		waitDone(t, lock.Context())
		if err := lock.Close(); err != nil {
			t.Fatalf("Close = %v", err)
		}
		before := serverWrites(f.target)
		f.proxy.UnstallAll(faultproxy.Both)
		leaseinternal.Driver(locks).WaitIdle()
		if after := serverWrites(f.target); after != before {
			t.Fatalf("%d writes ran after Close of the lost lock; want none (its renewal was aborted)", after-before)
		}
	})
}

func init() {
	register(
		Case{"FenceBeforeReturn_ARenewalNotYetHandedOffIsNeverSent", caseFenceBeforeReturn_ARenewalNotYetHandedOffIsNeverSent},
	)
}
