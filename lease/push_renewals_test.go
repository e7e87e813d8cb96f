package lease

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/respire-go/respire/sim"
)

// followersParkedAgain waits until every follower's hub handed out more
// batons than before (the change reached it) and its waiter is parked on
// the tracked key again.
func followersParkedAgain(t *testing.T, followers []*Locks, key string, before []int) {
	t.Helper()
	for i, f := range followers {
		eventually(t, "the follower woken and parked again", func() bool {
			return pushStatsOf(f).Batons > before[i] && parkedWaiters(f, key) == 1
		})
	}
}

// batonsOf returns how many batons each follower's hub handed out so far.
func batonsOf(followers []*Locks) []int {
	out := make([]int, len(followers))
	for i, f := range followers {
		out[i] = pushStatsOf(f).Batons
	}
	return out
}

// startFollowers starts one waiting acquisition of key per Locks (each its
// own process, as far as the server can tell), with opts, and waits until
// each is parked on the tracked key. stop cancels them and waits for their
// ends.
func startFollowers(t *testing.T, ctx context.Context, followers []*Locks, key string, opts ...AcquireOption) (stop func()) {
	t.Helper()
	waitCtx, cancel := context.WithCancel(ctx)
	errs := make(chan error, len(followers))
	for _, f := range followers {
		go func() {
			lock, err := f.Acquire(waitCtx, key, time.Second, append(opts, WithWaitUntilDone())...)
			if lock != nil {
				_ = lock.Close()
				err = errors.New("a follower acquired the held key")
			}
			errs <- err
		}()
	}
	for _, f := range followers {
		eventually(t, "the follower parked", func() bool { return parkedWaiters(f, key) == 1 })
	}
	return func() {
		cancel()
		for range followers {
			if err := <-errs; !errors.Is(err, context.Canceled) {
				t.Errorf("a follower's Acquire = %v; want context.Canceled", err)
			}
		}
	}
}

// TestPushIgnoresOthersRenewals_AWaiterReArmsWithoutTrying: two followers,
// each in its own Locks, wait for a key another Locks holds; each renewal of
// the holder invalidates the key for both, and each re-reads it (one
// tracked read, which arms it again) and, finding it held, parks without a
// SET NX; so does a third party's overwrite (a new owner). Their retry
// interval is a minute, so no safety-net try runs.
func TestPushIgnoresOthersRenewals_AWaiterReArmsWithoutTrying(t *testing.T) {
	forEachServer(t, func(t *testing.T, tg *target) {
		ctx := ctxT(t)
		const key, renewals = "push:renewed", 4
		holder, err := tg.locks(t).Acquire(ctx, key, 30*time.Second)
		if err != nil {
			t.Fatal(err)
		}
		defer holder.Close()
		followers := []*Locks{tg.locks(t), tg.locks(t)}
		stop := startFollowers(t, ctx, followers, key, WithRetryEvery(time.Minute))
		defer stop()
		tg.srv.ResetLog()
		readsBefore := []int{pushStatsOf(followers[0]).Reads, pushStatsOf(followers[1]).Reads}
		for range renewals {
			before := batonsOf(followers)
			if ok, err := holder.ResetExpiry(ctx, 30*time.Second); !ok || err != nil {
				t.Fatalf("ResetExpiry = %v, %v", ok, err)
			}
			followersParkedAgain(t, followers, key, before)
		}
		before := batonsOf(followers) // a new owner: a change the SET NX would lose to as well
		tg.srv.Exec("SET", key, "another-owner", "PX", "30000")
		followersParkedAgain(t, followers, key, before)
		tries := countSetNX(tg.srv.Log(), key)
		for i, f := range followers {
			reads := pushStatsOf(f).Reads - readsBefore[i]
			t.Logf("follower %d: %d tracked reads for %d renewals and an overwrite", i, reads, renewals)
			if reads > renewals+1 {
				t.Errorf("follower %d: %d tracked reads for %d renewals and an overwrite; want at most one each", i, reads, renewals)
			}
		}
		if tries != 0 {
			t.Errorf("%d SET NX by the followers during %d renewals by another owner and an overwrite; want 0 (%.1f per follower per renewal)",
				tries, renewals, float64(tries)/float64(len(followers)*renewals))
		}
	})
}

