package main

import (
	"cmp"
	"context"
	"errors"
	"flag"
	"fmt"
	"math/rand/v2"
	"slices"
	"strconv"
	"sync"
	"sync/atomic"
	"time"
)

// The waiting scenarios compare how implementations learn that a key
// changed: respire-go with invalidation pushes (its default) against
// respire-go-poll (lease.WithoutPush: polling every 50 ms, loss seen at the
// next renewal) and the peers that can wait.

// Targets the report states next to the figures (issue 14).
const (
	handoffP50Target  = time.Millisecond      // hand-off p50
	lossP99Target     = 10 * time.Millisecond // loss detection p99
	handoffSetsTarget = 1.5                   // SET NX per hand-off, 16 waiters of one process (issue 31)
)

// The hand-off latency targets of issue 31: the unfair push hand-off with
// 16 waiters of one process, and the fair one (lease.WithFairWait) with 64.
const (
	unfairP50Target = 120 * time.Microsecond
	unfairP99Target = 300 * time.Microsecond
	fairP50Target   = 150 * time.Microsecond
	fairP99Target   = 500 * time.Microsecond
)

// waitingConfig is the waiting scenarios' flags.
type waitingConfig struct {
	handoffs    int           // hand-offs per repetition
	handoffHold time.Duration // how long each holder holds
	lossSamples int           // locks taken away per repetition
	lossLease   time.Duration // their lease
	lossSpread  time.Duration // deletes spread over this long after acquisition (0: half the lease)
	heldCost    int           // locks held for the commands-per-lock count
	costWindow  time.Duration // its counting window (0: -ttl)
	watched     int           // waiters for the watch-cost scenario
	watchSettle time.Duration // before its measurement
	watchWindow time.Duration // its counting window
}

func waitingFlags(fs *flag.FlagSet, w *waitingConfig) {
	fs.IntVar(&w.handoffs, "handoffs", 300, "hand-offs per repetition (handoff: 16 waiters on one key)")
	fs.DurationVar(&w.handoffHold, "handoff-hold", time.Millisecond, "how long each holder holds the lock (handoff)")
	fs.IntVar(&w.lossSamples, "loss-samples", 200, "locks taken away by a third party per repetition (loss)")
	fs.DurationVar(&w.lossLease, "loss-lease", 30*time.Second, "lease of the locks taken away (loss)")
	fs.DurationVar(&w.lossSpread, "loss-spread", 0, "the deletes are spread uniformly over this long after the acquisitions "+
		"(loss; default half of -loss-lease: every phase of the renewal cycle)")
	fs.IntVar(&w.heldCost, "held-cost", 1000, "locks held with the keep-alive while server commands are counted (held-cost)")
	fs.DurationVar(&w.costWindow, "cost-window", 0, "how long held-cost counts (default -ttl: two renewal rounds)")
	fs.IntVar(&w.watched, "watched", 10000, "waiters on distinct held keys (watch)")
	fs.DurationVar(&w.watchSettle, "watch-settle", 2*time.Second, "time for the waiters to settle before watch measures")
	fs.DurationVar(&w.watchWindow, "watch-window", 2*time.Second, "how long watch counts commands and CPU")
}

// check validates the flags and fills the defaults.
func (w *waitingConfig) check(ttl time.Duration) error {
	if w.handoffs < 10 || w.lossSamples < 1 || w.lossLease < time.Second || w.heldCost < 1 || w.watched < 1 {
		return errors.New("need -handoffs >= 10, -loss-samples >= 1, -loss-lease >= 1s, -held-cost >= 1, -watched >= 1")
	}
	if w.lossSpread <= 0 {
		w.lossSpread = w.lossLease / 2
	}
	if w.costWindow <= 0 {
		w.costWindow = ttl
	}
	return nil
}

