package main

import (
	"cmp"
	"fmt"
	"runtime"
	"slices"
	"strconv"
	"sync"
	"sync/atomic"
	"time"
)

// env is what a scenario run needs besides the implementation.
type env struct {
	cfg    config
	srv    *server
	calls  calls
	prefix string // key prefix of this run and context mode
	errs   *firstErrors
}

// metric is one column of a scenario's table.
type metric struct {
	key         string
	header      string
	lowerBetter bool
	ratio       bool // add "× raw-rueidis" and "× best peer" columns
	total       bool // a count: show the sum over repetitions, not median (min–max)
}

// scenario is one table of the report.
type scenario struct {
	id     string // key of the results, e.g. "keepalive-10000"
	family string // what -scenarios selects
	title  string
	about  string
	// only, when set, says which implementations run it (default: all but
	// the respire-go variants); skip is what the others' rows say.
	only          func(im implInfo) bool
	skip          string
	base          string    // the ratio columns' reference; default raw-rueidis
	firstModeOnly bool      // run under the first -ctx mode only
	target        *target   // printed under the table when set
	more          []*target // further targets, printed after target
	metrics       []metric
	run           func(e *env, im *impl, rep int) (map[string]float64, error)
	// together, when set instead of run, runs every implementation of the
	// repetition at once (in the order given) and returns each one's
	// values by name.
	together func(e *env, ims []*impl, rep int) (map[string]map[string]float64, error)
}

// target is a figure an implementation must reach: metric's median at most
// max (in the metric's unit), or, with ref, the median of its metric
// divided by ref's in each repetition at most max; with worst, every
// repetition's at most max.
type target struct {
	impl, metric, what, unit string
	ref, refMetric           string // refMetric: ref's metric to divide by (default metric)
	max                      float64
	worst                    bool
}

// verdict is the line the report prints for the target.
func (t *target) verdict(vals []float64) string {
	if len(vals) == 0 {
		return fmt.Sprintf("**Target** %s: not measured (%s did not run).", t.what, t.impl)
	}
	met, judged := "met", median(vals)
	if t.worst {
		judged = slices.Max(vals)
	}
	if judged > t.max {
		met = "**missed**"
	}
	return fmt.Sprintf("**Target** %s: %s (median %s %s, worst repetition %s %s).", t.what, met, group(median(vals)), t.unit,
		group(slices.Max(vals)), t.unit)
}

// applies tells whether im runs the scenario.
func (sc *scenario) applies(im implInfo) bool {
	if sc.only == nil {
		return !im.variant
	}
	return sc.only(im)
}

// baseImpl is the implementation the ratio columns divide by.
func (sc *scenario) baseImpl() string {
	if sc.base == "" {
		return "raw-rueidis"
	}
	return sc.base
}