// TestPushIgnoresOthersRenewals_FourSecondLeaseFigures measures what two
// followers (each in its own Locks) send while a holder in a third Locks
// keeps a 4 s lease alive through four renewals (about 8 s): SET NX and
// tracked reads per follower per renewal, with the default retry interval
// (the safety net's tries, about one a second per follower, are counted
// too) and with a retry interval of a minute (renewals alone). Real
// servers only (it takes real time); run it with scripts/with-servers.sh.
func TestPushIgnoresOthersRenewals_FourSecondLeaseFigures(t *testing.T) {
	if testing.Short() {
		t.Skip("takes about 16 s of real time")
	}
	addr, password := realRedis70(t)
	lockRealServer(t, addr)
	for _, tc := range []struct {
		name string
		opts []AcquireOption
	}{{"default retry interval", nil}, {"retry interval a minute", []AcquireOption{WithRetryEvery(time.Minute)}}} {
		t.Run(tc.name, func(t *testing.T) {
			tg := &target{srv: startRealServer(t, addr, password), password: password, real: true}
			measureFollowers(t, tg, tc.opts)
		})
	}
}

// measureFollowers is one run of TestPushIgnoresOthersRenewals_FourSecondLeaseFigures.
func measureFollowers(t *testing.T, tg *target, opts []AcquireOption) {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	const key, renewals = "push:figures", 4
	holder, err := tg.locks(t).Acquire(ctx, key, 4*time.Second, WithKeepAlive())
	if err != nil {
		t.Fatal(err)
	}
	defer holder.Close()
	// One renewal first, so that each renewal counted below is one command
	// (the first learns the fallback: SET IFEQ, EVALSHA, EVAL on 7.0).
	if ok, err := holder.ResetExpiry(ctx, 4*time.Second); !ok || err != nil {
		t.Fatalf("ResetExpiry = %v, %v", ok, err)
	}
	followers := []*Locks{tg.locks(t), tg.locks(t)}
	stop := startFollowers(t, ctx, followers, key, opts...)
	defer stop()
	tg.srv.ResetLog()
	start := time.Now()
	readsBefore := []int{pushStatsOf(followers[0]).Reads, pushStatsOf(followers[1]).Reads}
	deadline := time.Now().Add(20 * time.Second)
	for countMatching(tg.srv.Log(), isExtend(key)) < renewals {
		if time.Now().After(deadline) {
			var cmds []string
			for _, e := range tg.srv.Log() {
				cmds = append(cmds, strings.Join(e.Args[:min(len(e.Args), 4)], " "))
			}
			t.Fatalf("four renewals did not come within 20 s (%d came; the holder's context: %v); sent:\n%s",
				countMatching(tg.srv.Log(), isExtend(key)), context.Cause(holder.Context()), strings.Join(cmds, "\n"))
		}
		time.Sleep(10 * time.Millisecond)
	}
	for i := range followers { // the last renewal's wake settled
		eventually(t, "the follower parked again", func() bool { return parkedWaiters(followers[i], key) == 1 })
	}
	elapsed := time.Since(start)
	tries := countSetNX(tg.srv.Log(), key)
	reads := 0
	for i, f := range followers {
		reads += pushStatsOf(f).Reads - readsBefore[i]
	}
	per := float64(len(followers) * renewals)
	t.Logf("two followers, 4 s lease, %d renewals in %v: SET NX %d (%.2f per follower per renewal), tracked reads %d (%.2f per follower per renewal)",
		renewals, elapsed.Round(time.Millisecond), tries, float64(tries)/per, reads, float64(reads)/per)
	if holder.Context().Err() != nil {
		t.Fatalf("the holder lost its lock: %v", context.Cause(holder.Context()))
	}
}

// TestPushIgnoresOthersRenewals_ASilentWatcherDelaysTheTryALittle: a waiter
// woken by a release reads the key before it tries; when the watcher does
// not answer that read, the waiter tries after at most a quarter second
// (the read's bound) and takes the key, rather than waiting for the watcher.
func TestPushIgnoresOthersRenewals_ASilentWatcherDelaysTheTryALittle(t *testing.T) {
	srv := startSim(t, sim.Config{Profile: sim.Valkey90})
	locks := newLocks(t, newClient(t, []string{srv.Addr()}, "", simPassword, true))
	ctx := ctxT(t)
	const key = "push:silent"
	srv.Exec("SET", key, "someone-else", "PX", "60000")
	got := make(chan acquired, 1)
	go func() {
		lock, err := locks.Acquire(ctx, key, 30*time.Second, WithWaitUntilDone(), WithRetryEvery(time.Minute))
		got <- acquired{lock: lock, err: err, at: time.Now()}
	}()
	eventually(t, "the waiter parked", func() bool { return parkedWaiters(locks, key) == 1 })
	open := gateWatcherReads(t, srv)
	defer open()
	deleted := time.Now()
	srv.Exec("DEL", key)
	r := <-got
	if r.err != nil {
		t.Fatalf("Acquire = %v; want the key once the silent read's bound passed", r.err)
	}
	defer r.lock.Close()
	t.Logf("acquired %v after the DEL, its read unanswered", r.at.Sub(deleted))
	if took := r.at.Sub(deleted); took > 5*time.Second {
		t.Errorf("acquired %v after the DEL; want about a quarter second", took)
	}
}