// waitingScenarios are the waiting tables, in report order.
func waitingScenarios(cfg config) []*scenario {
	w := cfg.waiting
	canWait := func(im implInfo) bool { return im.wait }
	canWatch := func(im implInfo) bool { return im.watch }
	pushOrPoll := func(im implInfo) bool { return im.watch && im.wait }
	return []*scenario{{
		id: "handoff-16", family: "handoff", only: canWait, skip: "cannot wait", base: "respire-go-poll", firstModeOnly: true,
		title: "hand-off: 16 goroutines waiting on one key",
		about: fmt.Sprintf("16 goroutines acquire one key with a waiting acquisition, hold it %v, release it, and again, "+
			"until %d hand-offs. Latency: from a holder's release reply to the next holder's acquisition reply "+
			"(the clocks of two goroutines of one process). Commands: the server's INFO commandstats calls over the run "+
			"(commands run by scripts included; INFO itself excluded) per hand-off; SET: the SET calls among them "+
			"(acquisition attempts: a rueidislock lock is 3 keys).",
			w.handoffHold, w.handoffs),
		target: &target{impl: "respire-go", metric: "p50", max: micros(handoffP50Target), unit: "µs",
			what: fmt.Sprintf("respire-go hand-off p50 ≤ %v", handoffP50Target)},
		more: []*target{{impl: "respire-go", metric: "sets", max: handoffSetsTarget, unit: "SET",
			what: fmt.Sprintf("respire-go SET NX per hand-off ≤ %v (one waiter of the process woken per change)", handoffSetsTarget)},
			latencyTarget("respire-go", "p50", "unfair", unfairP50Target),
			latencyTarget("respire-go", "p99", "unfair", unfairP99Target)},
		metrics: []metric{{key: "p50", header: "p50 µs", lowerBetter: true, ratio: true},
			{key: "p99", header: "p99 µs", lowerBetter: true, ratio: true},
			{key: "commands", header: "commands/hand-off", lowerBetter: true, ratio: true},
			{key: "sets", header: "SET/hand-off", lowerBetter: true},
			{key: "rate", header: "hand-offs/s"},
			{key: "overlaps", header: "overlaps", total: true}, {key: "errors", header: "errors", total: true}},
		run: runHandoff(16),
	}, {
		id: "handoff-64", family: "handoff", only: canWait, skip: "cannot wait", base: "respire-go-poll", firstModeOnly: true,
		title: "hand-off: 64 goroutines waiting on one key (fair and unfair)",
		about: fmt.Sprintf("as the 16-goroutine hand-off table with 64 waiters: respire-go-fair waits with "+
			"lease.WithFairWait (ticket order), respire-go with the unfair push wake-up, raw-rueidis and "+
			"respire-go-poll poll; hold %v, %d hand-offs.", w.handoffHold, w.handoffs),
		target: latencyTarget("respire-go-fair", "p50", "fair", fairP50Target),
		more:   []*target{latencyTarget("respire-go-fair", "p99", "fair", fairP99Target)},
		metrics: []metric{{key: "p50", header: "p50 µs", lowerBetter: true, ratio: true},
			{key: "p99", header: "p99 µs", lowerBetter: true, ratio: true},
			{key: "commands", header: "commands/hand-off", lowerBetter: true, ratio: true},
			{key: "sets", header: "SET/hand-off", lowerBetter: true},
			{key: "rate", header: "hand-offs/s"},
			{key: "overlaps", header: "overlaps", total: true}, {key: "errors", header: "errors", total: true}},
		run: runHandoff(64),
	}, {
		id: "loss", family: "loss", only: canWatch, skip: "no keep-alive", base: "respire-go-poll", firstModeOnly: true,
		title: fmt.Sprintf("loss detection: a third party deletes a held key (%v lease, keep-alive)", w.lossLease),
		about: fmt.Sprintf("%d locks taken with the keep-alive and a %v lease, at once; each key is deleted (DEL, on another "+
			"connection; rueidislock: its 3 keys) at a uniform random time 100 ms + [0, %v) after its acquisition, "+
			"so every phase of the renewal cycle is sampled. Latency: from sending the DEL until the lock's context is done "+
			"(respire-go: Lock.Context; rueidislock: the lock's ctx); percentiles by nearest rank; missed: not within the lease.",
			w.lossSamples, w.lossLease, w.lossSpread),
		target: &target{impl: "respire-go", metric: "p99", max: float64(lossP99Target.Microseconds()) / 1e3, unit: "ms",
			what: fmt.Sprintf("respire-go loss-detection p99 ≤ %v", lossP99Target)},
		metrics: []metric{{key: "p50", header: "p50 ms", lowerBetter: true, ratio: true},
			{key: "p99", header: "p99 ms", lowerBetter: true, ratio: true},
			{key: "missed", header: "missed", total: true}, {key: "errors", header: "errors", total: true}},
		run: runLoss,
	}, {
		id: "held-cost-" + strconv.Itoa(w.heldCost), family: "held-cost", only: canWatch, skip: "no keep-alive",
		base: "respire-go-poll", firstModeOnly: true,
		title: fmt.Sprintf("held-lock cost: %s locks held with the keep-alive", group(float64(w.heldCost))),
		about: fmt.Sprintf("%d locks (lease %v) held; after a second, the server's commands (INFO commandstats, scripts' "+
			"included) are counted for %v, per held lock and second. A renewal per half lease alone is %.2f.",
			w.heldCost, cfg.ttl, w.costWindow, 2/cfg.ttl.Seconds()),
		metrics: []metric{{key: "rate", header: "commands/lock/s", lowerBetter: true, ratio: true},
			{key: "lost", header: "lost while held", total: true}, {key: "gaveup", header: "given up", total: true},
			{key: "errors", header: "errors", total: true}},
		run: runHeldCost,
	}, {
		id: "watch-" + strconv.Itoa(w.watched), family: "watch", only: pushOrPoll, skip: "no keep-alive or no waiting",
		base: "respire-go-poll", firstModeOnly: true,
		title: fmt.Sprintf("waiting cost: %s goroutines waiting, each on its own held key", group(float64(w.watched))),
		about: fmt.Sprintf("%d keys held by a plain SET PX; a goroutine per key waits for it; after %v, measured over %v: "+
			"client heap + stacks per waiter above an idle goroutine (after GC), server used_memory per waiter, server "+
			"commands per waiter and second, client CPU (getrusage) per waiter and second.",
			w.watched, w.watchSettle, w.watchWindow),
		metrics: []metric{{key: "kib", header: "KiB/waiter", lowerBetter: true, ratio: true},
			{key: "server", header: "server B/waiter", lowerBetter: true},
			{key: "commands", header: "commands/waiter/s", lowerBetter: true, ratio: true},
			{key: "cpu", header: "client CPU µs/waiter/s", lowerBetter: true, ratio: true},
			{key: "errors", header: "errors", total: true}},
		run: runWatchCost,
	}}
}

