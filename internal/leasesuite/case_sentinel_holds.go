package leasesuite

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/respire-go/respire/actor"
	"github.com/respire-go/respire/conn"
	"github.com/respire-go/respire/coordination"
	"github.com/respire-go/respire/lease"
)

// holdsKeepAliveLease is the lease of the keep-alive holds case: a
// keep-alive renews at half of it, a minute after the acquisition, far
// past the seconds the case lasts, so that any renewal seen in the case is
// the one the switch sent.
const holdsKeepAliveLease = 2 * time.Minute

// heldPair is one primitive's two holds on a Sentinel client: kept, whose
// record the new primary has, and gone, whose record the replica loses
// before it is promoted.
type heldPair struct {
	primitive  string
	kept, gone *lease.Lock
}

// TestSwitchReassertsLocksWithoutKeepAlive_EveryHoldWhoseRecordTheNewPrimaryLacksEndsAtOnce:
// on a Sentinel client, two holds without keep-alive (30 s lease) of each
// primitive: semaphore permits (of one semaphore, and of one fair
// semaphore), read holds (of one read/write lock, and of one fair), write
// holds (of two, and of two fair), fair locks (WithFairWait) and
// fencing-token locks (package coordination). The replica loses one
// hold's record of each (a permit's or reader's member: ZREM; a writer's
// or fenced lock's key: DEL, made writable for that), then SENTINEL
// FAILOVER promotes it. When the client names the new primary, each hold
// is re-asserted there by its primitive's owner-compared renewal to the
// time it has left, which never re-creates a record: every hold whose
// record is missing ends at once with ErrOwnershipLost (within 10 s, not
// at its lease end), and every other is kept, its record still its own on
// the new primary, its estimate never later than the one it had before
// the failover nor than its record's expiry there.
func caseSwitchReassertsLocksWithoutKeepAlive_EveryHoldWhoseRecordTheNewPrimaryLacksEndsAtOnce(t *testing.T, tr Transport) {
	pairs, check := switchHolds(t, tr, reassertLease)
	before := map[*lease.Lock]time.Time{}
	for _, p := range pairs {
		before[p.kept] = p.kept.ExpiresAtEstimate()
	}
	check(func(newPrimary, password string) {
		for _, p := range pairs {
			if est := p.kept.ExpiresAtEstimate(); est.After(before[p.kept]) {
				t.Errorf("a kept %s's estimate grew from %s to %s without a keep-alive", p.primitive,
					before[p.kept].Format("15:04:05.000"), est.Format("15:04:05.000"))
			}
		}
	})
}

// TestPrimarySwitchRenewsAtOnce_EveryHoldWithKeepAliveRenewsOnTheNewPrimary:
// the same holds as the re-assert case, each with keep-alive (a 2 minute
// lease: no renewal falls due while the case runs), on two Locks of the
// transport: one with push, whose reads of held keys after the switch
// find a missing record too, and one WithoutPush, where only the switch's
// renewal can find it (with push alone, the case passed when the switch
// renewed only mutex keys). When the client names
// the new primary, every hold is renewed there at once by its primitive's
// owner-compared renewal: a hold whose record the new primary lacks ends
// at once with ErrOwnershipLost, every other is kept, its estimate counted
// from that renewal (later than before the failover) and never later than
// its record's expiry on the new primary.
func casePrimarySwitchRenewsAtOnce_EveryHoldWithKeepAliveRenewsOnTheNewPrimary(t *testing.T, tr Transport) {
	pairs, check := switchHolds(t, tr, holdsKeepAliveLease, lease.WithKeepAlive())
	before := map[*lease.Lock]time.Time{}
	for _, p := range pairs {
		before[p.kept] = p.kept.ExpiresAtEstimate()
	}
	check(func(newPrimary, password string) {
		for _, p := range pairs {
			eventually(t, "a kept "+p.primitive+" renewed on the new primary", func() bool {
				return p.kept.Context().Err() != nil || p.kept.ExpiresAtEstimate().After(before[p.kept])
			})
		}
	})
}

