package main

import (
	"context"
	"fmt"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/redis/rueidis"

	"github.com/respire-go/respire/conn"
	"github.com/respire-go/respire/lease"
)

// This file is the guarded-write scenario: respire-go's Lock.Guard — two
// writes the server runs only while the lock holds its key, in one script
// that first compares the key's value — next to the same two writes sent
// by hand on raw rueidis in a plain MULTI/EXEC (atomic, but guarded by
// nothing), the cost the guard adds to writes a job makes under its lock.

// guardCostTarget is how much a guarded write may cost against the plain
// MULTI/EXEC, per write, at 64 goroutines (issue 30).
const guardCostTarget = 1.2

// guardedScenarios is the guarded-write table.
func guardedScenarios(cfg config) []*scenario {
	return []*scenario{{
		id: "guarded-64", family: "guarded", only: func(im implInfo) bool { return im.guarded && !im.variant },
		skip:  "no guarded write",
		title: "guarded writes: 64 goroutines, each holding its own lock, HSET + INCRBY per write",
		about: fmt.Sprintf("each goroutine holds a lock of its own (respire-go: acquired once, with the keep-alive) and writes, "+
			"again and again for %v, an HSET and an INCRBY to two keys of the lock's hash tag: respire-go with "+
			"Lock.Guard (one EVALSHA that compares the lock's key with its token, records the write id, then runs both), "+
			"raw-rueidis with MULTI, HSET, INCRBY, EXEC pipelined in one DoMulti (no lock, no check), and then, "+
			"for another %v, with the very script respire-go sends (conn.GuardWritesScript, EVALSHA by hand, "+
			"a key holding the token: no driver, no session, no settling), and for another %v with that script's "+
			"loop over the writes alone (no token compared, no write id recorded: the floor of any guard done in a "+
			"server script). µs/write is the time one goroutine spends per write; the targets divide respire-go's "+
			"by raw-rueidis' in each repetition (interleaved). CPU µs/write is this process's CPU time and the "+
			"server's (INFO cpu) over the run, per write: the cost in work, which the host's other load disturbs "+
			"less than the time per write.",
			cfg.duration, cfg.duration, cfg.duration),
		metrics: []metric{{key: "rate", header: "writes/s", ratio: true},
			{key: "us", header: "µs/write", lowerBetter: true, ratio: true},
			{key: "script", header: "µs/write, the guard script by hand", lowerBetter: true},
			{key: "unguarded", header: "µs/write, the writes in a script without the guard", lowerBetter: true},
			{key: "cpu", header: "CPU µs/write (client + server)", lowerBetter: true, ratio: true},
			{key: "scriptcpu", header: "CPU µs/write, the guard script by hand", lowerBetter: true},
			{key: "unguardedcpu", header: "CPU µs/write, the writes in a script without the guard", lowerBetter: true},
			{key: "errors", header: "errors", total: true}},
		target: &target{impl: "respire-go", ref: "raw-rueidis", metric: "us", max: guardCostTarget, unit: "× raw-rueidis",
			what: fmt.Sprintf("a guarded write at 64 goroutines costs at most %.1f × the same writes in MULTI/EXEC", guardCostTarget)},
		more: []*target{{impl: "respire-go", ref: "raw-rueidis", metric: "us", refMetric: "script", max: guardCostTarget,
			unit: "× the script by hand", what: fmt.Sprintf("a guarded write at 64 goroutines costs at most %.1f × "+
				"conn.GuardWritesScript sent by hand on raw rueidis (the library's own cost, the server's script aside)", guardCostTarget)},
			{impl: "respire-go", ref: "raw-rueidis", metric: "cpu", max: guardCostTarget, unit: "× raw-rueidis' CPU",
				what: fmt.Sprintf("the first target counted in CPU time (this process's and the server's per write, "+
					"which another load on the host disturbs less than the time per write): at most %.1f × "+
					"MULTI/EXEC's", guardCostTarget)},
			{impl: "respire-go", ref: "raw-rueidis", metric: "cpu", refMetric: "scriptcpu", max: guardCostTarget,
				unit: "× the script by hand's CPU", what: fmt.Sprintf("the second target counted in CPU time: at most "+
					"%.1f × conn.GuardWritesScript's by hand", guardCostTarget)},
			{impl: "raw-rueidis", ref: "raw-rueidis", metric: "unguardedcpu", refMetric: "cpu", max: guardCostTarget,
				unit: "× MULTI/EXEC's CPU", what: fmt.Sprintf("(a check of the first target, not of respire-go) the same "+
					"two writes in a Lua script with no guard at all take at most %.1f × the CPU of MULTI/EXEC; where "+
					"missed, no guard done in a server script can meet the first target on this server", guardCostTarget)},
			{impl: "raw-rueidis", ref: "raw-rueidis", metric: "unguarded", refMetric: "us", max: guardCostTarget,
				unit: "× MULTI/EXEC", what: fmt.Sprintf("(a check of the first target, not of respire-go) the same two writes "+
					"in a Lua script with no guard at all cost at most %.1f × MULTI/EXEC; where missed, no guard done in a "+
					"server script can meet the first target on this server", guardCostTarget)}},
		run: runGuarded,
	}}
}