// scenarios lists what cfg selects, in report order.
func scenarios(cfg config) []*scenario {
	all := []*scenario{{
		id: "uncontended", family: "uncontended", title: "uncontended: 1 goroutine, acquire+release pairs",
		about: fmt.Sprintf("%d pairs per repetition on one key; latency of each pair; allocations and bytes from runtime.MemStats "+
			"over the whole loop (the whole process: client goroutines included) divided by the pairs.", cfg.pairs),
		metrics: []metric{{key: "p50", header: "p50 µs", lowerBetter: true, ratio: true},
			{key: "p99", header: "p99 µs", lowerBetter: true, ratio: true},
			{key: "allocs", header: "allocs/pair", lowerBetter: true, ratio: true},
			{key: "bytes", header: "B/pair", lowerBetter: true},
			{key: "refused", header: "free key refused", total: true}, {key: "errors", header: "errors", total: true}},
		run: runUncontended,
	}, {
		id: "parallel-64", family: "parallel-64", title: "parallel-64: 64 goroutines, distinct keys",
		about: fmt.Sprintf("each goroutine runs acquire+release pairs on its own key, for %v per implementation and repetition, "+
			"in slices of %v: the implementations take turns slice by slice (the order rotated each slice), so that load from "+
			"elsewhere on the machine falls on all of them alike. Client CPU is this process's "+
			"user + system time (every implementation's client goroutines included) and server CPU is INFO cpu's, each over "+
			"the run divided by its pairs: client and server share the machine's cores, so the two add up to what a pair costs "+
			"the machine, which the load from elsewhere moves less than the rate.", cfg.duration, parallelSlice),
		metrics: []metric{{key: "rate", header: "pairs/s", ratio: true},
			{key: "cpu", header: "client CPU µs/pair", lowerBetter: true, ratio: true},
			{key: "srvcpu", header: "server CPU µs/pair", lowerBetter: true, ratio: true},
			{key: "refused", header: "free key refused", total: true}, {key: "errors", header: "errors", total: true}},
		together: runParallel,
	}, {
		id: "contended-16", family: "contended-16", title: "contended-16: 16 goroutines, one key, try once",
		about: fmt.Sprintf("each goroutine tries the key once, again and again, for %v; a holder records its hold "+
			"and releases at once. Overlaps are holds of two owners that intersect in time (the run fails on any).", cfg.duration),
		metrics: []metric{{key: "rate", header: "acquisitions/s", ratio: true}, {key: "attempts", header: "tries/s"},
			{key: "overlaps", header: "overlaps", total: true}, {key: "expired", header: "holds past the lease", total: true},
			{key: "errors", header: "errors", total: true}},
		run: runContended,
	}}
	for _, n := range cfg.held {
		all = append(all, &scenario{
			id: "keepalive-" + strconv.Itoa(n), family: "keepalive", skip: "no keep-alive",
			only:  func(im implInfo) bool { return im.keepAlive && !im.variant },
			title: fmt.Sprintf("keep-alive memory: %s held locks", group(float64(n))),
			about: fmt.Sprintf("acquire %d locks with the keep-alive (64 goroutines; a free key refused %d times, "+
				"failed with an error or not reached within -acquire-budget %v is given up), "+
				"hold them %v (renewals are due every half lease), then measure heap + goroutine stacks after GC against before, "+
				"per lock acquired; release all. A row that lost locks while holding them measures a keep-alive that broke down, "+
				"not a steady state. Server memory is INFO used_memory, which also moves with client buffers.",
				n, keepAliveTries, cfg.acquireBudget, cfg.hold),
			metrics: []metric{{key: "kib", header: "KiB/lock acquired", lowerBetter: true, ratio: true},
				{key: "held", header: "still held at the end"},
				{key: "goroutines", header: "goroutines while held", lowerBetter: true},
				{key: "server", header: "server B/lock acquired", lowerBetter: true},
				{key: "rate", header: "acquired/s"},
				{key: "lost", header: "lost while held", total: true}, {key: "refused", header: "free key refused", total: true},
				{key: "gaveup", header: "given up", total: true}, {key: "errors", header: "errors", total: true}},
			run: keepAliveRun(n),
		})
	}
	all = append(all, waitingScenarios(cfg)...)
	all = append(all, deadWaiterScenario(cfg), fairOrderScenario(cfg))
	all = append(all, semaphoreScenarios(cfg)...)
	all = append(all, guardedScenarios(cfg)...)
	var out []*scenario
	for _, sc := range all {
		if len(cfg.scenarios) == 0 || cfg.scenarios[sc.family] || cfg.scenarios[sc.id] {
			out = append(out, sc)
		}
	}
	return out
}

// onePair is try + release; acquired is false when the key was refused.
func onePair(im *impl, key string) (acquired bool, err error) {
	release, err := im.try(key)
	if err != nil || release == nil {
		return false, err
	}
	return true, release()
}

