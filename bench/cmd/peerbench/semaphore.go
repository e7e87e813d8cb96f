package main

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"runtime"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/redis/rueidis"

	"github.com/respire-go/respire/conn"
	"github.com/respire-go/respire/lease"
)

// This file is the semaphore's scenarios: respire-go's lease.Semaphore
// next to the same scripts sent by hand on raw rueidis (the scripts
// respire-go sends: conn.SemaphoreAcquireScript and
// conn.HolderReleaseScript, by EVALSHA), the only two implementations that
// have a lease semaphore.

// semLimit is the limit of the semaphores of the scenarios.
const semLimit = 8

// semaphoreScenarios are the semaphore's tables.
func semaphoreScenarios(cfg config) []*scenario {
	hasSem := func(im implInfo) bool { return im.sem && !im.variant }
	canWait := func(im implInfo) bool { return im.semWait }
	canHold := func(im implInfo) bool { return im.semHold && !im.variant }
	return []*scenario{{
		id: "semaphore-uncontended", family: "semaphore", only: hasSem, skip: "no lease semaphore",
		title: fmt.Sprintf("semaphore, uncontended: 1 goroutine, acquire+release pairs on one semaphore (limit %d)", semLimit),
		about: fmt.Sprintf("%d permit pairs (try once, release) per repetition; latency of each pair; allocations per pair "+
			"(the whole process); scripts/pair: the server's EVALSHA and EVAL calls (INFO commandstats) over the loop "+
			"per pair, i.e. the round trips of a pair (the commands the scripts run inside are not counted).", cfg.pairs),
		metrics: []metric{{key: "p50", header: "p50 µs", lowerBetter: true, ratio: true},
			{key: "p99", header: "p99 µs", lowerBetter: true, ratio: true},
			{key: "allocs", header: "allocs/pair", lowerBetter: true, ratio: true},
			{key: "scripts", header: "scripts/pair", lowerBetter: true},
			{key: "refused", header: "free permit refused", total: true}, {key: "errors", header: "errors", total: true}},
		run: runSemUncontended,
	}, {
		id: "semaphore-64", family: "semaphore", only: hasSem, skip: "no lease semaphore",
		title: fmt.Sprintf("semaphore, contended: 64 goroutines, one semaphore (limit %d), try once", semLimit),
		about: fmt.Sprintf("each goroutine tries a permit once, again and again, for %v; a holder yields once and "+
			"releases. Over limit: times a holder counted more than %d permits held at once in the process "+
			"(counted after the acquisition returned, uncounted before the release is sent; the run fails on any).",
			cfg.duration, semLimit),
		metrics: []metric{{key: "rate", header: "permits/s", ratio: true}, {key: "attempts", header: "tries/s"},
			{key: "overlaps", header: "over limit", total: true}, {key: "errors", header: "errors", total: true}},
		run: runSem64,
	}, {
		id: "semaphore-handoff-16", family: "semaphore", only: canWait, skip: "cannot wait", firstModeOnly: true,
		title: "semaphore hand-off: 16 goroutines waiting on one semaphore (limit 1)",
		about: fmt.Sprintf("as the hand-off table, with a permit of a semaphore of limit 1 for the key: 16 goroutines wait for "+
			"the permit (respire-go: Semaphore.Acquire with WithWaitUntilDone, woken by the holders' change; respire-go-fair: "+
			"with WithFairWait too, in ticket order; raw-rueidis: "+
			"the acquisition script again every %v, jittered, as respire-go-poll does), hold it %v, release it, until "+
			"%d hand-offs. Latency: from a holder's release reply to the next holder's acquisition reply.",
			rawPollEvery, cfg.waiting.handoffHold, cfg.waiting.handoffs),
		metrics: []metric{{key: "p50", header: "p50 µs", lowerBetter: true, ratio: true},
			{key: "p99", header: "p99 µs", lowerBetter: true, ratio: true},
			{key: "commands", header: "commands/hand-off", lowerBetter: true, ratio: true},
			{key: "rate", header: "hand-offs/s"},
			{key: "overlaps", header: "overlaps", total: true}, {key: "errors", header: "errors", total: true}},
		run: func(e *env, im *impl, rep int) (map[string]float64, error) {
			shim := *im
			shim.wait = func(ctx context.Context, key string) (func() error, error) { return im.semWait(ctx, key, 1) }
			return handoffRun(e, &shim, rep, 16)
		},
	}, {
		id: "semaphore-keepalive", family: "semaphore", only: canHold, skip: "no keep-alive", firstModeOnly: true,
		title: fmt.Sprintf("semaphore keep-alive memory: %s permits of one semaphore held", group(semHeld)),
		about: fmt.Sprintf("as the keep-alive memory table, with %d permits of one semaphore (limit %d) for the %d keys: "+
			"heap + goroutine stacks after GC against before, per permit acquired.", semHeld, semHeld, semHeld),
		metrics: []metric{{key: "kib", header: "KiB/permit acquired", lowerBetter: true},
			{key: "held", header: "still held at the end"},
			{key: "goroutines", header: "goroutines while held", lowerBetter: true},
			{key: "server", header: "server B/permit acquired", lowerBetter: true},
			{key: "lost", header: "lost while held", total: true}, {key: "gaveup", header: "given up", total: true},
			{key: "errors", header: "errors", total: true}},
		run: func(e *env, im *impl, rep int) (map[string]float64, error) {
			shim := *im
			shim.hold = func(key string) (heldLock, error) { return im.semHold(strings.TrimRight(key, "0123456789"), semHeld) }
			return keepAliveRun(semHeld)(e, &shim, rep)
		},
	}}
}