// runGuarded runs 64 writers for the configured duration (and, for
// raw-rueidis, the guard script by hand, then its writes without the
// guard, each for as long again).
func runGuarded(e *env, im *impl, rep int) (map[string]float64, error) {
	out, err := guardedFor(e, im, im.guarded, "g64:"+strconv.Itoa(rep))
	if err != nil || im.guardedScript == nil {
		return out, err
	}
	script, err := guardedFor(e, im, im.guardedScript, "s64:"+strconv.Itoa(rep))
	if err != nil {
		return nil, err
	}
	unguarded, err := guardedFor(e, im, im.guardedUnguarded, "u64:"+strconv.Itoa(rep))
	if err != nil {
		return nil, err
	}
	out["script"], out["unguarded"] = script["us"], unguarded["us"]
	out["scriptcpu"], out["unguardedcpu"] = script["cpu"], unguarded["cpu"]
	out["errors"] += script["errors"] + unguarded["errors"]
	return out, nil
}

// guardedFor runs 64 writers of prepare for the configured duration.
func guardedFor(e *env, im *impl, prepare func(string) (func(int) error, func() error, error),
	name string) (map[string]float64, error) {
	const workers = 64
	var writes, errs atomic.Int64
	var wg sync.WaitGroup
	writers := make([]func(int) error, workers)
	closers := make([]func() error, workers)
	for w := range workers {
		tag := e.prefix + im.name + ":" + name + ":" + strconv.Itoa(w)
		write, done, err := prepare("{" + tag + "}")
		if err != nil {
			return nil, err
		}
		writers[w], closers[w] = write, done
	}
	cpu0, server0, start := cpuTime(), e.srv.serverCPU(), time.Now()
	deadline := start.Add(e.cfg.duration)
	for w := range workers {
		wg.Go(func() {
			for i := 0; time.Now().Before(deadline); i++ {
				if err := writers[w](i); err != nil {
					errs.Add(1)
					e.errs.note(im.name, "guarded-64", err)
					continue
				}
				writes.Add(1)
			}
		})
	}
	wg.Wait()
	elapsed, cpu := time.Since(start), cpuTime()-cpu0+e.srv.serverCPU()-server0
	for _, done := range closers {
		if err := done(); err != nil {
			e.errs.note(im.name, "guarded-64", err)
		}
	}
	n := max(writes.Load(), 1)
	return map[string]float64{"rate": float64(writes.Load()) / elapsed.Seconds(),
		"us": micros(elapsed) * workers / float64(n), "cpu": micros(cpu) / float64(n), "errors": float64(errs.Load())}, nil
}

