package sim

import (
	"os"
	"testing"
	"time"

	"github.com/respire-go/respire/conn"
	"github.com/respire-go/respire/internal/realserver"
)

// trackingSortedSetScript: client tracking of sorted-set keys. "bc" (RESP3,
// default mode) reads keys with the sorted-set commands and the lock
// scripts; "b" changes them. A write that changed nothing (ZADD NX of a
// member, ZREM of none, an empty range) invalidates nothing; one that did,
// a key deleted when emptied, a script's writes and the key's expiry
// invalidate it once.
var trackingSortedSetScript = []tstep{
	tc("b", "SCRIPT FLUSH"), tc("bc", "CLIENT TRACKING ON"), tc("bc", "ZSCORE z1 m"), tc("bc", "ZCARD z2"), tc("bc", "ZCOUNT z3 -inf +inf"),
	tc("b", "ZADD z1 1 m"), tread("bc"), tc("bc", "ZSCORE z1 m"), tc("b", "ZADD z1 NX 2 m"), tc("b", "ZADD z1 1 m"),
	tc("b", "ZADD z1 GT 0 m"), tread("bc"), tc("b", "ZADD z1 XX 5 m"), tread("bc"),
	tc("b", "ZADD z2 1 a"), tread("bc"), tc("bc", "ZCARD z2"), tc("b", "ZREM z2 nope"), tread("bc"),
	tc("b", "ZREM z2 a"), tread("bc"), tc("b", "EXISTS z2"),
	tc("b", "ZADD z3 1 a"), tread("bc"), tc("bc", "ZCOUNT z3 0 1"), tc("b", "ZREMRANGEBYSCORE z3 5 6"), tread("bc"),
	tc("b", "ZREMRANGEBYSCORE z3 -inf +inf"), tread("bc"),
	tc("bc", "ZSCORE z4 m"), tc("bc", "ZADD z4 1 m"), tc("bc", "ZSCORE z4 m"), tc("b", "ZADD z4 2 m"), tread("bc"),
	tc("b", "ZADD ze 1 m"), tc("b", "PEXPIRE ze 700"), tc("bc", "ZCARD ze"), {conn: "bc", kind: tWait},
	{conn: "bc", args: []string{"EVALSHA", conn.HolderCountScriptSHA, "1", semHolders}},
	{conn: "bc", args: []string{"EVAL", conn.HolderCountScript, "1", semHolders}},
	{conn: "b", args: []string{"EVAL", conn.SemaphoreAcquireScript, "1", semHolders, "a", "60000", "2"}},
	tread("bc"), tc("bc", "ZCARD "+semHolders), {conn: "bc", args: []string{"ZSCORE", semHolders, ""}},
	{conn: "b", args: []string{"EVAL", conn.HolderRenewScript, "1", semHolders, "a", "90000"}},
	tread("bc"), tc("bc", "ZCARD "+semHolders), {conn: "bc", args: []string{"ZSCORE", semHolders, ""}},
	{conn: "b", args: []string{"EVAL", conn.HolderReleaseScript, "1", semHolders, "a"}},
	tread("bc"), tc("bc", "CLIENT TRACKING OFF"),
}

// TestSimulatorRepliesLikeTheServers_SortedSetTracking compares the
// sorted-set tracking script byte for byte (ids aside) with the real redis
// 7.0 named by RESPIRE_REAL_REDIS70 (and _PASSWORD).
func TestSimulatorRepliesLikeTheServers_SortedSetTracking(t *testing.T) {
	addr := os.Getenv("RESPIRE_REAL_REDIS70")
	if addr == "" {
		t.Skip("RESPIRE_REAL_REDIS70 not set: no real redis-server 7.0 to compare with")
	}
	realserver.Lock(t, addr)
	password := os.Getenv("RESPIRE_REAL_REDIS70_PASSWORD")
	real := playTrackingSteps(t, addr, password, trackingSortedSetScript)
	sim := playTrackingSteps(t, startSim(t, Config{Profile: Redis70, Password: password}).Addr(), password, trackingSortedSetScript)
	for i, st := range trackingSortedSetScript {
		if sim[i] != real[i] {
			t.Errorf("step %d %s: %q:\n sim  %q\n real %q", i, st.conn, st.args, sim[i], real[i])
		}
	}
}

