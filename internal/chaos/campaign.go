package chaos

import (
	"flag"
	"fmt"
	"io"
	"math/rand/v2"
	"os"
	"runtime/pprof"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"
)

// scheduleLimit is how long one schedule may take before the campaign
// declares it hung, prints every goroutine and exits (a schedule takes
// about a second).
const scheduleLimit = 2 * time.Minute

// Main runs the campaign of cmd/chaos (and of the goredis module's
// cmd/chaos) with the command line args (without the program name) over
// transports, printing to out, and returns the exit status: 0 when no
// schedule broke a rule (with -expect-violation: as soon as one did), 1
// otherwise, 2 for bad flags. It exits the process itself (status 2) when
// a schedule hangs, after printing every goroutine, and as soon as a
// mutation is caught (status 0). With -transport draw (the default when
// there are several) each schedule's transport is drawn from its seed
// (DrawTransport); a name runs every schedule on that transport.
func Main(args []string, out io.Writer, transports ...Transport) int {
	fs := flag.NewFlagSet("chaos", flag.ContinueOnError)
	fs.SetOutput(out)
	runs := fs.Int("runs", 10000, "schedules to run")
	seed := fs.Uint64("seed", 0, "first seed (default: random, printed); schedule i uses seed+i")
	parallel := fs.Int("parallel", 2, "schedules run at the same time")
	target := fs.String("target", "", "host:port of a real redis-server (default: an in-process sim node per schedule)")
	password := fs.String("password", "", "password of -target (default: $RESPIRE_REAL_REDIS70_PASSWORD)")
	expect := fs.Bool("expect-violation", false, "mutation check: exit 0 at the first violation, 1 if none")
	every := fs.Duration("progress", 5*time.Second, "progress line interval")
	names := make([]string, len(transports))
	for i, t := range transports {
		names[i] = t.Name
	}
	which := fs.String("transport", "draw", "the processes' client: "+strings.Join(names, ", ")+", or draw (one per schedule, from its seed)")
	if err := fs.Parse(args); err != nil {
		return 2
	}
	drawn := transports
	if *which != "draw" {
		i := slices.Index(names, *which)
		if i < 0 {
			fmt.Fprintf(out, "chaos: -transport %q: want one of %s or draw\n", *which, strings.Join(names, ", "))
			return 2
		}
		drawn = transports[i : i+1]
	}
	seedSet := false
	fs.Visit(func(f *flag.Flag) { seedSet = seedSet || f.Name == "seed" })
	if !seedSet {
		*seed = rand.Uint64() & (1<<48 - 1)
	}
	if *password == "" && *target != "" {
		*password = os.Getenv("RESPIRE_REAL_REDIS70_PASSWORD")
	}
	c := &campaign{runs: *runs, first: *seed, parallel: max(1, *parallel), expect: *expect, transports: drawn,
		opt: Options{Target: *target, Password: *password}, out: out}
	return c.run(*every)
}

// campaign is one run of many schedules.
type campaign struct {
	runs     int
	first    uint64
	parallel int
	expect   bool
	opt      Options
	out      io.Writer
	// transports: each schedule's is drawn from its seed among them.
	transports []Transport
	drawn      map[string]int // schedules per transport

	next, done atomic.Int64
	mu         sync.Mutex // guards what follows and the output
	failed     []uint64
	stats      Stats
	notes      []string
}