// latencyTarget is a hand-off latency target of issue 31 on impl's metric
// (p50 or p99, in µs).
func latencyTarget(impl, metric, kind string, max time.Duration) *target {
	return &target{impl: impl, metric: metric, max: micros(max), unit: "µs",
		what: fmt.Sprintf("%s %s hand-off %s ≤ %v", impl, kind, metric, max)}
}

// handoffHold is one holder's hold in the hand-off scenario.
type handoffHold struct {
	span
	released time.Duration // when its release returned
}

// runHandoff has waiters goroutines wait for one key until cfg's
// hand-offs. A holder that released waits for the next acquisition before
// it waits for the key again, so every hand-off goes to a goroutine that
// was waiting (a releaser retrying at once would find the key free and
// take it back).
func runHandoff(waiters int) func(e *env, im *impl, rep int) (map[string]float64, error) {
	return func(e *env, im *impl, rep int) (map[string]float64, error) { return handoffRun(e, im, rep, waiters) }
}

func handoffRun(e *env, im *impl, rep, waiters int) (map[string]float64, error) {
	return handoffOn(e, im, fmt.Sprintf("%s%s:handoff%d:%d", e.prefix, im.name, waiters, rep), waiters, nil)
}

// handoffOn runs the hand-off on key; ended, when set, is set before the
// run ends its waiters' acquisitions (the fair-order watcher's cue).
func handoffOn(e *env, im *impl, key string, waiters int, ended *atomic.Bool) (map[string]float64, error) {
	target := e.cfg.waiting.handoffs + 1
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	var mu sync.Mutex
	holds := make([]handoffHold, 0, target+waiters)
	next := make(chan struct{}) // closed by the next acquisition
	var errs atomic.Int64
	fail := func(err error) {
		if ctx.Err() == nil {
			errs.Add(1)
			e.errs.note(im.name, "handoff", err)
		}
	}
	stats0 := e.srv.commandStats()
	base := time.Now()
	var wg sync.WaitGroup
	for range waiters {
		wg.Go(func() {
			for ctx.Err() == nil {
				tried := time.Since(base)
				release, err := im.wait(ctx, key)
				if err != nil {
					fail(err)
					continue
				}
				h := handoffHold{span: span{tried: tried, start: time.Since(base)}}
				mu.Lock()
				close(next)
				next = make(chan struct{})
				mine := next
				mu.Unlock()
				time.Sleep(e.cfg.waiting.handoffHold) // the critical section
				h.end = time.Since(base)
				if err := release(); err != nil {
					fail(err)
				}
				h.released = time.Since(base)
				mu.Lock()
				if holds = append(holds, h); len(holds) >= target {
					if ended != nil {
						ended.Store(true)
					}
					cancel()
				}
				mu.Unlock()
				select {
				case <-mine:
				case <-ctx.Done():
				}
			}
		})
	}
	wg.Wait()
	elapsed := time.Since(base)
	stats1 := e.srv.commandStats()
	return handoffValues(holds, stats0, stats1, elapsed, e.calls.lease(e.cfg.ttl), errs.Load()), nil
}

