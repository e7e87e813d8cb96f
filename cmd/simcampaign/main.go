// Command simcampaign runs a long deterministic-simulation campaign of the
// lock (make sim): many seeded schedules of sim/dst in parallel over every
// core, with a progress line (schedules/s, violations so far). Every
// violation is printed at once with its seed and the one command that
// replays it; the exit status is 1 when any schedule broke an invariant.
// With -primitives it runs only the seeds whose schedules have the lease
// semaphore and read/write lock workload (dst.Options.Primitives, one seed
// in two), skipping the others, until -runs of them ran; with -guarded, the
// seeds whose holders make guarded writes (dst.Options.Guarded), likewise.
//
//	go run ./cmd/simcampaign -runs 1000000
package main

import (
	"flag"
	"fmt"
	"io"
	"os"
	"runtime"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/respire-go/respire/sim/dst"
)

func main() {
	runs := flag.Int("runs", 1_000_000, "schedules to run")
	first := flag.Uint64("first", 0, "first seed (0: derived from the clock, printed)")
	workers := flag.Int("workers", runtime.GOMAXPROCS(0), "parallel workers")
	every := flag.Duration("progress", 2*time.Second, "progress line interval")
	transcript := flag.Bool("transcript", false, "print the transcript of the first failing seed")
	mutation := flag.Int("mutation", 0, "run a deliberately broken variant (dst.Mutation; 0 = production)")
	primitives := flag.Bool("primitives", false, "run only the seeds whose schedules have the semaphore and read/write lock")
	guarded := flag.Bool("guarded", false, "run only the seeds whose schedules make guarded writes")
	flag.Parse()
	if *first == 0 {
		*first = uint64(time.Now().UnixNano()) & (1<<48 - 1)
	}
	c := campaign{runs: *runs, first: *first, workers: max(1, *workers), mutation: dst.Mutation(*mutation),
		primitives: *primitives, guarded: *guarded, out: os.Stdout}
	failed := c.run(*every)
	if len(failed) > 0 && *transcript {
		opt := dst.Swarm(failed[0])
		opt.Mutation, opt.Transcript = c.mutation, true
		fmt.Fprint(os.Stdout, dst.Run(opt).Report())
	}
	if len(failed) > 0 {
		os.Exit(1)
	}
}

// campaign is one run of many schedules.
type campaign struct {
	runs       int
	first      uint64
	workers    int
	mutation   dst.Mutation
	primitives bool // only the seeds with the primitives workload
	guarded    bool // only the seeds with guarded writes
	out        io.Writer

	next, done, steps atomic.Int64
	claimed, lastSeed atomic.Int64 // with primitives: schedules claimed, the highest seed offset run
	mu                sync.Mutex
	failed            []uint64
	stats             dst.Stats
}

// run plays the schedules and returns the failing seeds in increasing order.
func (c *campaign) run(every time.Duration) []uint64 {
	fmt.Fprintf(c.out, "simcampaign: %d schedules from seed %d on %d workers (mutation %d, only primitives %v, only guarded %v)\n",
		c.runs, c.first, c.workers, c.mutation, c.primitives, c.guarded)
	start := time.Now()
	stop := make(chan struct{})
	var progress sync.WaitGroup
	progress.Go(func() { c.report(start, every, stop) })
	var wg sync.WaitGroup
	for range c.workers {
		wg.Go(c.work)
	}
	wg.Wait()
	close(stop)
	progress.Wait()
	c.line(start)
	if c.selective() {
		fmt.Fprintf(c.out, "seeds %d-%d (those with the selected workload)\n", c.first, c.first+uint64(c.lastSeed.Load()))
	}
	fmt.Fprintf(c.out, "exercised: %+v\n", c.stats)
	slices.Sort(c.failed)
	if len(c.failed) > 0 {
		fmt.Fprintf(c.out, "failing seeds: %v\n", c.failed[:min(len(c.failed), 50)])
	}
	return c.failed
}

func (c *campaign) work() {
	for {
		i := c.next.Add(1) - 1
		if !c.selective() && i >= int64(c.runs) {
			return
		}
		opt := dst.Swarm(c.first + uint64(i))
		if c.primitives && !opt.Primitives || c.guarded && !opt.Guarded {
			continue
		}
		if c.selective() {
			if c.claimed.Add(1) > int64(c.runs) {
				return
			}
			raise(&c.lastSeed, i)
		}
		opt.Mutation = c.mutation
		r := dst.Run(opt)
		c.steps.Add(int64(r.Steps))
		c.done.Add(1)
		c.mu.Lock()
		c.stats.Add(r.Stats)
		if r.Failed() {
			c.failed = append(c.failed, r.Seed)
			fmt.Fprintf(c.out, "VIOLATION seed %d: %s\n  replay: %s\n", r.Seed, r.Violations[0], r.Replay())
		}
		c.mu.Unlock()
	}
}

// selective reports whether only some seeds run (-primitives, -guarded).
func (c *campaign) selective() bool { return c.primitives || c.guarded }

// raise makes v at least x.
func raise(v *atomic.Int64, x int64) {
	for last := v.Load(); x > last; last = v.Load() {
		if v.CompareAndSwap(last, x) {
			return
		}
	}
}

func (c *campaign) report(start time.Time, every time.Duration, stop <-chan struct{}) {
	tick := time.NewTicker(every)
	defer tick.Stop()
	for {
		select {
		case <-stop:
			return
		case <-tick.C:
			c.line(start)
		}
	}
}

// line prints the progress line.
func (c *campaign) line(start time.Time) {
	elapsed := time.Since(start)
	done := c.done.Load()
	c.mu.Lock()
	violations := len(c.failed)
	c.mu.Unlock()
	fmt.Fprintf(c.out, "%8s  %d/%d schedules  %.0f schedules/s  %d steps  %d violations\n",
		elapsed.Round(time.Second), done, c.runs, float64(done)/elapsed.Seconds(), c.steps.Load(), violations)
}