// switchHolds acquires the pairs of holds on a Sentinel client (ttl,
// opts; with keep-alive also on a Locks WithoutPush), waits until the
// replica has every record, drops each gone hold's
// record on the replica and returns the pairs and the check to run: it
// fails over, waits for the client to name the replica, for every gone
// hold to end with ErrOwnershipLost, runs also (told the new primary) and
// checks every kept hold is live with its record on the new primary, its
// estimate never later than that record's expiry.
func switchHolds(t *testing.T, tr Transport, ttl time.Duration, opts ...lease.AcquireOption) ([]heldPair, func(also func(newPrimary, password string))) {
	sentinels, master, password := realSentinel(t)
	if prev := primaryOf(t, newSentinelClient(t, sentinels, master, password)); prev != "" {
		awaitReplicaHealthy(t, sentinels, master, password, prev, otherDataNode(t, prev))
	}
	prefix := fmt.Sprintf("holds:%d:", time.Now().UnixNano())
	locks := tr.Sentinel(t, sentinels, master, password).WithKeyPrefix(prefix)
	old := primaryOf(t, newSentinelClient(t, sentinels, master, password))
	replica := otherDataNode(t, old)
	pairs := acquireHeldPairs(t, locks, "", ttl, opts)
	readers := []*lease.Lock{pairs[0].kept} // one lock of each Locks, read until its client names the new primary
	if len(opts) > 0 {                      // with keep-alive: push's reads of held keys find a missing record too; without push, only the switch's renewal does
		quiet := tr.Sentinel(t, sentinels, master, password, lease.WithoutPush()).WithKeyPrefix(prefix + "nopush:")
		more := acquireHeldPairs(t, quiet, " (without push)", ttl, opts)
		pairs, readers = append(pairs, more...), append(readers, more[0].kept)
	}
	t.Cleanup(func() {
		for _, p := range pairs {
			_ = p.kept.Close()
			_ = p.gone.Close()
		}
	})
	for _, p := range pairs {
		waitRecords(t, replica, password, p.kept, p.gone)
	}
	adminExec(replica, password, "CONFIG", "SET", "replica-read-only", "no")
	for _, p := range pairs {
		if dropped := dropRecord(replica, password, p.gone); dropped != ":1\r\n" {
			t.Errorf("dropping a %s's record on the replica %s = %q", p.primitive, replica, dropped)
		}
	}
	adminExec(replica, password, "CONFIG", "SET", "replica-read-only", "yes")
	if t.Failed() {
		t.FailNow()
	}
	return pairs, func(also func(newPrimary, password string)) {
		failOverTo(t, tr, sentinels, master, password, old, replica, readers)
		learned := time.Now()
		for _, p := range pairs {
			eventually(t, "the "+p.primitive+" whose record the new primary lacks ended", func() bool { return p.gone.Context().Err() != nil })
			if cause := context.Cause(p.gone.Context()); !errors.Is(cause, lease.ErrOwnershipLost) {
				t.Errorf("the %s whose record the new primary lacks ended with %v; want ErrOwnershipLost", p.primitive, cause)
			}
		}
		t.Logf("%s: every hold whose record the new primary lacks ended %v after the client named it", tr.Name,
			time.Since(learned).Round(time.Millisecond))
		time.Sleep(time.Second) // the re-assertions and renewals of the kept holds have answered
		also(replica, password)
		for _, p := range pairs {
			checkKeptHold(t, p, replica, password)
		}
	}
}