// run plays the schedules and returns the exit status.
func (c *campaign) run(every time.Duration) int {
	where := "sim nodes (profile from the seed)"
	if c.opt.Target != "" {
		where = "the real server " + c.opt.Target
	}
	var over []string
	for _, t := range c.transports {
		over = append(over, t.Name)
	}
	fmt.Fprintf(c.out, "chaos: %d schedules from seed %d, %d at a time, on %s, over %s\n", c.runs, c.first, c.parallel, where,
		strings.Join(over, " or "))
	start := time.Now()
	stop := make(chan struct{})
	var progress sync.WaitGroup
	progress.Go(func() { c.report(start, every, stop) })
	var wg sync.WaitGroup
	for range c.parallel {
		wg.Go(c.work)
	}
	wg.Wait()
	close(stop)
	progress.Wait()
	c.line(start)
	fmt.Fprintf(c.out, "exercised: %s\n", c.stats)
	if len(c.transports) > 1 {
		var per []string
		for _, t := range c.transports {
			per = append(per, fmt.Sprintf("%s %d", t.Name, c.drawn[t.Name]))
		}
		fmt.Fprintf(c.out, "schedules per transport: %s\n", strings.Join(per, ", "))
	}
	for _, n := range c.notes {
		fmt.Fprintf(c.out, "note: %s\n", n)
	}
	slices.Sort(c.failed)
	switch {
	case c.expect:
		fmt.Fprintf(c.out, "mutation survived %d schedules\n", c.done.Load())
		return 1
	case len(c.failed) > 0:
		fmt.Fprintf(c.out, "FAILED: %d failing seeds: %v\n", len(c.failed), c.failed[:min(len(c.failed), 50)])
		return 1
	}
	fmt.Fprintln(c.out, "ok: no violations")
	return 0
}

// work runs schedules until none is left.
func (c *campaign) work() {
	for i := c.next.Add(1) - 1; i < int64(c.runs); i = c.next.Add(1) - 1 {
		opt := c.opt
		opt.Seed = c.first + uint64(i)
		opt.Transport = DrawTransport(opt.Seed, c.transports)
		r := c.runOne(opt)
		c.done.Add(1)
		c.record(r)
	}
}

// runOne runs one schedule under a watchdog: a schedule that hangs is a
// finding too, reported with every goroutine's stack.
func (c *campaign) runOne(opt Options) Result {
	watchdog := time.AfterFunc(scheduleLimit, func() {
		c.mu.Lock()
		fmt.Fprintf(c.out, "HANG: seed %d did not finish within %v; goroutines:\n", opt.Seed, scheduleLimit)
		_ = pprof.Lookup("goroutine").WriteTo(c.out, 2)
		os.Exit(2)
	})
	defer watchdog.Stop()
	return Run(opt)
}

// record adds a schedule's result and prints it if it failed.
func (c *campaign) record(r Result) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.stats.Add(r.Stats)
	if c.drawn == nil {
		c.drawn = map[string]int{}
	}
	c.drawn[r.Transport]++
	for _, n := range r.Notes {
		if !slices.Contains(c.notes, n) {
			c.notes = append(c.notes, n)
		}
	}
	if !r.Failed() {
		return
	}
	c.failed = append(c.failed, r.Seed)
	profile := string(r.Profile)
	if r.Target != "" {
		profile = "real " + r.Target
	}
	what := "VIOLATION"
	if r.Broken() {
		what = "SCHEDULE ERROR"
	}
	fmt.Fprintf(c.out, "%s seed %d (%s, %s, %v):\n", what, r.Seed, r.Transport, profile, r.Elapsed.Round(time.Millisecond))
	for _, v := range r.Violations {
		fmt.Fprintf(c.out, "  %s\n", v)
	}
	if len(r.Timeline) > 0 {
		fmt.Fprintf(c.out, "  faults: %s\n", strings.Join(r.Timeline, "; "))
	}
	fmt.Fprintf(c.out, "  replay: %s\n", r.Replay())
	if c.expect && !r.Broken() {
		fmt.Fprintf(c.out, "mutation caught after %d schedules (seed %d)\n", c.done.Load(), r.Seed)
		os.Exit(0)
	}
}

// report prints a progress line every interval until stop is closed.
func (c *campaign) report(start time.Time, every time.Duration, stop <-chan struct{}) {
	tick := time.NewTicker(every)
	defer tick.Stop()
	for {
		select {
		case <-stop:
			return
		case <-tick.C:
			c.mu.Lock()
			c.line(start)
			c.mu.Unlock()
		}
	}
}

// line prints the progress line; c.mu is held or no other goroutine runs.
func (c *campaign) line(start time.Time) {
	elapsed := time.Since(start)
	done := c.done.Load()
	fmt.Fprintf(c.out, "%8s  %d/%d schedules  %.2f schedules/s  %d violations\n",
		elapsed.Round(time.Second), done, c.runs, float64(done)/elapsed.Seconds(), len(c.failed))
}