// semHeld is how many permits the semaphore keep-alive table holds.
const semHeld = 10000

// rawPollEvery is the mean interval of raw rueidis's waiting acquisition.
const rawPollEvery = 50 * time.Millisecond

// pollSem waits for a permit by trying sem again every rawPollEvery
// (jittered ±50 %), until ctx is done.
func pollSem(sem func(name string, limit int) (func() error, error)) func(context.Context, string, int) (func() error, error) {
	return func(ctx context.Context, name string, limit int) (func() error, error) {
		for {
			release, err := sem(name, limit)
			if err != nil || release != nil {
				return release, err
			}
			sleep := rawPollEvery/2 + time.Duration(rand.Int64N(int64(rawPollEvery)))
			select {
			case <-ctx.Done():
				return nil, context.Cause(ctx)
			case <-time.After(sleep):
			}
		}
	}
}

// pollTry waits for a key by hand: try, and again every rawPollEvery
// (jittered) until acquired, an error or ctx's end (the raw clients' way
// to wait, next to the libraries' in the hand-off tables).
func pollTry(try func(key string) (func() error, error)) func(context.Context, string) (func() error, error) {
	sem := func(key string, _ int) (func() error, error) { return try(key) }
	poll := pollSem(sem)
	return func(ctx context.Context, key string) (func() error, error) { return poll(ctx, key, 1) }
}

// respireSemWait is respire-go's waiting permit: Semaphore.Acquire with
// WithWaitUntilDone (and opts: respire-go-fair's WithFairWait).
func respireSemWait(locks *lease.Locks, c calls, ttl time.Duration, opts ...lease.AcquireOption) func(context.Context, string, int) (func() error, error) {
	release := respireRelease(c)
	opts = append([]lease.AcquireOption{lease.WithWaitUntilDone()}, opts...)
	return func(ctx context.Context, name string, limit int) (func() error, error) {
		lock, err := locks.Semaphore(name, limit).Acquire(ctx, ttl, opts...)
		if err != nil {
			return nil, err
		}
		return func() error { return release(lock) }, nil
	}
}

// respireSemHold is respire-go's permit with the keep-alive; nil, nil when
// the semaphore is full.
func respireSemHold(locks *lease.Locks, c calls, ttl time.Duration) func(string, int) (heldLock, error) {
	return func(name string, limit int) (heldLock, error) {
		ctx, cancel := c.call()
		defer cancel()
		lock, err := locks.Semaphore(name, limit).Acquire(ctx, ttl, lease.WithKeepAlive())
		if errors.Is(err, lease.ErrNotAcquired) {
			return nil, nil
		}
		if err != nil {
			return nil, err
		}
		lock.Context() // as the mutex's: part of a held lock's cost
		return respireHeld{lock}, nil
	}
}

// respireRelease releases a respire-go permit, an error unless Released.
func respireRelease(c calls) func(lock *lease.Lock) error {
	return func(lock *lease.Lock) error {
		ctx, cancel := c.call()
		defer cancel()
		out, err := lock.Release(ctx)
		if err == nil && out != lease.Released {
			err = fmt.Errorf("%w: %v", errNotOwned, out)
		}
		return err
	}
}