// acquireHeldPairs acquires a kept and a gone hold of each primitive (its
// name followed by suffix).
func acquireHeldPairs(t *testing.T, locks *lease.Locks, suffix string, ttl time.Duration, opts []lease.AcquireOption) []heldPair {
	t.Helper()
	coord, err := coordination.New(locks)
	if err != nil {
		t.Fatalf("coordination.New on a Sentinel client = %v", err)
	}
	// A wait: after a failover the resyncing replica acknowledges nothing
	// for seconds (rule SentinelAcquisitionsNeedReplicaAcks).
	opts = append(append([]lease.AcquireOption(nil), opts...), lease.WithWait(sentinelAcquireWait))
	sem, fair, rw, fairRW := locks.Semaphore("sem", 3), locks.Semaphore("fair", 3), locks.RWLock("rw"), locks.RWLock("fair-rw")
	fairOpts := append(append([]lease.AcquireOption(nil), opts...), lease.WithFairWait())
	acquire := map[string]func(i int) (*lease.Lock, error){
		"permit":         func(int) (*lease.Lock, error) { return sem.Acquire(ctxT(t), ttl, opts...) },
		"fair permit":    func(int) (*lease.Lock, error) { return fair.Acquire(ctxT(t), ttl, fairOpts...) },
		"read hold":      func(int) (*lease.Lock, error) { return rw.RLock(ctxT(t), ttl, opts...) },
		"fair read hold": func(int) (*lease.Lock, error) { return fairRW.RLock(ctxT(t), ttl, fairOpts...) },
		"write hold": func(i int) (*lease.Lock, error) {
			return locks.RWLock(fmt.Sprintf("w%d", i)).Lock(ctxT(t), ttl, opts...)
		},
		"fair write hold": func(i int) (*lease.Lock, error) {
			return locks.RWLock(fmt.Sprintf("fair-w%d", i)).Lock(ctxT(t), ttl, fairOpts...)
		},
		"fair lock": func(i int) (*lease.Lock, error) {
			return locks.Acquire(ctxT(t), fmt.Sprintf("fair-m%d", i), ttl, fairOpts...)
		},
		"fenced lock": func(i int) (*lease.Lock, error) {
			l, err := coord.Acquire(ctxT(t), fmt.Sprintf("{f%d}:lease", i), fmt.Sprintf("{f%d}:fence", i), ttl, opts...)
			if err != nil {
				return nil, err
			}
			return l.Lock, nil
		},
	}
	var pairs []heldPair
	for _, primitive := range []string{"permit", "fair permit", "read hold", "fair read hold", "write hold",
		"fair write hold", "fair lock", "fenced lock"} {
		p := heldPair{primitive: primitive + suffix}
		if p.kept, err = acquire[primitive](0); err == nil {
			p.gone, err = acquire[primitive](1)
		}
		if err != nil {
			t.Fatalf("acquiring a %s on a Sentinel client = %v", primitive, err)
		}
		pairs = append(pairs, p)
	}
	return pairs
}

// failOverTo runs SENTINEL FAILOVER and waits until the client of every
// reader's Locks names replica, reading each reader every 100 ms meanwhile
// (go-redis' adapter learns of a switch from a round trip: an idle
// go-redis Locks learns of it at its next command).
func failOverTo(t *testing.T, tr Transport, sentinels []string, master, password, old, replica string, readers []*lease.Lock) {
	t.Helper()
	t.Cleanup(func() { awaitReconfigured(old, password) }) // a failed run leaves no failover in progress to the next
	if got := adminExec(sentinels[0], password, "SENTINEL", "FAILOVER", master); got != "+OK\r\n" {
		t.Fatalf("SENTINEL FAILOVER = %q", got)
	}
	lastRead := time.Time{}
	awaitSwitch(t, "the "+tr.Name+" clients named the new primary", sentinels, master, password, old, func() bool {
		read := time.Since(lastRead) >= 100*time.Millisecond
		if read {
			lastRead = time.Now()
		}
		named := true
		for _, r := range readers {
			if read {
				ctx, cancel := context.WithTimeout(context.Background(), time.Second)
				_, _ = r.VerifyStillHeld(ctx)
				cancel()
			}
			engine, _ := coreOf(r).Driver().Transport().(*conn.Engine)
			named = named && engine.IsPrimary(replica)
		}
		return named
	})
}