// rawGuarded is raw rueidis' side: the two writes in MULTI/EXEC.
func rawGuarded(client rueidis.Client, c calls) func(tag string) (func(int) error, func() error, error) {
	return func(tag string) (func(int) error, func() error, error) {
		h, n := tag+":state", tag+":count"
		write := func(i int) error {
			ctx, cancel := c.call()
			defer cancel()
			b := client.B()
			res := client.DoMulti(ctx, b.Multi().Build(), b.Hset().Key(h).FieldValue().FieldValue("step", strconv.Itoa(i)).Build(),
				b.Incrby().Key(n).Increment(1).Build(), b.Exec().Build())
			for _, r := range res {
				if err := r.Error(); err != nil {
					return err
				}
			}
			return nil
		}
		return write, func() error { return nil }, nil
	}
}

// rawGuardScript is raw rueidis sending conn.GuardWritesScript by hand
// (EVALSHA, the script loaded first) for a key that holds the token, as
// the library sends it: the server's share of a guarded write.
func rawGuardScript(client rueidis.Client, c calls) func(tag string) (func(int) error, func() error, error) {
	return func(tag string) (func(int) error, func() error, error) {
		ctx := context.Background()
		sha, err := client.Do(ctx, client.B().ScriptLoad().Script(conn.GuardWritesScript).Build()).ToString()
		if err != nil {
			return nil, nil, err
		}
		lock, h, n, token := tag+":lock", tag+":state", tag+":count", newToken()
		record := conn.GuardRecordKey(lock)
		if err := client.Do(ctx, client.B().Set().Key(lock).Value(token).Px(time.Hour).Build()).Error(); err != nil {
			return nil, nil, err
		}
		write := func(i int) error {
			ctx, cancel := c.call()
			defer cancel()
			return client.Do(ctx, client.B().Evalsha().Sha1(sha).Numkeys(5).Key(lock, record, record, h, n).
				Arg(token, newToken(), "", "10000", "2", "4", "HSET", h, "step", strconv.Itoa(i), "3", "INCRBY", n, "1").Build()).Error()
		}
		return write, func() error { return client.Do(ctx, client.B().Del().Key(lock).Build()).Error() }, nil
	}
}

// unguardedScript is GuardWritesScript's loop over the writes without the
// guard before it: ARGV[1] is their number, then each is its argument
// count followed by its arguments.
const unguardedScript = "local i = 2\n" +
	"for _ = 1, tonumber(ARGV[1]) do\n" +
	"  local n = tonumber(ARGV[i])\n" +
	"  redis.call(unpack(ARGV, i + 1, i + n))\n" +
	"  i = i + n + 1\n" +
	"end\n" +
	"return 1"

// rawUnguardedScript is raw rueidis sending unguardedScript (EVALSHA, the
// script loaded first) with the same two writes: what the server spends
// running them from Lua rather than in MULTI/EXEC, with no guard.
func rawUnguardedScript(client rueidis.Client, c calls) func(tag string) (func(int) error, func() error, error) {
	return func(tag string) (func(int) error, func() error, error) {
		sha, err := client.Do(context.Background(), client.B().ScriptLoad().Script(unguardedScript).Build()).ToString()
		if err != nil {
			return nil, nil, err
		}
		h, n := tag+":state", tag+":count"
		write := func(i int) error {
			ctx, cancel := c.call()
			defer cancel()
			return client.Do(ctx, client.B().Evalsha().Sha1(sha).Numkeys(2).Key(h, n).
				Arg("2", "4", "HSET", h, "step", strconv.Itoa(i), "3", "INCRBY", n, "1").Build()).Error()
		}
		return write, func() error { return nil }, nil
	}
}

// respireGuarded is respire-go's side: a lock with the keep-alive, then
// Lock.Guard of the two writes.
func respireGuarded(locks *lease.Locks, c calls, ttl time.Duration) func(tag string) (func(int) error, func() error, error) {
	return func(tag string) (func(int) error, func() error, error) {
		lock, err := locks.Acquire(context.Background(), tag+":lock", ttl, lease.WithKeepAlive())
		if err != nil {
			return nil, nil, err
		}
		h, n := tag+":state", tag+":count"
		write := func(i int) error {
			ctx, cancel := c.call()
			defer cancel()
			return lock.Guard(ctx, lease.Command("HSET", h, "step", strconv.Itoa(i)), lease.Command("INCRBY", n, "1"))
		}
		return write, lock.Close, nil
	}
}