// TestSortedSetWritesInvalidateTrackedKeys checks, on every profile without
// a real server, what the recorded script above shows: a change to a
// tracked sorted set invalidates it once, a write that changed nothing does
// not, and a lock script's writes do.
func TestSortedSetWritesInvalidateTrackedKeys(t *testing.T) {
	forEachProfile(t, Config{}, func(t *testing.T, sc *scenario) {
		sc.conn("a", 3)
		sc.conn("b", 2)
		sc.step("a: CLIENT TRACKING ON", ok)
		sc.step("a: ZSCORE z m", "_\r\n")
		sc.step("b: ZADD z 1 m", ":1\r\n")
		sc.step("a: sync", inv("z"))
		sc.step("a: ZSCORE z m", ",1\r\n")
		sc.step("b: ZADD z NX 2 m", ":0\r\n")
		sc.step("b: ZREM z nope", ":0\r\n")
		sc.step("b: ZREMRANGEBYSCORE z 5 6", ":0\r\n")
		sc.step("a: sync", "")
		sc.step("b: ZREMRANGEBYSCORE z -inf +inf", ":1\r\n")
		sc.step("a: sync", inv("z"))
		sc.step("a: ZCARD "+semHolders, ":0\r\n")
		b := sc.conns["b"]
		if got := b.do("EVAL", conn.SemaphoreAcquireScript, "1", semHolders, "a", "60000", "2"); got != ":1\r\n" {
			t.Fatalf("acquire = %q", got)
		}
		sc.step("a: sync", inv(semHolders))
		sc.step("a: ZCOUNT "+semHolders+" 0 +inf", ":1\r\n")
		if got := b.do("EVAL", conn.HolderReleaseScript, "1", semHolders, "a"); got != ":1\r\n" {
			t.Fatalf("release = %q", got)
		}
		sc.step("a: sync", inv(semHolders))
	})
}

// TestSortedSetKeysExpire: a sorted set with a TTL expires like any key,
// strictly after its TTL: lazily (a command finds it gone, and its tracker
// is told) and actively (the expiry loop tells the tracker unprompted).
func TestSortedSetKeysExpire(t *testing.T) {
	clock := NewManualClock(testEpoch)
	forEachProfile(t, Config{Clock: clock, ExpireEvery: -1}, func(t *testing.T, sc *scenario) {
		sc.conn("a", 3)
		sc.conn("b", 2)
		sc.step("a: CLIENT TRACKING ON", ok)
		sc.step("b: ZADD zl 1 m", ":1\r\n")
		sc.step("b: PEXPIRE zl 300", ":1\r\n")
		sc.step("a: ZCARD zl", ":1\r\n")
		clock.Advance(300 * time.Millisecond)
		sc.step("b: ZSCORE zl m", "$1\r\n1\r\n")
		clock.Advance(time.Millisecond)
		sc.step("b: ZCOUNT zl -inf +inf", ":0\r\n")
		sc.step("a: sync", inv("zl"))
		sc.step("b: EXISTS zl", ":0\r\n")
	})
	forEachProfile(t, Config{Clock: clock}, func(t *testing.T, sc *scenario) {
		a := sc.conn("a", 3)
		sc.conn("b", 2)
		sc.step("a: CLIENT TRACKING ON", ok)
		sc.step("b: ZADD za 1 m", ":1\r\n")
		sc.step("b: PEXPIRE za 700", ":1\r\n")
		sc.step("a: ZSCORE za m", ",1\r\n")
		clock.Advance(701 * time.Millisecond)
		if got := a.read(); got != inv("za") {
			t.Fatalf("active expiry sent %q", got)
		}
		if got := sc.s.Exec("DBSIZE"); got != ":0\r\n" {
			t.Fatalf("DBSIZE after active expiry = %q", got)
		}
	})
}