// checkKeptHold fails t unless p's kept hold is live, its record on
// primary is its own, and its estimate is not later than that record's
// expiry there.
func checkKeptHold(t *testing.T, p heldPair, primary, password string) {
	t.Helper()
	if err := p.kept.Context().Err(); err != nil {
		t.Errorf("the %s whose record the new primary has was lost: %v", p.primitive, context.Cause(p.kept.Context()))
		return
	}
	estimate := p.kept.ExpiresAtEstimate()
	left, ok := recordLeft(primary, password, p.kept)
	answered := time.Now()
	if !ok {
		t.Errorf("the kept %s's record on the new primary %s is not its own", p.primitive, primary)
		return
	}
	if expiry := answered.Add(left); estimate.After(expiry) {
		t.Errorf("the kept %s's estimate %s is past its record's expiry on the new primary (%v left at %s)", p.primitive,
			estimate.Format("15:04:05.000"), left, answered.Format("15:04:05.000"))
	}
}

// memberLeftScript returns the lease left, by server time, of the member
// ARGV[1] of the sorted set KEYS[1] (a permit's or reader's record), -2
// when there is none.
const memberLeftScript = "local s = redis.call('zscore', KEYS[1], ARGV[1])\n" +
	"if not s then return -2 end\n" +
	"local t = redis.call('time')\n" +
	"return tonumber(s) - (tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000))"

// keyLeftScript returns the PTTL of KEYS[1] when its value holds ARGV[1]
// (a writer's or fenced lock's record), -2 otherwise.
const keyLeftScript = "local v = redis.call('get', KEYS[1])\n" +
	"if not v or not string.find(v, ARGV[1], 1, true) then return -2 end\n" +
	"return redis.call('pttl', KEYS[1])"

// recordLeft returns the lease left of lock's record on addr, and false
// when addr holds no record of lock's owner.
func recordLeft(addr, password string, lock *lease.Lock) (time.Duration, bool) {
	script := keyLeftScript
	if isMember(lock) {
		script = memberLeftScript
	}
	reply := adminExec(addr, password, "EVAL", script, "1", coreOf(lock).WireKey(), wireOf(lock.Token()))
	ms, err := strconv.Atoi(strings.TrimSpace(strings.TrimPrefix(reply, ":")))
	if err != nil || ms < 0 {
		return 0, false
	}
	return time.Duration(ms) * time.Millisecond, true
}

// isMember reports whether lock's record is a member of a sorted set (a
// permit, a read hold) rather than a key of its own.
func isMember(lock *lease.Lock) bool {
	k := coreOf(lock).Kind()
	return k == actor.KindPermit || k == actor.KindRead
}

// dropRecord deletes lock's record on addr (which must be writable): ZREM
// of its member, or DEL of its key. It returns the reply.
func dropRecord(addr, password string, lock *lease.Lock) string {
	if isMember(lock) {
		return adminExec(addr, password, "ZREM", coreOf(lock).WireKey(), wireOf(lock.Token()))
	}
	return adminExec(addr, password, "DEL", coreOf(lock).WireKey())
}

// waitRecords waits (20 s at most) until replica has the record of every
// lock (see waitReplicated).
func waitRecords(t *testing.T, replica, password string, held ...*lease.Lock) {
	t.Helper()
	deadline := time.Now().Add(20 * time.Second)
	for _, lock := range held {
		for {
			if _, ok := recordLeft(replica, password, lock); ok {
				break
			}
			if time.Now().After(deadline) {
				t.Fatalf("the replica %s lacks a record after 20 s", replica)
			}
			time.Sleep(50 * time.Millisecond)
		}
	}
}

func init() {
	register(Case{"SwitchReassertsLocksWithoutKeepAlive_EveryHoldWhoseRecordTheNewPrimaryLacksEndsAtOnce",
		caseSwitchReassertsLocksWithoutKeepAlive_EveryHoldWhoseRecordTheNewPrimaryLacksEndsAtOnce})
	register(Case{"PrimarySwitchRenewsAtOnce_EveryHoldWithKeepAliveRenewsOnTheNewPrimary",
		casePrimarySwitchRenewsAtOnce_EveryHoldWithKeepAliveRenewsOnTheNewPrimary})
}