// handoffValues turns the holds (in any order) into the table's values.
func handoffValues(holds []handoffHold, stats0, stats1 commandStats, elapsed, lease time.Duration,
	errs int64) map[string]float64 {
	slices.SortFunc(holds, func(a, b handoffHold) int { return cmp.Compare(a.start, b.start) })
	lat := make([]time.Duration, 0, len(holds))
	spans := make([]span, 0, len(holds))
	for i, h := range holds {
		spans = append(spans, h.span)
		if i > 0 {
			lat = append(lat, h.start-holds[i-1].released)
		}
	}
	overlaps, _ := checkOverlaps(spans, lease)
	n := float64(max(1, len(lat)))
	slices.Sort(lat)
	return map[string]float64{
		"p50": micros(percentile(lat, 50)), "p99": micros(percentile(lat, 99)),
		"commands": float64(stats1.total()-stats0.total()) / n,
		"sets":     float64(stats1["set"]-stats0["set"]) / n,
		"rate":     n / elapsed.Seconds(), "overlaps": float64(overlaps), "errors": float64(errs),
		"handoffs": float64(len(lat)),
	}
}

// percentile is the p-th percentile of sorted by nearest rank: the
// smallest value with at least p % of the samples at or below it (0 when
// empty). With fewer than 100 samples the 99th is the largest.
func percentile(sorted []time.Duration, p int) time.Duration {
	if len(sorted) == 0 {
		return 0
	}
	rank := (len(sorted)*p + 99) / 100 // ⌈n·p/100⌉, from 1
	return sorted[min(len(sorted), max(rank, 1))-1]
}

// runLoss takes locks with the keep-alive, has a third party delete each,
// and times how long each holder takes to notice.
func runLoss(e *env, im *impl, rep int) (map[string]float64, error) {
	w := e.cfg.waiting
	lat := make([]time.Duration, w.lossSamples)
	var missed, errs atomic.Int64
	var wg sync.WaitGroup
	for i := range w.lossSamples {
		key := fmt.Sprintf("%s%s:loss:%d:%d", e.prefix, im.name, rep, i)
		wg.Go(func() {
			d, err := lossOnce(e, im, key)
			switch {
			case err != nil:
				errs.Add(1)
				e.errs.note(im.name, "loss", err)
			case d < 0:
				missed.Add(1)
			default:
				lat[i] = d
			}
		})
	}
	wg.Wait()
	lat = slices.DeleteFunc(lat, func(d time.Duration) bool { return d <= 0 })
	slices.Sort(lat)
	ms := func(d time.Duration) float64 { return float64(d.Microseconds()) / 1e3 }
	return map[string]float64{"p50": ms(percentile(lat, 50)), "p99": ms(percentile(lat, 99)),
		"missed": float64(missed.Load()), "errors": float64(errs.Load())}, nil
}

// lossOnce takes key, deletes it from another connection after a random
// delay and returns how long until the holder noticed; -1 when it did not
// within the lease.
func lossOnce(e *env, im *impl, key string) (time.Duration, error) {
	w := e.cfg.waiting
	lock, err := im.watch(key, w.lossLease)
	if err != nil {
		return 0, fmt.Errorf("acquire: %w", err)
	}
	defer lock.release() //nolint:errcheck // the lock is gone; release only stops what is left
	// The moment of the loss, drawn at random; nothing is asserted about it.
	time.Sleep(100*time.Millisecond + rand.N(w.lossSpread))
	select {
	case <-lock.done():
		return 0, errors.New("lock ended before it was deleted")
	default:
	}
	st := e.srv.stats
	start := time.Now()
	if err := st.Do(context.Background(), st.B().Del().Key(im.serverKeys(key)...).Build()).Error(); err != nil {
		return 0, fmt.Errorf("DEL: %w", err)
	}
	t := time.NewTimer(w.lossLease)
	defer t.Stop()
	select {
	case <-lock.done():
		return time.Since(start), nil
	case <-t.C:
		return -1, nil
	}
}