// runUncontended times pairs from one goroutine on one key.
func runUncontended(e *env, im *impl, rep int) (map[string]float64, error) {
	key := e.prefix + im.name + ":serial"
	n := e.cfg.pairs
	lat := make([]time.Duration, n)
	var refused, errs float64
	runtime.GC()
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	for i := range n {
		start := time.Now()
		ok, err := onePair(im, key)
		lat[i] = time.Since(start)
		switch {
		case err != nil:
			errs++
			e.errs.note(im.name, "uncontended", err)
		case !ok:
			refused++
		}
	}
	runtime.ReadMemStats(&after)
	slices.Sort(lat)
	return map[string]float64{
		"p50":     micros(lat[n/2]),
		"p99":     micros(lat[n*99/100]),
		"allocs":  float64(after.Mallocs-before.Mallocs) / float64(n),
		"bytes":   float64(after.TotalAlloc-before.TotalAlloc) / float64(n),
		"refused": refused, "errors": errs,
	}, nil
}

func micros(d time.Duration) float64 { return float64(d.Nanoseconds()) / 1e3 }

// span is one holder's hold, in monotonic time since the run's start:
// tried before the acquisition was sent, start when it returned the lock,
// end before the release was called.
type span struct{ tried, start, end time.Duration }

// runContended has 16 goroutines try one key once each, repeatedly; every
// successful holder records its span, and the spans are checked for
// overlaps afterwards.
func runContended(e *env, im *impl, rep int) (map[string]float64, error) {
	const workers = 16
	key := e.prefix + im.name + ":c16:" + strconv.Itoa(rep)
	spans := make([][]span, workers)
	var attempts, errs atomic.Int64
	var wg sync.WaitGroup
	base := time.Now()
	for w := range workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for time.Since(base) < e.cfg.duration {
				tried := time.Since(base)
				release, err := im.try(key)
				attempts.Add(1)
				if err != nil || release == nil {
					if err != nil {
						errs.Add(1)
						e.errs.note(im.name, "contended-16", err)
					}
					continue
				}
				start := time.Since(base)
				runtime.Gosched() // the critical section: let the other contenders run while this one holds
				end := time.Since(base)
				if err := release(); err != nil {
					errs.Add(1)
					e.errs.note(im.name, "contended-16", err)
				}
				spans[w] = append(spans[w], span{tried, start, end})
			}
		}()
	}
	wg.Wait()
	elapsed := time.Since(base).Seconds()
	all := slices.Concat(spans...)
	overlaps, expired := checkOverlaps(all, e.calls.lease(e.cfg.ttl))
	return map[string]float64{"rate": float64(len(all)) / elapsed, "attempts": float64(attempts.Load()) / elapsed,
		"overlaps": float64(overlaps), "expired": float64(expired), "errors": float64(errs.Load())}, nil
}

// checkOverlaps counts the spans that start while another holder's span has
// not ended. There is no timing tolerance: every time comes from one
// monotonic clock in one process, and a correct lock orders holders through
// the server (the earlier holder reads its end before sending its release;
// the later one reads its start after the server answered its acquisition,
// which the server executed after that release), so end <= start always.
// The one exemption: an earlier holder whose span ended lease or more after
// it tried may have outlived its lease on the server, where a second owner
// is legal; such spans are counted as expired, not as overlaps.
func checkOverlaps(spans []span, lease time.Duration) (overlaps, expired int) {
	slices.SortFunc(spans, func(a, b span) int { return cmp.Compare(a.start, b.start) })
	var active []span // earlier spans that have not ended at the current start
	for _, s := range spans {
		kept := active[:0]
		for _, a := range active {
			if a.end > s.start {
				kept = append(kept, a)
			}
		}
		active = kept
		clash, excused := false, false
		for _, a := range active {
			if a.end-a.tried >= lease {
				excused = true
			} else {
				clash = true
			}
		}
		switch {
		case clash:
			overlaps++
		case excused:
			expired++
		}
		active = append(active, s)
	}
	return overlaps, expired
}

// firstErrors keeps the first error of each implementation and scenario,
// for the report's notes.
type firstErrors struct {
	mu    sync.Mutex
	first map[string]string
}

func (f *firstErrors) note(implName, scenario string, err error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.first == nil {
		f.first = make(map[string]string)
	}
	k := implName + " in " + scenario
	if _, ok := f.first[k]; !ok {
		f.first[k] = err.Error()
	}
}