// runSemUncontended times permit pairs from one goroutine.
func runSemUncontended(e *env, im *impl, rep int) (map[string]float64, error) {
	name := fmt.Sprintf("%s%s:sem1:%d", e.prefix, im.name, rep)
	for range 10 { // warm-up: the scripts, the session
		if release, err := im.sem(name, semLimit); err == nil && release != nil {
			_ = release()
		}
	}
	n := e.cfg.pairs
	lat := make([]time.Duration, n)
	var refused, errs float64
	runtime.GC()
	var before, after runtime.MemStats
	stats0 := e.srv.commandStats()
	runtime.ReadMemStats(&before)
	for i := range n {
		start := time.Now()
		release, err := im.sem(name, semLimit)
		if err == nil && release != nil {
			err = release()
		}
		lat[i] = time.Since(start)
		switch {
		case err != nil:
			errs++
			e.errs.note(im.name, "semaphore-uncontended", err)
		case release == nil:
			refused++
		}
	}
	runtime.ReadMemStats(&after)
	stats1 := e.srv.commandStats()
	scripts := stats1["evalsha"] + stats1["eval"] - stats0["evalsha"] - stats0["eval"]
	slices.Sort(lat)
	return map[string]float64{"p50": micros(lat[n/2]), "p99": micros(lat[n*99/100]),
		"allocs": float64(after.Mallocs-before.Mallocs) / float64(n), "scripts": float64(scripts) / float64(n),
		"refused": refused, "errors": errs}, nil
}

// runSem64 has 64 goroutines try one semaphore, each holder counted while
// it holds.
func runSem64(e *env, im *impl, rep int) (map[string]float64, error) {
	const workers = 64
	name := fmt.Sprintf("%s%s:sem64:%d", e.prefix, im.name, rep)
	var permits, attempts, errs, over, holding atomic.Int64
	var wg sync.WaitGroup
	start := time.Now()
	for range workers {
		wg.Go(func() {
			for time.Since(start) < e.cfg.duration {
				release, err := im.sem(name, semLimit)
				attempts.Add(1)
				if err != nil {
					errs.Add(1)
					e.errs.note(im.name, "semaphore-64", err)
					continue
				}
				if release == nil {
					continue
				}
				if holding.Add(1) > semLimit {
					over.Add(1)
				}
				runtime.Gosched() // the critical section
				holding.Add(-1)
				if err := release(); err != nil {
					errs.Add(1)
					e.errs.note(im.name, "semaphore-64", err)
				}
				permits.Add(1)
			}
		})
	}
	wg.Wait()
	elapsed := time.Since(start).Seconds()
	return map[string]float64{"rate": float64(permits.Load()) / elapsed, "attempts": float64(attempts.Load()) / elapsed,
		"overlaps": float64(over.Load()), "errors": float64(errs.Load())}, nil
}

// respireSem is respire-go's permit: Semaphore.TryAcquire, Lock.Release.
func respireSem(locks *lease.Locks, c calls, ttl time.Duration) func(name string, limit int) (func() error, error) {
	release := respireRelease(c)
	return func(name string, limit int) (func() error, error) {
		ctx, cancel := c.call()
		att, err := locks.Semaphore(name, limit).TryAcquire(ctx, ttl)
		cancel()
		if err != nil || !att.Acquired() {
			return nil, err
		}
		lock := att.Lock()
		return func() error { return release(lock) }, nil
	}
}

// rawSem is the same permit by hand on rueidis: EVALSHA of respire-go's
// acquisition script, then of its release script (loaded here).
func rawSem(client rueidis.Client, c calls, ttl time.Duration) (func(name string, limit int) (func() error, error), error) {
	for _, script := range []string{conn.SemaphoreAcquireScript, conn.HolderReleaseScript} {
		if err := client.Do(context.Background(), client.B().ScriptLoad().Script(script).Build()).Error(); err != nil {
			return nil, err
		}
	}
	ms := fmt.Sprint(ttl.Milliseconds())
	return func(name string, limit int) (func() error, error) {
		sem, err := conn.NewSemaphore("", name, limit)
		if err != nil {
			return nil, err
		}
		token, lim := newToken(), fmt.Sprint(limit)
		ctx, cancel := c.call()
		n, err := client.Do(ctx, client.B().Evalsha().Sha1(conn.SemaphoreAcquireScriptSHA).Numkeys(1).
			Key(sem.HoldersKey).Arg(token, ms, lim).Build()).AsInt64()
		cancel()
		if err != nil || n != 1 {
			return nil, err
		}
		return func() error {
			ctx, cancel := c.call()
			defer cancel()
			n, err := client.Do(ctx, client.B().Evalsha().Sha1(conn.HolderReleaseScriptSHA).Numkeys(1).
				Key(sem.HoldersKey).Arg(token).Build()).AsInt64()
			if err == nil && n != 1 {
				err = errNotOwned
			}
			return err
		}, nil
	}, nil
}
